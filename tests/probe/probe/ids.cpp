// Changes to another id, as an unprivileged process on a host would try
// them: refused for want of privilege (EPERM) where the id is mapped, as
// invalid (EINVAL) where it is not. Each touches only the probe itself or a
// scratch file of its own on the sandbox's /tmp.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "actions.h"

namespace probe {

namespace {

// "-1" (leave unchanged) wraps to (uid_t)-1, as chown(2) means it.
unsigned idArgument(const std::string& text) {
    return static_cast<unsigned>(std::stol(text));
}

}  // namespace

int chownScratch(const Args& a) {
    char path[] = "/tmp/probe-chown-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0) return reportCall(-1);
    ::close(fd);
    const int rc = ::chown(path, idArgument(a[0]), idArgument(a[1]));
    const int err = errno;
    ::unlink(path);
    emitResult(rc, err);
    return 0;
}

int setuidTo(const Args& a) {
    return reportCall(::setuid(idArgument(a[0])));
}

int setgidTo(const Args& a) {
    return reportCall(::setgid(idArgument(a[0])));
}

// Becomes ID (gid and uid alike, as gosu or su-exec leave an image's
// entrypoint), then sleeps: a process of another uid than the one its
// sandbox started as, left for the sandbox's init to signal and kill.
int sleepAs(const Args& a) {
    const unsigned id = idArgument(a[0]);
    if (::setresgid(id, id, id) < 0 || ::setresuid(id, id, id) < 0) return reportCall(-1);
    emit("uid", std::to_string(::getuid()));
    sleepSeconds(std::atoi(a[1].c_str()));
    return 0;
}

// The same, catching SIGTERM: the handler ends the probe with 43, so a
// SIGTERM that reached it is told from one that did not (a PID 1 of its
// own pid namespace would drop an uncaught one).
int trapAs(const Args& a) {
    struct sigaction on_term {};
    on_term.sa_handler = [](int) { ::_exit(43); };
    if (::sigaction(SIGTERM, &on_term, nullptr) < 0) return reportCall(-1);
    return sleepAs(a);
}

}  // namespace probe
