#include "seccomp/install_in_child.h"

#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace stockade::seccomp {

// No flags on purpose. Not SECCOMP_FILTER_FLAG_SPEC_ALLOW: the kernel's
// speculative-store-bypass mitigation for seccomp'd tasks stays on. Not TSYNC:
// the child is single-threaded, and TSYNC would only add a failure mode.
int installFilterInChild(const sock_fprog& prog) noexcept {
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0U, &prog) == 0) return 0;
    const int err = errno;
    // seccomp(2) arrived in 3.17; before it, prctl installs the same filter.
    if (err != ENOSYS) return err;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0UL, 0UL) == 0) return 0;
    return errno;
}

int installFilterWithListenerInChild(const sock_fprog& prog, int* listener_fd) noexcept {
    const long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                            static_cast<unsigned>(SECCOMP_FILTER_FLAG_NEW_LISTENER), &prog);
    if (fd < 0) return errno;
    *listener_fd = static_cast<int>(fd);
    return 0;
}

}  // namespace stockade::seccomp
