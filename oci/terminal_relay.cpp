#include "oci/terminal_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "base/fd_passing.h"

namespace stockade::oci {

namespace {

constexpr size_t kChunk = 64 * 1024;

// A stdin that is a terminal, raw for as long as this lives: the keys a
// person types (^C, ^Z, ^D) reach the container's line discipline, which
// turns them into its own signals, instead of ending `run`.
class RawTerminal {
  public:
    RawTerminal() {
        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_) < 0) return;
        termios raw = saved_;
        cfmakeraw(&raw);
        active_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    ~RawTerminal() {
        if (active_) (void)tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
    }
    RawTerminal(const RawTerminal&) = delete;
    RawTerminal& operator=(const RawTerminal&) = delete;

  private:
    termios saved_{};
    bool active_ = false;
};

// All of `data` to stdout, a pipe buffer at a time once poll says there is
// room, so that a slow reader of stdout never keeps signals from being taken
// (`take_signals`, when `signals` is readable; it returns false to give up
// the rest). False once stdout is gone (EPIPE): the relay goes on reading
// the pty so the container never blocks on it, and drops what it reads.
template <class TakeSignals>
bool writeOut(const char* data, size_t len, int signals, TakeSignals take_signals) {
    while (len > 0) {
        pollfd fds[2] = {{STDOUT_FILENO, POLLOUT, 0}, {signals, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        if ((fds[1].revents & POLLIN) && !take_signals()) return true;
        if (!(fds[0].revents & (POLLOUT | POLLERR | POLLHUP))) continue;
        ssize_t n = write(STDOUT_FILENO, data, std::min<size_t>(len, PIPE_BUF));
        if (n > 0) {
            data += n;
            len -= static_cast<size_t>(n);
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            return false;
        }
    }
    return true;
}

// Signals blocked for as long as this lives; the caller's mask back after,
// and a SIGPIPE held for a stdout gone dropped rather than delivered then.
class SignalsHeld {
  public:
    explicit SignalsHeld(const sigset_t& held) { ok_ = sigprocmask(SIG_BLOCK, &held, &old_) == 0; }
    ~SignalsHeld() {
        if (!ok_) return;
        sigset_t pipe_only;
        sigemptyset(&pipe_only);
        sigaddset(&pipe_only, SIGPIPE);
        timespec now{0, 0};
        if (!sigismember(&old_, SIGPIPE))
            while (sigtimedwait(&pipe_only, nullptr, &now) == SIGPIPE) {
            }
        (void)sigprocmask(SIG_SETMASK, &old_, nullptr);
    }
    SignalsHeld(const SignalsHeld&) = delete;
    SignalsHeld& operator=(const SignalsHeld&) = delete;
    bool ok() const { return ok_; }

  private:
    sigset_t old_{};
    bool ok_ = false;
};

}  // namespace

std::optional<winsize> callerTerminalSize() {
    winsize size{};
    for (int fd : {STDIN_FILENO, STDOUT_FILENO})
        if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &size) == 0) return size;
    return std::nullopt;
}

void giveTerminalSize(int master) {
    if (auto size = callerTerminalSize()) (void)ioctl(master, TIOCSWINSZ, &*size);
}

Result<UniqueFd> receivedPtyMaster(int console) {
    char name[16];
    int fds[kMaxPassedFds];
    int count = 0;
    bool truncated = false;
    ssize_t n = receiveWithFds(console, name, sizeof(name), fds, &count, MSG_DONTWAIT, &truncated);
    if (n < 0) return Error::fromErrno("recvmsg(the console socket, MSG_DONTWAIT)", int(-n));
    if (count != 1 || truncated) {
        for (int i = 0; i < count; ++i) close(fds[i]);
        return Error::message("the console socket's message carried " + std::to_string(count) +
                              " fds, not the pty master alone");
    }
    UniqueFd master(fds[0]);
    struct stat st {};
    if (fstat(master.get(), &st) < 0) return Error::fromErrno("fstat(the pty master)");
    if (!S_ISCHR(st.st_mode))
        return Error::message(
            "the console socket's fd is not a terminal's (not a character device)");
    return master;
}

