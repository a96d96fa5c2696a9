// Starting stockade as root or as 65534, feeding it, and collecting what it
// printed and how it ended.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "harness.h"
#include "harness_internal.h"

namespace stockade::itest {

using Clock = std::chrono::steady_clock;
using detail::cStrings;
using detail::dropToInChild;
using detail::errnoText;
using detail::writeAllInChild;

namespace {

// The last few KiB, enough to see what went wrong.
std::string tail(const std::string& text) {
    constexpr size_t kKeep = 6000;
    std::string out = text.size() <= kKeep ? text : "[...]" + text.substr(text.size() - kKeep);
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out;
}

// Both ends close-on-exec; the child dup2()s the ones it hands on.
std::pair<UniqueFd, UniqueFd> makePipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) < 0) throw std::runtime_error("pipe2: " + errnoText(errno));
    return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace

// --- running stockade ------------------------------------------------------------

std::string Completed::describe() const {
    std::ostringstream out;
    if (timedOut) out << "stockade TIMED OUT and was killed; ";
    if (signal != 0)
        out << "stockade died of signal " << signal;
    else
        out << "exit " << exitCode;
    out << "\n--- stdout ---\n" << tail(this->out) << "--- stderr ---\n" << tail(err);
    return out.str();
}

StockadeProcess::StockadeProcess(const Launch& launch) {
    std::vector<std::string> argv{stockadeBinary()};
    if (!launch.wrapper.empty()) {
        argv = {launch.wrapper};
        argv.insert(argv.end(), launch.wrapperArgs.begin(), launch.wrapperArgs.end());
        argv.insert(argv.end(), {"--", stockadeBinary()});
    }
    argv.insert(argv.end(), launch.args.begin(), launch.args.end());
    std::vector<std::string> envp = launch.environment;
    std::vector<char*> argvC = cStrings(argv);
    std::vector<char*> envpC = cStrings(envp);
    const std::string leakedFile =
        launch.leakedFile.empty() ? std::string("/etc/hostname") : launch.leakedFile;
    const uid_t uid = invokingUid(launch.mode);
    const gid_t gid = invokingGid(launch.mode);

    auto [inRead, inWrite] = makePipe();
    // Small enough for the pipe buffer: written whole before the fork.
    if (!launch.stdinData.empty() &&
        ::write(inWrite.get(), launch.stdinData.data(), launch.stdinData.size()) < 0)
        throw std::runtime_error("write stdin: " + errnoText(errno));
    inWrite.reset();
    auto [outRead, outWrite] = makePipe();
    auto [errRead, errWrite] = makePipe();
    (launch.leaveStdoutUnread ? unreadOut_ : out_) = std::move(outRead);
    (launch.leaveStderrUnread ? unreadErr_ : err_) = std::move(errRead);

    std::string ptySlave;
    if (launch.controllingTerminal) {
        ptyMaster_.reset(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
        char name[128];
        if (!ptyMaster_ || ::grantpt(ptyMaster_.get()) < 0 || ::unlockpt(ptyMaster_.get()) < 0 ||
            ::ptsname_r(ptyMaster_.get(), name, sizeof name) != 0)
            throw std::runtime_error("pty: " + errnoText(errno));
        ptySlave = name;
    }

    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork: " + errnoText(errno));
    if (pid_ == 0) {
        // Only async-signal-safe calls from here to execve.
        ::signal(SIGPIPE, SIG_DFL);
        // stockade leaves a cancel its caller ignored ignored (nohup): the
        // tests' own runner may have left one so.
        ::signal(SIGINT, SIG_DFL);
        ::signal(SIGTERM, SIG_DFL);
        ::signal(SIGHUP, SIG_DFL);
        if (launch.ignoredSignal != 0) ::signal(launch.ignoredSignal, SIG_IGN);
        ::dup2(outWrite.get(), STDOUT_FILENO);
        ::dup2(errWrite.get(), STDERR_FILENO);
        if (launch.controllingTerminal) {
            ::setsid();
            const int tty = ::open(ptySlave.c_str(), O_RDWR);
            if (tty < 0 || ::ioctl(tty, TIOCSCTTY, 0) < 0) {
                writeAllInChild(STDERR_FILENO, "harness: cannot take the pty as terminal\n");
                ::_exit(121);
            }
            ::dup2(tty, STDIN_FILENO);
            if (tty > STDERR_FILENO) ::close(tty);
        } else {
            ::dup2(inRead.get(), STDIN_FILENO);
        }
        // stockade starts with exactly what the case gives it: the standard
        // streams and the fds below, not whatever this test process inherited
        // from ctest without close-on-exec.
        ::syscall(SYS_close_range, 3U, ~0U, 0U);
        if (launch.leakFds) {
            // Deliberately without O_CLOEXEC: stockade must not pass these on.
            const int file = ::open(leakedFile.c_str(), O_RDONLY);
            if (file >= 0 && file != 7) {
                ::dup2(file, 7);
                ::close(file);
            }
            int leak[2];
            if (::pipe2(leak, 0) == 0) {
                ::dup2(leak[0], 42);
                ::close(leak[0]);
                ::dup2(leak[1], 43);
                ::close(leak[1]);
            }
        }
        if (!dropToInChild(uid, gid)) {
            writeAllInChild(STDERR_FILENO, "harness: cannot drop to the rootless user\n");
            ::_exit(121);
        }
        // Set after the uid change, which would clear it.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::chdir("/") < 0) ::_exit(121);
        ::execve(argvC[0], argvC.data(), envpC.data());
        writeAllInChild(STDERR_FILENO, "harness: cannot execute the stockade binary\n");
        ::_exit(121);
    }
}

StockadeProcess::~StockadeProcess() {
    if (pid_ > 0 && !reaped_) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
}

bool StockadeProcess::pump(int timeoutMs) {
    pollfd fds[2] = {{out_.get(), POLLIN, 0}, {err_.get(), POLLIN, 0}};
    if (!out_ && !err_) return false;
    const int ready = ::poll(fds, 2, timeoutMs);
    if (ready <= 0) return true;
    std::string* sinks[2] = {&completed_.out, &completed_.err};
    UniqueFd* owners[2] = {&out_, &err_};
    for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        char buf[65536];
        const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
        if (n > 0)
            sinks[i]->append(buf, static_cast<size_t>(n));
        else if (n == 0 || errno != EINTR)
            owners[i]->reset();
    }
    return out_ || err_;
}

