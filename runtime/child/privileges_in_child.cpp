#include "runtime/child/privileges_in_child.h"

#include <errno.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace stockade {

int keepCapabilitiesAcrossSetuidInChild() noexcept {
    return prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP, 0, 0, 0) < 0 ? errno : 0;
}

int dropAllPrivilegesInChild(int last_cap, int* failed_step) noexcept {
    // Securebits first: locking them needs CAP_SETPCAP, which goes next.
    // NOROOT keeps a uid-0 exec from regaining capabilities; the locks keep
    // the sandbox from undoing any of it.
    *failed_step = 0;
    unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                         SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                         SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0) return errno;

    *failed_step = 1;
    for (int cap = 0; cap <= last_cap; ++cap)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) return errno;
    return dropUnprivilegedInChild();
}

int keepOnlyCapabilitiesInChild(int last_cap, const CapabilitySets& sets,
                                int* failed_step) noexcept {
    // No securebit: NO_SETUID_FIXUP, set for the setup, would keep the
    // container's capabilities across its own uid changes, and NOROOT would
    // deny uid 0 the capabilities the spec lists for it (its exec's
    // permitted set is the bounding set). no_new_privs, set next, still
    // keeps any exec from gaining more than it holds now.
    *failed_step = 0;
    if (prctl(PR_SET_SECUREBITS, 0, 0, 0, 0) < 0) return errno;
    *failed_step = 1;
    for (int cap = 0; cap <= last_cap && cap < 64; ++cap)
        if (!((sets.bounding >> cap) & 1) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
            errno != EINVAL)
            return errno;
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return errno;
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
    for (int word = 0; word < 2; ++word) {
        data[word].effective = static_cast<uint32_t>(sets.effective >> (32 * word));
        data[word].permitted = static_cast<uint32_t>(sets.permitted >> (32 * word));
        data[word].inheritable = static_cast<uint32_t>(sets.inheritable >> (32 * word));
    }
    if (syscall(SYS_capset, &header, data) < 0) return errno;
    for (int cap = 0; cap <= last_cap && cap < 64; ++cap)
        if (((sets.ambient >> cap) & 1) &&
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0)
            return errno;
    return 0;
}

int setNoNewPrivsInChild() noexcept {
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ? errno : 0;
}

int dropUnprivilegedInChild() noexcept {
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return errno;
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
    if (syscall(SYS_capset, &header, data) < 0) return errno;
    return 0;
}

}  // namespace stockade
