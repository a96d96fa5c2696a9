#include "runtime/child/listener_cgroup_in_child.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "base/fd_passing.h"

namespace stockade {

namespace {

// One family's listener, or -1 with `report` saying which step failed.
int listenerInChild(const ListenerPlan& plan, int family, ListenerReport& report) noexcept {
    auto fail = [&](ListenerStep step, int fd) {
        report.failed = static_cast<int32_t>(step);
        report.err = errno;
        report.family = family;
        if (fd >= 0) close(fd);
        return -1;
    };
    const int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return fail(ListenerStep::Socket, fd);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    const char device[] = "lo";
    if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, device, sizeof(device)) < 0)
        return fail(ListenerStep::BindToDevice, fd);
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &plan.filter, sizeof(plan.filter)) < 0)
        return fail(ListenerStep::AttachFilter, fd);
    if (setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof(one)) < 0)
        return fail(ListenerStep::LockFilter, fd);
    const int bound = family == AF_INET
                          ? bind(fd, reinterpret_cast<const sockaddr*>(&plan.v4), sizeof(plan.v4))
                          : bind(fd, reinterpret_cast<const sockaddr*>(&plan.v6), sizeof(plan.v6));
    if (bound < 0) return fail(ListenerStep::Bind, fd);
    if (listen(fd, SOMAXCONN) < 0) return fail(ListenerStep::Listen, fd);
    return fd;
}

}  // namespace

void makeListenersInChild(const ListenerPlan& plan, int channel) noexcept {
    ListenerReport report;
    int fds[2] = {-1, -1};
    fds[0] = listenerInChild(plan, AF_INET, report);
    if (fds[0] >= 0) {
        report.count = 1;
        ListenerReport v6;
        fds[1] = listenerInChild(plan, AF_INET6, v6);
        if (fds[1] >= 0) {
            report.count = 2;
        } else if (!(v6.failed == static_cast<int32_t>(ListenerStep::Socket) &&
                     v6.err == EAFNOSUPPORT) &&
                   !(v6.failed == static_cast<int32_t>(ListenerStep::Bind) &&
                     v6.err == EADDRNOTAVAIL)) {
            report = v6;  // no IPv6 loopback is no error; anything else is
            report.count = 0;
        }
    }
    const int count = report.failed == static_cast<int32_t>(ListenerStep::None) ? report.count : 0;
    // Unsent, the parent reads EOF and says the report is missing.
    _exit(sendWithFds(channel, &report, sizeof(report), fds, count) == 0 ? 0 : 1);
}

}  // namespace stockade
