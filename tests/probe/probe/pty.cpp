// Pseudo-terminals made inside the sandbox: that they can be made and used as
// a test suite, `script` or an `expect`-style harness uses them, that they
// are the sandbox's own (its devpts instance, not the host's), and that the
// seccomp filter's ioctl refusals hold on them. Everything here acts only on
// ptys the probe itself opened, so a broken sandbox loses nothing.
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "actions.h"

namespace probe {

namespace {

std::string deviceNumber(dev_t dev) {
    return std::to_string(major(dev)) + ":" + std::to_string(minor(dev));
}

// Reads from `fd` until `want` has been seen or nothing more comes within
// `timeout_ms` per read; returns what was read.
std::string readUntil(int fd, const std::string& want, int timeout_ms) {
    std::string got;
    while (got.find(want) == std::string::npos) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, timeout_ms) <= 0) break;
        char buf[256];
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
    }
    return got;
}

// A pty pair the way glibc's openpty(3) makes one, step by step so that each
// step's answer is reported: posix_openpt on /dev/ptmx, grantpt, unlockpt,
// ptsname, open the slave. Returns false (having emitted result=) on failure.
bool openPair(int* master, int* slave, std::string* name) {
    *master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (*master < 0) {
        emit("stage", "posix_openpt");
        return reportCall(-1), false;
    }
    char buf[128];
    if (::grantpt(*master) < 0 || ::unlockpt(*master) < 0 ||
        ::ptsname_r(*master, buf, sizeof buf) != 0) {
        emit("stage", "grantpt/unlockpt/ptsname");
        return reportCall(-1), false;
    }
    *name = buf;
    *slave = ::open(buf, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (*slave < 0) {
        emit("stage", "open slave");
        return reportCall(-1), false;
    }
    return true;
}

void emitPtsListing() {
    std::vector<std::string> names;
    const int rc = listNames("/dev/pts", names);
    emit("pts_list", errName(-rc));
    for (const std::string& n : names) emit("pts_entry", n);
}

}  // namespace

// Opens a pty, describes it (name, owner, mode, the devpts instance it is
// on) and sends a line through it in both directions.
int ptyOpen(const Args&) {
    int master = -1, slave = -1;
    std::string name;
    if (!openPair(&master, &slave, &name)) return 0;
    emit("result", "ok");
    emit("name", name);
    struct stat st {};
    if (::fstat(slave, &st) == 0) {
        char mode[16];
        std::snprintf(mode, sizeof mode, "%o", st.st_mode & 07777);
        emit("slave_mode", mode);
        emit("slave_uid", std::to_string(st.st_uid));
        emit("slave_gid", std::to_string(st.st_gid));
        emit("slave_dev", deviceNumber(st.st_dev));
    }
    emit("isatty", ::isatty(slave) ? "1" : "0");
    char tname[128];
    emit("ttyname", ::ttyname_r(slave, tname, sizeof tname) == 0 ? tname : "none");
    // Master to slave goes through the line discipline (canonical mode);
    // slave to master comes back with ONLCR's \r\n.
    const bool down =
        ::write(master, "ping\n", 5) == 5 && readUntil(slave, "ping\n", 5000) == "ping\n";
    emit("master_to_slave", down ? "ok" : "lost");
    const bool up = ::write(slave, "pong\n", 5) == 5 &&
                    readUntil(master, "pong\r\n", 5000).find("pong\r\n") != std::string::npos;
    emit("slave_to_master", up ? "ok" : "lost");
    emitPtsListing();
    ::close(slave);
    ::close(master);
    // And glibc's own openpty(3), which a program would call.
    int m = -1, s = -1;
    char oname[128];
    const int rc = ::openpty(&m, &s, oname, nullptr, nullptr);
    emit("openpty", rc == 0 ? "ok" : errName(errno));
    if (rc == 0) {
        emit("openpty_name", oname);
        ::close(m);
        ::close(s);
    }
    return 0;
}

