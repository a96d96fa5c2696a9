// The short-lived child that makes the direct ingress's host listeners from
// inside the listener cgroup (runtime/net/listener_cgroup.h). It runs between
// clone3 and _exit in a copy of the supervisor: async-signal-safe, no
// allocation, only socket calls, and one fixed-size report back.
#pragma once

#include <linux/filter.h>
#include <netinet/in.h>

#include <cstdint>

namespace stockade {

// Each step the child takes, in order, for each family; a report names the
// one that failed.
enum class ListenerStep : int32_t {
    None = -1,  // every step done
    Socket,
    BindToDevice,
    AttachFilter,
    LockFilter,
    Bind,
    Listen,
    Send,
};

// Everything the child needs, made before the clone.
struct ListenerPlan {
    sockaddr_in v4{};   // 127.0.0.1:port
    sockaddr_in6 v6{};  // [::1]:port
    sock_fprog filter{};
};

// What comes back, with the listeners (SCM_RIGHTS, in family order) when
// `failed` is None. `family` is the family of the step that failed.
struct ListenerReport {
    int32_t failed = static_cast<int32_t>(ListenerStep::None);
    int32_t err = 0;
    int32_t family = 0;
    int32_t count = 0;
};

// Makes 127.0.0.1:port and, where IPv6 is up, [::1]:port listening, each
// confined (SO_BINDTODEVICE "lo", the locked filter) before it is bound, and
// sends them over `channel`. Never returns.
[[noreturn]] void makeListenersInChild(const ListenerPlan& plan, int channel) noexcept;

}  // namespace stockade
