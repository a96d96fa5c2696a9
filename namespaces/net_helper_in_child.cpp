#include "namespaces/net_helper_in_child.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace stockade::ns {
namespace {

// A system call without libc: the result is the kernel's, -errno on failure,
// and no thread-local state is touched.
#if defined(__x86_64__)
constexpr bool kRawCalls = true;
inline long kernelCall(long number, long a = 0, long b = 0, long c = 0) noexcept {
    long result;
    asm volatile("syscall"
                 : "=a"(result)
                 : "a"(number), "D"(a), "S"(b), "d"(c)
                 : "rcx", "r11", "memory");
    return result;
}
#elif defined(__aarch64__)
constexpr bool kRawCalls = true;
inline long kernelCall(long number, long a = 0, long b = 0, long c = 0) noexcept {
    register long x8 asm("x8") = number;
    register long x0 asm("x0") = a;
    register long x1 asm("x1") = b;
    register long x2 asm("x2") = c;
    asm volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory", "cc");
    return x0;
}
#else
// Elsewhere the helper is a fork (netHelperSharesMemory), whose errno is its own.
constexpr bool kRawCalls = false;
inline long kernelCall(long number, long a = 0, long b = 0, long c = 0) noexcept {
    long result = syscall(number, a, b, c);
    return result < 0 ? -errno : result;
}
#endif

long asArg(const void* pointer) noexcept {
    return reinterpret_cast<long>(pointer);
}

long loopbackUp() noexcept {
    // SIOCSIFFLAGS on any socket of the namespace: one round trip, where
    // netlink would need a message built and parsed for the same effect.
    long sock = kernelCall(SYS_socket, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock < 0) return sock;
    ifreq request;
    char* bytes = reinterpret_cast<char*>(&request);
    for (unsigned i = 0; i < sizeof request; ++i) bytes[i] = 0;
    request.ifr_name[0] = 'l';
    request.ifr_name[1] = 'o';
    long result = kernelCall(SYS_ioctl, sock, SIOCGIFFLAGS, asArg(&request));
    if (result == 0) {
        request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
        result = kernelCall(SYS_ioctl, sock, SIOCSIFFLAGS, asArg(&request));
    }
    kernelCall(SYS_close, sock);
    return result;
}

long build(const NetHelperArgs& args) noexcept {
    if (long result = kernelCall(SYS_unshare, CLONE_NEWNET); result < 0) return result;
    if (long result = loopbackUp(); result < 0) return result;
    // Every port bindable (allowEveryPortInChild's reason); best effort.
    long ports =
        !args.every_port ? -1
        : args.proc >= 0
            ? kernelCall(SYS_openat, args.proc, asArg("sys/net/ipv4/ip_unprivileged_port_start"),
                         O_WRONLY | O_CLOEXEC)
            : kernelCall(SYS_openat, AT_FDCWD,
                         asArg("/proc/sys/net/ipv4/ip_unprivileged_port_start"),
                         O_WRONLY | O_CLOEXEC);
    if (ports >= 0) {
        kernelCall(SYS_write, ports, asArg("0\n"), 2);
        kernelCall(SYS_close, ports);
    }
    long handle =
        kernelCall(SYS_openat, AT_FDCWD, asArg("/proc/thread-self/ns/net"), O_RDONLY | O_CLOEXEC);
    if (handle < 0) return handle;
    long result = kernelCall(SYS_dup3, handle, args.slot, O_CLOEXEC);
    kernelCall(SYS_close, handle);
    return result < 0 ? result : 0;
}

}  // namespace

bool netHelperSharesMemory() noexcept {
    return kRawCalls;
}

int buildNetworkNamespaceInHelper(void* raw_args) noexcept {
    const NetHelperArgs& args = *static_cast<const NetHelperArgs*>(raw_args);
    long result = build(args);
    // The fd table is shared: /proc is closed here, once no call needs it.
    if (args.proc >= 0) kernelCall(SYS_close, args.proc);
    return result < 0 ? static_cast<int>(-result) : 0;
}

}  // namespace stockade::ns
