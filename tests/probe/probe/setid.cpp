// Every way a process can ask for a setuid or setgid file, or one with file
// capabilities, tried in one directory: `route.NAME=` names the kernel's
// answer for each (SPEC §3 G3, issue 14). The host side of the test then
// looks at what landed on disk.
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "actions.h"

namespace probe {

namespace {

void route(const std::string& name, long rc, int err) {
    emit("route." + name, rc < 0 ? errName(err) : "ok");
}

std::string makePlain(const std::string& dir, const char* name) {
    std::string path = dir + "/" + name;
    int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0755);
    if (fd >= 0) {
        (void)!::write(fd, "#!/bin/sh\nid\n", 13);
        ::close(fd);
    }
    return path;
}

// The file capability a process may write once it is root of a user
// namespace of its own making (CAP_SETFCAP there, over the files whose
// owner it maps): a child unshares one, maps its own ids, and tries.
// "ok", or the errno of the first step that failed, "unshare:EPERM"-style
// for the steps before the attribute.
std::string setxattrInOwnUserNamespace(const std::string& path, const uint32_t (&caps)[5]) {
    int fds[2];
    if (::pipe(fds) != 0) return "pipe:" + errName(errno);
    const uid_t uid = ::geteuid();
    const gid_t gid = ::getegid();
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(fds[0]);
        auto report = [&](const std::string& said) {
            (void)!::write(fds[1], said.data(), said.size());
            ::_exit(0);
        };
        if (::unshare(CLONE_NEWUSER) != 0) report("unshare:" + errName(errno));
        auto put = [&](const char* file, const std::string& text) {
            const int fd = ::open(file, O_WRONLY | O_CLOEXEC);
            if (fd < 0 || ::write(fd, text.data(), text.size()) < 0)
                report(std::string(file) + ":" + errName(errno));
            ::close(fd);
        };
        put("/proc/self/setgroups", "deny");
        put("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1");
        put("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1");
        const long rc = ::setxattr(path.c_str(), "security.capability", caps, sizeof(caps), 0);
        report(rc < 0 ? errName(errno) : "ok");
    }
    ::close(fds[1]);
    char buf[128] = {};
    const ssize_t n = child > 0 ? ::read(fds[0], buf, sizeof buf - 1) : -1;
    ::close(fds[0]);
    if (child > 0) ::waitpid(child, nullptr, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "no-answer";
}

// io_uring's openat, whose mode no seccomp rule sees: "ok" when the ring
// made the file, else the errno of the ring's setup or of the open.
std::string openatThroughIoUring(const std::string& path, mode_t mode) {
    io_uring_params params{};
    const long ring = ::syscall(__NR_io_uring_setup, 4, &params);
    if (ring < 0) return "setup:" + errName(errno);
    const int fd = static_cast<int>(ring);
    const size_t sq_size = params.sq_off.array + params.sq_entries * sizeof(unsigned);
    const size_t cq_size = params.cq_off.cqes + params.cq_entries * sizeof(io_uring_cqe);
    void* sq = ::mmap(nullptr, sq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                      IORING_OFF_SQ_RING);
    void* cq = ::mmap(nullptr, cq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                      IORING_OFF_CQ_RING);
    void* sqes = ::mmap(nullptr, params.sq_entries * sizeof(io_uring_sqe), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) {
        ::close(fd);
        return "mmap:" + errName(errno);
    }
    auto at = [](void* base, unsigned offset) {
        return reinterpret_cast<unsigned*>(static_cast<char*>(base) + offset);
    };
    io_uring_sqe* sqe = static_cast<io_uring_sqe*>(sqes);
    *sqe = io_uring_sqe{};
    sqe->opcode = IORING_OP_OPENAT;
    sqe->fd = AT_FDCWD;
    sqe->addr = reinterpret_cast<uint64_t>(path.c_str());
    sqe->len = mode;
    sqe->open_flags = O_CREAT | O_WRONLY | O_CLOEXEC;
    const unsigned tail = *at(sq, params.sq_off.tail);
    at(sq, params.sq_off.array)[tail & *at(sq, params.sq_off.ring_mask)] = 0;
    __atomic_store_n(at(sq, params.sq_off.tail), tail + 1, __ATOMIC_RELEASE);
    std::string out;
    if (::syscall(__NR_io_uring_enter, fd, 1, 1, IORING_ENTER_GETEVENTS, nullptr, 0) < 0) {
        out = "enter:" + errName(errno);
    } else {
        const unsigned head = __atomic_load_n(at(cq, params.cq_off.head), __ATOMIC_ACQUIRE);
        auto* cqes = reinterpret_cast<io_uring_cqe*>(static_cast<char*>(cq) + params.cq_off.cqes);
        const int res = cqes[head & *at(cq, params.cq_off.ring_mask)].res;
        if (res >= 0) ::close(res);
        out = res < 0 ? errName(-res) : "ok";
    }
    ::close(fd);
    return out;
}

}  // namespace

