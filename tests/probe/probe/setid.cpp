// Every way a process can ask for a setuid or setgid file, or one with file
// capabilities, tried in one directory: `route.NAME=` names the kernel's
// answer for each (SPEC §3 G3, issue 14). The host side of the test then
// looks at what landed on disk.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

    // What the sandbox itself sees on the files it made.
    int with_bits = 0;
    for (const char* name :
         {"setid-plain", "setid-open", "setid-openat", "setid-creat", "setid-mknod",
          "setid-mknodat", "setid-tmpfile", "setid-openat2", "setid-dir"}) {
        struct stat st {};
        if (::stat((dir + "/" + name).c_str(), &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
            ++with_bits;
    }
    emit("with-setid-bits", std::to_string(with_bits));
    emit("result", "ok");
    return 0;
}

}  // namespace probe
