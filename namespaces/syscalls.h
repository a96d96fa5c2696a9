// Thin wrappers for system calls that glibc 2.36 declares only partly or in
// headers that clash with <sys/mount.h>. Each is one syscall(2) (openat2
// perhaps a few, below); all are async-signal-safe and may be called in the
// child.
#pragma once

#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace stockade::ns {

inline int sysOpenTree(int dirfd, const char* path, unsigned flags) noexcept {
    return static_cast<int>(syscall(SYS_open_tree, dirfd, path, flags));
}
inline int sysMoveMount(int from_dirfd, const char* from_path, int to_dirfd, const char* to_path,
                        unsigned flags) noexcept {
    return static_cast<int>(
        syscall(SYS_move_mount, from_dirfd, from_path, to_dirfd, to_path, flags));
}
inline int sysMountSetattr(int dirfd, const char* path, unsigned flags, mount_attr* attr) noexcept {
    return static_cast<int>(syscall(SYS_mount_setattr, dirfd, path, flags, attr, sizeof(*attr)));
}
// How often openat2 is tried again on EAGAIN (below).
inline constexpr int kOpenat2Tries = 64;
// openat2(2). With RESOLVE_BENEATH or RESOLVE_IN_ROOT, a `..` in the path
// (or in a link's text) is answered EAGAIN when a rename or a mount anywhere
// on the host raced the lookup; the kernel's advice is to try again, which
// this does, kOpenat2Tries times at most (a parallel test suite mounting
// all the while made a worktree link's `../../ci/ci.yml` a refused run).
inline int sysOpenat2(int dirfd, const char* path, open_how* how) noexcept {
    int fd = -1;
    for (int tries = 0; tries < kOpenat2Tries; ++tries) {
        fd = static_cast<int>(syscall(SYS_openat2, dirfd, path, how, sizeof(*how)));
        if (fd >= 0 || errno != EAGAIN || !(how->resolve & (RESOLVE_BENEATH | RESOLVE_IN_ROOT)))
            break;
    }
    return fd;
}
inline int sysFsopen(const char* fstype, unsigned flags) noexcept {
    return static_cast<int>(syscall(SYS_fsopen, fstype, flags));
}
inline int sysFsconfig(int fs, unsigned cmd, const char* key, const void* value, int aux) noexcept {
    return static_cast<int>(syscall(SYS_fsconfig, fs, cmd, key, value, aux));
}
inline int sysFsmount(int fs, unsigned flags, unsigned attrs) noexcept {
    return static_cast<int>(syscall(SYS_fsmount, fs, flags, attrs));
}
inline int sysPivotRoot(const char* new_root, const char* put_old) noexcept {
    return static_cast<int>(syscall(SYS_pivot_root, new_root, put_old));
}

}  // namespace stockade::ns
