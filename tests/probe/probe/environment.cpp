// What the probe inherits from the run: environment, open fds, stdin, its
// session and terminal.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "actions.h"
#include "common.h"

namespace probe {

namespace {

// Field 7 of /proc/self/stat (tty_nr): the controlling terminal, 0 for none.
std::string ttyNumber() {
    const std::vector<std::string> fields = statFields("/proc/self/stat");
    return fields.size() >= 5 ? fields[4] : "?";  // state ppid pgrp session tty_nr
}

}  // namespace

int env(const Args&) {
    for (char** e = environ; *e != nullptr; ++e) emit("env", escape(*e));
    return 0;
}

int listFds(const Args&) {
    const int dirFd = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirFd < 0) return reportCall(dirFd);
    DIR* dir = ::fdopendir(dirFd);
    emit("result", "ok");
    while (const dirent* e = ::readdir(dir)) {
        const std::string_view name = e->d_name;
        if (name == "." || name == ".." || std::atoi(e->d_name) == dirFd) continue;
        char target[4096];
        const ssize_t n = ::readlinkat(dirFd, e->d_name, target, sizeof target);
        emit("fd", std::string(name) + ":" +
                       (n >= 0 ? std::string(target, static_cast<size_t>(n)) : "?"));
    }
    ::closedir(dir);
    return 0;
}

// Whatever arrives on stdin within one second.
int readStdin(const Args&) {
    pollfd p{STDIN_FILENO, POLLIN, 0};
    std::string data;
    if (::poll(&p, 1, 1000) > 0) {
        char buf[4096];
        const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n < 0) return reportCall(n);
        data.assign(buf, static_cast<size_t>(n));
    }
    emit("result", "ok");
    emitContent(data);
    return 0;
}

int session(const Args&) {
    emit("pid", std::to_string(::getpid()));
    emit("ppid", std::to_string(::getppid()));
    emit("sid", std::to_string(::getsid(0)));
    emit("pgid", std::to_string(::getpgid(0)));
    emit("tty_nr", ttyNumber());
    for (int fd = 0; fd <= 2; ++fd) {
        char name[256];
        const int rc = ::ttyname_r(fd, name, sizeof name);
        emit("ttyname" + std::to_string(fd), rc == 0 ? name : errName(rc));
    }
    return 0;
}

int openTty(const Args&) {
    return reportOpened(::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY));
}

// Tries to make FD's terminal the controlling one, stealing it from the
// session that has it (arg 1, which needs CAP_SYS_ADMIN in the initial user
// namespace). Where it works, only the probe's own session is affected.
int acquireCtty(const Args& a) {
    ::setsid();  // fails harmlessly when already a session leader
    const int rc = ::ioctl(std::atoi(a[0].c_str()), TIOCSCTTY, 1);
    emitResult(rc, errno);
    emit("tty_nr", ttyNumber());
    return 0;
}

}  // namespace probe