// A child whose controlling terminal is a pty made here: setsid and
// TIOCSCTTY, as login(1), ssh and expect do; then /dev/tty must be that pty.
// And forkpty(3), which does the same in one call.
int ptyControlling(const Args&) {
    int master = -1, slave = -1;
    std::string name;
    if (!openPair(&master, &slave, &name)) return 0;
    int report[2];
    if (::pipe2(report, O_CLOEXEC) < 0) return reportCall(-1);
    const pid_t child = ::fork();
    if (child < 0) return reportCall(-1);
    if (child == 0) {
        // Fixed-size answers through the pipe: setsid, TIOCSCTTY, open
        // /dev/tty, the foreground group, then the line written to /dev/tty.
        int answers[4] = {0, 0, 0, 0};
        if (::setsid() < 0) answers[0] = errno;
        if (::ioctl(slave, TIOCSCTTY, 0) < 0) answers[1] = errno;
        const int tty = ::open("/dev/tty", O_RDWR | O_CLOEXEC);
        if (tty < 0) answers[2] = errno;
        if (tty >= 0 && ::tcgetpgrp(tty) != ::getpid()) answers[3] = ENOTTY;
        if (tty >= 0) (void)!::write(tty, "via-dev-tty\n", 12);
        (void)!::write(report[1], answers, sizeof answers);
        ::_exit(0);
    }
    ::close(report[1]);
    int answers[4] = {-1, -1, -1, -1};
    const bool got = ::read(report[0], answers, sizeof answers) == sizeof answers;
    ::close(report[0]);
    const std::string seen = readUntil(master, "via-dev-tty", 5000);
    int status = 0;
    ::waitpid(child, &status, 0);
    emit("result", got ? "ok" : "ENODATA");
    emit("name", name);
    emit("setsid", errName(answers[0]));
    emit("tiocsctty", errName(answers[1]));
    emit("open_dev_tty", errName(answers[2]));
    emit("foreground", errName(answers[3]));
    emit("dev_tty_reached_master", seen.find("via-dev-tty") != std::string::npos ? "1" : "0");
    ::close(slave);
    ::close(master);

    int fmaster = -1;
    char fname[128];
    const pid_t fchild = ::forkpty(&fmaster, fname, nullptr, nullptr);
    if (fchild < 0) {
        emit("forkpty", errName(errno));
        return 0;
    }
    if (fchild == 0) {
        // stdin, stdout and stderr are the pty, and it is our controlling one.
        char tname[128];
        const bool ok = ::isatty(STDOUT_FILENO) &&
                        ::ttyname_r(STDOUT_FILENO, tname, sizeof tname) == 0 &&
                        ::tcgetpgrp(STDOUT_FILENO) == ::getpgrp();
        const char* line = ok ? "forkpty-child-ok\n" : "forkpty-child-bad\n";
        (void)!::write(STDOUT_FILENO, line, std::strlen(line));
        ::_exit(0);
    }
    const std::string fseen = readUntil(fmaster, "\n", 5000);
    ::waitpid(fchild, &status, 0);
    ::close(fmaster);
    emit("forkpty", "ok");
    emit("forkpty_name", fname);
    emit("forkpty_child",
         fseen.find("forkpty-child-ok") != std::string::npos ? "ok" : escape(fseen));
    return 0;
}

// TIOCSTI (push input into a terminal), TIOCLINUX and TIOCSETD (attach a
// line discipline) on a pty the probe made:
// the seccomp filter refuses them on every fd, whatever the terminal. A
// harmless ioctl on the same fds shows that ioctls as such reach the kernel.
int ptyInject(const Args&) {
    int master = -1, slave = -1;
    std::string name;
    if (!openPair(&master, &slave, &name)) return 0;
    emit("result", "ok");
    char c = 'x';
    auto answer = [](long rc) { return rc < 0 ? errName(errno) : std::string("ok"); };
    emit("tiocsti_slave", answer(::ioctl(slave, TIOCSTI, &c)));
    emit("tiocsti_master", answer(::ioctl(master, TIOCSTI, &c)));
    emit("tiocsti_high_slave", answer(::syscall(SYS_ioctl, slave, (1UL << 32) | TIOCSTI, &c)));
    char subcode = 12;  // TIOCL_GETSHIFTSTATE: reads, changes nothing
    emit("tioclinux_slave", answer(::ioctl(slave, TIOCLINUX, &subcode)));
    int ldisc = N_TTY;  // the discipline it already has: changes nothing
    emit("tiocsetd_slave", answer(::ioctl(slave, TIOCSETD, &ldisc)));
    winsize ws{};
    emit("tiocgwinsz_slave", answer(::ioctl(slave, TIOCGWINSZ, &ws)));
    ::close(slave);
    ::close(master);
    return 0;
}

// Holds a pty open while the host looks: prints its name, its fds and the
// instance's listing, then `ready=TOKEN`, and sleeps.
int ptyHold(const Args& a) {
    int master = -1, slave = -1;
    std::string name;
    if (!openPair(&master, &slave, &name)) return 0;
    emit("result", "ok");
    emit("name", name);
    emit("pid", std::to_string(::getpid()));
    emit("slave_fd", std::to_string(slave));
    struct stat st {};
    if (::fstat(slave, &st) == 0) {
        emit("slave_dev", deviceNumber(st.st_dev));
        emit("slave_ino", std::to_string(st.st_ino));
    }
    if (::stat("/dev/pts", &st) == 0) emit("pts_dev", deviceNumber(st.st_dev));
    emitPtsListing();
    emit("ready", a[0]);
    sleepSeconds(std::atoi(a[1].c_str()));
    return 0;
}

// Opens /dev/ptmx until the kernel refuses: how many ptys one sandbox can
// take from the pool all instances but the host's share. Held until exit.
int ptyFill(const Args&) {
    int opened = 0;
    int err = 0;
    for (; opened < 100000; ++opened) {
        if (::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC) < 0) {
            err = errno;
            break;
        }
    }
    emit("result", "ok");
    emit("opened", std::to_string(opened));
    emit("errno", err == 0 ? std::string("none") : errName(err));
    return 0;
}

}  // namespace probe