Result<int> relayTerminal(int master, pid_t init, const sigset_t& forwarded) {
    int flags = fcntl(master, F_GETFL);
    if (flags < 0 || fcntl(master, F_SETFL, flags | O_NONBLOCK) < 0)
        return Error::fromErrno("fcntl(the pty master, F_SETFL, O_NONBLOCK)");
    // SIGWINCH read here as the forwarded ones are; SIGPIPE held so that a
    // reader of stdout that went away is an EPIPE, not run's death with
    // the container left behind. The caller's mask is back on every return.
    sigset_t mask = forwarded, held;
    sigaddset(&mask, SIGWINCH);
    sigemptyset(&held);
    sigaddset(&held, SIGWINCH);
    sigaddset(&held, SIGPIPE);
    SignalsHeld held_now(held);
    if (!held_now.ok()) return Error::fromErrno("sigprocmask()");
    UniqueFd signals(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!signals) return Error::fromErrno("signalfd()");

    giveTerminalSize(master);  // again: `exec`'s, and a resize since `run` gave it
    int status = 0;
    bool init_done = waitpid(init, &status, WNOHANG) == init;
    timespec drain_end{};
    auto startDrain = [&] {
        clock_gettime(CLOCK_MONOTONIC, &drain_end);
        drain_end.tv_sec += kDrainAfterInitMs / 1000;
        drain_end.tv_nsec += (kDrainAfterInitMs % 1000) * 1000000L;
    };
    if (init_done) startDrain();
    {
        RawTerminal raw;
        bool master_open = true, stdin_open = true, stdout_open = true, stop = false;
        std::string to_master;
        std::string chunk(kChunk, '\0');
        // Forwarded to init while it runs; after, any but SIGWINCH ends
        // the drain.
        auto takeSignals = [&] {
            signalfd_siginfo info;
            while (read(signals.get(), &info, sizeof(info)) == sizeof(info)) {
                int sig = int(info.ssi_signo);
                if (sig == SIGWINCH)
                    giveTerminalSize(master);
                else if (sig != SIGCHLD && init_done)
                    stop = true;
                else if (sig != SIGCHLD)
                    (void)kill(init, sig);
            }
            if (!init_done && waitpid(init, &status, WNOHANG) == init) {
                init_done = true;
                startDrain();
            }
        };
        while (!stop && (!init_done || master_open)) {
            int timeout = -1;
            if (init_done) {
                // After init: what the pty still holds, until it closes, goes
                // quiet, the drain's time is up, or a signal says stop.
                timespec now{};
                clock_gettime(CLOCK_MONOTONIC, &now);
                const long left = (drain_end.tv_sec - now.tv_sec) * 1000L +
                                  (drain_end.tv_nsec - now.tv_nsec) / 1000000L;
                if (left <= 0) break;
                timeout = int(std::min<long>(left, kQuietAfterInitMs));
            }
            pollfd fds[3] = {
                {signals.get(), POLLIN, 0},
                {master_open ? master : -1, short(POLLIN | (to_master.empty() ? 0 : POLLOUT)), 0},
                {stdin_open && to_master.size() < kChunk ? STDIN_FILENO : -1, POLLIN, 0}};
            int ready = poll(fds, 3, timeout);
            if (ready < 0 && errno == EINTR) continue;
            if (ready < 0) {
                // Nothing relays any more: init must not wait on a full pty.
                if (!init_done) (void)kill(init, SIGKILL);
                break;
            }
            if (ready == 0) break;  // init is gone and the pty went quiet
            if (fds[0].revents & POLLIN) takeSignals();
            if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
                ssize_t n = read(master, chunk.data(), chunk.size());
                if (n > 0 && stdout_open)
                    stdout_open = writeOut(chunk.data(), static_cast<size_t>(n), signals.get(),
                                           [&] { return takeSignals(), !stop; });
                else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                    master_open = false;  // EIO: the container's side is closed
            }
            if (master_open && (fds[1].revents & POLLOUT)) {
                ssize_t n = write(master, to_master.data(), to_master.size());
                if (n > 0)
                    to_master.erase(0, static_cast<size_t>(n));
                else if (n < 0 && errno != EAGAIN && errno != EINTR)
                    to_master.clear();
            }
            if (fds[2].revents & (POLLIN | POLLHUP | POLLERR)) {
                ssize_t n = read(STDIN_FILENO, chunk.data(), kChunk - to_master.size());
                if (n > 0)
                    to_master.append(chunk.data(), static_cast<size_t>(n));
                else if (n == 0 || (errno != EAGAIN && errno != EINTR))
                    stdin_open = false;
            }
        }
    }
    if (!init_done && waitpid(init, &status, 0) != init) return Error::fromErrno("waitpid(init)");
    return status;
}

}  // namespace stockade::oci