int setidRoutes(const Args& a) {
    const std::string dir = a[0];
    long rc;
    const std::string plain = makePlain(dir, "setid-plain");

    rc = ::chmod(plain.c_str(), 04755);
    route("chmod-setuid", rc, errno);
    rc = ::chmod(plain.c_str(), 02755);
    route("chmod-setgid", rc, errno);
    rc = ::fchmodat(AT_FDCWD, plain.c_str(), 06755, 0);
    route("fchmodat", rc, errno);
    rc = ::syscall(452 /* fchmodat2 */, AT_FDCWD, plain.c_str(), 04755, 0);
    route("fchmodat2", rc, errno);
    int fd = ::open(plain.c_str(), O_RDONLY | O_CLOEXEC);
    rc = ::fchmod(fd, 04755);
    route("fchmod", rc, errno);
    ::close(fd);

    rc = ::syscall(SYS_open, (dir + "/setid-open").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 04755);
    route("open-creat", rc, errno);
    if (rc >= 0) ::close(static_cast<int>(rc));
    rc = ::syscall(SYS_openat, AT_FDCWD, (dir + "/setid-openat").c_str(),
                   O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 02755);
    route("openat-creat", rc, errno);
    if (rc >= 0) ::close(static_cast<int>(rc));
    rc = ::syscall(SYS_creat, (dir + "/setid-creat").c_str(), 04755);
    route("creat", rc, errno);
    if (rc >= 0) ::close(static_cast<int>(rc));
    rc = ::syscall(SYS_mknod, (dir + "/setid-mknod").c_str(), S_IFREG | 04755, 0);
    route("mknod", rc, errno);
    rc = ::syscall(SYS_mknodat, AT_FDCWD, (dir + "/setid-mknodat").c_str(), S_IFREG | 02755, 0);
    route("mknodat", rc, errno);

    // O_TMPFILE with the bits, then given a name.
    rc = ::syscall(SYS_openat, AT_FDCWD, dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 04755);
    route("tmpfile", rc, errno);
    if (rc >= 0) {
        const std::string from = "/proc/self/fd/" + std::to_string(rc);
        ::linkat(AT_FDCWD, from.c_str(), AT_FDCWD, (dir + "/setid-tmpfile").c_str(),
                 AT_SYMLINK_FOLLOW);
        ::close(static_cast<int>(rc));
    }
    open_how how{};
    how.flags = O_CREAT | O_WRONLY | O_CLOEXEC;
    how.mode = 04755;
    rc = ::syscall(SYS_openat2, AT_FDCWD, (dir + "/setid-openat2").c_str(), &how, sizeof(how));
    route("openat2", rc, errno);
    if (rc >= 0) ::close(static_cast<int>(rc));

    // A umask cannot add bits, but a directory's setgid is inherited: a
    // setgid directory made here would pass it to what is made inside.
    rc = ::mkdir((dir + "/setid-dir").c_str(), 02777);
    rc = ::chmod((dir + "/setid-dir").c_str(), 02777);
    route("chmod-dir-setgid", rc, errno);

    // File capabilities: a version 2 security.capability with CAP_SETUID
    // (bit 7) permitted and effective.
    const uint32_t caps[5] = {0x02000001u, 1u << 7, 0, 0, 0};
    rc = ::setxattr(plain.c_str(), "security.capability", caps, sizeof(caps), 0);
    route("setxattr-capability", rc, errno);
    emit("route.userns-setxattr-capability", setxattrInOwnUserNamespace(plain, caps));
    emit("route.io-uring-openat", openatThroughIoUring(dir + "/setid-io-uring", 04755));

    // What the sandbox itself sees on the files it made.
    int with_bits = 0;
    for (const char* name :
         {"setid-plain", "setid-open", "setid-openat", "setid-creat", "setid-mknod",
          "setid-mknodat", "setid-tmpfile", "setid-openat2", "setid-dir", "setid-io-uring"}) {
        struct stat st {};
        if (::stat((dir + "/" + name).c_str(), &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
            ++with_bits;
    }
    emit("with-setid-bits", std::to_string(with_bits));
    emit("result", "ok");
    return 0;
}

}  // namespace probe
