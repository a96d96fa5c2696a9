// The sandbox's own user namespace's counters (user_namespaces(7),
// /proc/sys/user), lowered by the child while it still holds
// CAP_SYS_RESOURCE in that namespace, before anything of the command runs.
//
// Why: inotify instances and watches are counted per user at every level of
// the namespace tree up to the host (ucounts); rootless, the sandbox's count
// is charged to the caller, whose other processes got EMFILE from
// inotify_init1 while a sandbox held all 128 (issue 15). A lower maximum in
// the sandbox's namespace caps what it can take; the caller keeps the rest.
// Async-signal-safe: open, write, close.
#pragma once

#include <cstdint>

namespace stockade {

struct UserNamespaceBounds {
    uint32_t inotify_instances = 0;  // 0: leave the kernel's value
    uint32_t inotify_watches = 0;
};

// 0, or the errno of the first write that failed.
int boundUserNamespaceInChild(const UserNamespaceBounds& bounds) noexcept;

}  // namespace stockade