bool StockadeProcess::waitForStdout(std::string_view needle, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (completed_.out.find(needle) == std::string::npos) {
        if (Clock::now() >= deadline) return false;
        if (!pump(50) && completed_.out.find(needle) == std::string::npos) return false;
    }
    return true;
}

void StockadeProcess::signal(int sig) const {
    if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

Completed StockadeProcess::finish(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    int status = 0;
    while (!reaped_) {
        pump(20);
        const pid_t done = ::waitpid(pid_, &status, WNOHANG);
        if (done == pid_) {
            reaped_ = true;
        } else if (Clock::now() >= deadline) {
            completed_.timedOut = true;
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, &status, 0);
            reaped_ = true;
        }
    }
    // Whatever stockade wrote before it exited; a straggler that still holds
    // a pipe end does not get to hold the test up for long.
    const auto drainUntil = Clock::now() + std::chrono::seconds(2);
    while ((out_ || err_) && Clock::now() < drainUntil) pump(20);
    out_.reset();
    err_.reset();
    if (WIFEXITED(status)) {
        completed_.exitCode = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        completed_.signal = WTERMSIG(status);
    }
    return completed_;
}

Completed runStockade(const Launch& launch, std::chrono::milliseconds timeout) {
    StockadeProcess process(launch);
    return process.finish(timeout);
}

}  // namespace stockade::itest
