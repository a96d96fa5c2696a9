// Which processes the probe can see and touch, the ones it leaves behind for
// the sandbox to clean up, and how it ends.
#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "actions.h"
#include "common.h"

namespace probe {

namespace {

bool isPid(std::string_view name) {
    return !name.empty() && name.find_first_not_of("0123456789") == std::string_view::npos;
}

// Becomes `stockade-probe sleep-with-token TOKEN 120`, bounded so that even a
// broken sandbox leaves nothing behind forever.
[[noreturn]] void execSleepWithTokenInChild(const std::string& token) {
    char self[] = "/proc/self/exe";
    char* argv[] = {const_cast<char*>("stockade-probe"), const_cast<char*>("sleep-with-token"),
                    const_cast<char*>(token.c_str()), const_cast<char*>("120"), nullptr};
    char* envp[] = {nullptr};
    ::execve(self, argv, envp);
    ::_exit(127);
}

}  // namespace

int killPid(const Args& a) {
    return reportCall(::kill(std::atoi(a[0].c_str()), std::atoi(a[1].c_str())));
}

// PTRACE_SEIZE does not stop the tracee; detach at once if it worked.
int ptracePid(const Args& a) {
    const pid_t pid = std::atoi(a[0].c_str());
    const long rc = ::ptrace(PTRACE_SEIZE, pid, nullptr, nullptr);
    const int err = errno;
    if (rc == 0) ::ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
    emitResult(rc, err);
    return 0;
}

int listPids(const Args&) {
    emit("self", std::to_string(::getpid()));
    std::vector<std::string> names;
    const int rc = listNames("/proc", names);
    emit("result", errName(-rc));
    for (const std::string& name : names) {
        if (isPid(name)) emit("pid", name);
    }
    return 0;
}

// Sleeps SECONDS with TOKEN in its argv, so the host can find it in /proc.
int sleepWithToken(const Args& a) {
    emit("pid", std::to_string(::getpid()));
    emit("ready", a[0]);
    sleepSeconds(std::atoi(a[1].c_str()));
    return 0;
}

// The classic daemon: fork, setsid, fork again; the grandchild re-executes the
// probe as sleep-with-token, and the probe returns once it has started.
int daemonize(const Args& a) {
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) < 0) return reportCall(-1);
    const pid_t child = ::fork();
    if (child < 0) return reportCall(child);
    if (child == 0) {
        ::setsid();
        const pid_t grandchild = ::fork();
        if (grandchild != 0) ::_exit(grandchild > 0 ? 0 : 1);
        const int devnull = ::open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            ::dup2(devnull, STDIN_FILENO);
            ::dup2(devnull, STDOUT_FILENO);
            ::dup2(devnull, STDERR_FILENO);
        }
        // The pipe's write end closes on exec: that is the "started" signal.
        execSleepWithTokenInChild(a[0]);
    }
    ::close(ready[1]);
    int status = 0;
    ::waitpid(child, &status, 0);
    char byte;
    while (::read(ready[0], &byte, 1) < 0 && errno == EINTR) {
    }
    ::close(ready[0]);
    emit("result", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "fork-failed");
    return 0;
}

// Like daemonize, but the daemon keeps the run's stdout and stderr open: a
// supervisor that waits for EOF on its pipes would wait for it forever.
int daemonizeKeepStdio(const Args& a) {
    const pid_t child = ::fork();
    if (child < 0) return reportCall(child);
    if (child == 0) {
        ::setsid();
        const pid_t grandchild = ::fork();
        if (grandchild != 0) ::_exit(grandchild > 0 ? 0 : 1);
        execSleepWithTokenInChild(a[0]);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    emit("result", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "fork-failed");
    return 0;
}

// Leaves N exited orphans for PID 1 to reap, then counts the zombies left
// after half a second.
int orphanZombies(const Args& a) {
    const int count = std::atoi(a[0].c_str());
    for (int i = 0; i < count; ++i) {
        const pid_t child = ::fork();
        if (child == 0) {
            if (::fork() == 0) {
                ::usleep(50 * 1000);  // outlive the parent: an orphan when it exits
                ::_exit(0);
            }
            ::_exit(0);
        }
        if (child > 0) ::waitpid(child, nullptr, 0);
    }
    ::usleep(500 * 1000);
    std::vector<std::string> names;
    listNames("/proc", names);
    int zombies = 0;
    for (const std::string& name : names) {
        if (!isPid(name)) continue;
        const std::vector<std::string> fields = statFields("/proc/" + name + "/stat");
        if (!fields.empty() && fields[0] == "Z") ++zombies;
    }
    emit("result", "ok");
    emit("zombies", std::to_string(zombies));
    return 0;
}

int exitWith(const Args& a) {
    return std::atoi(a[0].c_str());
}

int raiseSignal(const Args& a) {
    const int sig = std::atoi(a[0].c_str());
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    emit("error", "still alive after raise");
    return 2;
}

}  // namespace probe
