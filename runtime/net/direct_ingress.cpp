#include "runtime/net/direct_ingress.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "base/small_file.h"
#include "base/unique_fd.h"
#include "runtime/net/listener_cgroup.h"

namespace stockade {

namespace {

// Offsets in the TCP header, where a socket filter's loads start for TCP.
constexpr uint32_t kTcpSeqOffset = 4;
constexpr uint32_t kTcpFlagsOffset = 13;
constexpr uint32_t kTcpRst = 0x04;
constexpr uint32_t kTcpSynAck = 0x12;

// The filter of confineHandedSocket: drop a SYN-ACK, and a RST with
// sequence number 0; keep everything else whole.
constexpr sock_filter kHandedSocketFilter[] = {
    BPF_STMT(BPF_LD | BPF_B | BPF_ABS, kTcpFlagsOffset),    // 0: A = flags
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, kTcpRst, 0, 2),    // 1: RST? 2 : 4
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kTcpSeqOffset),      // 2: A = seq
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 3, 2),           // 3: seq 0? drop : keep
    BPF_STMT(BPF_ALU | BPF_AND | BPF_K, kTcpSynAck),        // 4: A &= SYN|ACK
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kTcpSynAck, 1, 0),  // 5: both? drop : keep
    BPF_STMT(BPF_RET | BPF_K, 0xffffffff),                  // 6: keep
    BPF_STMT(BPF_RET | BPF_K, 0),                           // 7: drop
};

bool isLoopbackOrAny(const sockaddr_storage& address) {
    if (address.ss_family == AF_INET) {
        const uint32_t a = ntohl(reinterpret_cast<const sockaddr_in&>(address).sin_addr.s_addr);
        return a == INADDR_LOOPBACK || a == INADDR_ANY;
    }
    const in6_addr& a = reinterpret_cast<const sockaddr_in6&>(address).sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(&a) || IN6_IS_ADDR_UNSPECIFIED(&a);
}

uint16_t portOf(const sockaddr_storage& address) {
    return ntohs(address.ss_family == AF_INET
                     ? reinterpret_cast<const sockaddr_in&>(address).sin_port
                     : reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
}

int intOption(int fd, int level, int name, int fallback) {
    int value = 0;
    socklen_t length = sizeof(value);
    return getsockopt(fd, level, name, &value, &length) == 0 ? value : fallback;
}

seccomp::ServedAnswer performListen(int fd, int backlog) {
    if (::listen(fd, backlog) < 0) return {0, errno};
    return {0, 0};
}

// Whether the caller's fd is close-on-exec: the fd flag lives in its table,
// not in the file, so it is read from /proc (flags: in octal, O_CLOEXEC set
// when it is). Unknown reads as set: a host socket leaks into no exec.
bool closeOnExec(pid_t pid, int fd) {
    const std::string path = "/proc/" + std::to_string(pid) + "/fdinfo/" + std::to_string(fd);
    auto info = readSmallFile(AT_FDCWD, path.c_str(), path, 4096);
    if (!info) return true;
    const size_t at = info->content.find("flags:");
    if (at == std::string::npos) return true;
    const unsigned long flags = std::strtoul(info->content.c_str() + at + 6, nullptr, 8);
    return (flags & O_CLOEXEC) != 0;
}

// A pidfd for the calling thread, which need not lead its process (a server
// listening from a thread): PIDFD_THREAD from Linux 6.9; before it, the
// thread's process, whose fd table the thread shares.
UniqueFd openCaller(pid_t tid) {
    constexpr unsigned kPidfdThread = O_EXCL;  // PIDFD_THREAD
    UniqueFd fd(static_cast<int>(syscall(SYS_pidfd_open, tid, kPidfdThread)));
    if (fd || errno != EINVAL) return fd;
    const std::string path = "/proc/" + std::to_string(tid) + "/status";
    auto status = readSmallFile(AT_FDCWD, path.c_str(), path, 64 * 1024);
    if (!status) return UniqueFd();
    const size_t at = status->content.find("\nTgid:");
    if (at == std::string::npos) return UniqueFd();
    const long tgid = std::strtol(status->content.c_str() + at + 6, nullptr, 10);
    return UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(tgid), 0)));
}

}  // namespace

sock_fprog handedSocketFilter() {
    return sock_fprog{static_cast<unsigned short>(std::size(kHandedSocketFilter)),
                      const_cast<sock_filter*>(kHandedSocketFilter)};
}

Status confineHandedSocket(int fd) {
    const char device[] = "lo";
    if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, device, sizeof(device)) < 0)
        return Error::fromErrno("setsockopt(SO_BINDTODEVICE, \"lo\")");
    sock_fprog program = handedSocketFilter();
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof(program)) < 0)
        return Error::fromErrno("setsockopt(SO_ATTACH_FILTER)");
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof(one)) < 0)
        return Error::fromErrno("setsockopt(SO_LOCK_FILTER)");
    return okStatus();
}

std::optional<std::string> directIngressProblem() {
    UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return "socket(AF_INET): " + errnoName(errno);
    if (auto s = confineHandedSocket(fd.get()); !s) {
        if (s.error().errnum() == EPERM)
            return s.error().describe() +
                   " (this kernel lets only CAP_NET_ADMIN filter a TCP socket; as root it can)";
        return s.error().describe();
    }
    if (auto problem = listenerCgroupProblem())
        return "cannot make the listeners in a cgroup that refuses their bind and connect: " +
               *problem;
    return std::nullopt;
}

DirectIngress::DirectIngress(uint16_t port, std::vector<int> listeners)
    : port_(port), listeners_(std::move(listeners)) {}

bool DirectIngress::wasHanded(int listener) const {
    return std::find(handed_listeners_.begin(), handed_listeners_.end(), listener) !=
           handed_listeners_.end();
}

void DirectIngress::freezeHandable(const std::vector<int>& kept) {
    listeners_ = kept;
    handed_listeners_ = kept;
}

namespace {

// The pids of every thread's children under `pid`, as the kernel lists them.
void childrenOf(pid_t pid, std::vector<pid_t>& out) {
    const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
    DIR* dir = opendir(tasks.c_str());
    if (!dir) return;
    while (dirent* task = readdir(dir)) {
        if (task->d_name[0] == '.') continue;
        const std::string path = tasks + "/" + task->d_name + "/children";
        auto list = readSmallFile(AT_FDCWD, path.c_str(), path, 64 * 1024);
        if (!list) continue;
        const char* p = list->content.c_str();
        char* end = nullptr;
        for (long child = std::strtol(p, &end, 10); end != p; child = std::strtol(p, &end, 10)) {
            out.push_back(static_cast<pid_t>(child));
            p = end;
        }
    }
    closedir(dir);
}

}  // namespace

std::vector<int> DirectIngress::heldBySandbox() const {
    std::vector<std::pair<std::string, int>> wanted;  // "socket:[INODE]", listener
    for (int listener : handed_listeners_) {
        struct stat st {};
        if (fstat(listener, &st) == 0)
            wanted.emplace_back("socket:[" + std::to_string(st.st_ino) + "]", listener);
    }
    std::vector<int> held;
    if (wanted.empty() || !sandbox_pid_) return held;
    // Orphans of the sandbox are reparented to its init (the PID
    // namespace's reaper), so the tree under init is every process in it.
    // Bounded in processes and in fd links read, since a sandbox chooses
    // both and this runs on the supervisor's one thread on every tick before
    // ready: past either bound every listener not yet found counts as held,
    // which releases nothing.
    constexpr size_t kMaxProcesses = 4096;
    constexpr size_t kMaxLinks = 16384;
    size_t links = 0;
    std::vector<pid_t> pids{sandbox_pid_};
    for (size_t i = 0; i < pids.size() && i < kMaxProcesses && links < kMaxLinks && !wanted.empty();
         ++i) {
        childrenOf(pids[i], pids);
        const std::string fds = "/proc/" + std::to_string(pids[i]) + "/fd";
        DIR* dir = opendir(fds.c_str());
        if (!dir) continue;
        char link[64];
        while (dirent* entry = readdir(dir)) {
            if (entry->d_name[0] == '.') continue;
            if (++links > kMaxLinks) break;
            ssize_t n = readlinkat(dirfd(dir), entry->d_name, link, sizeof(link) - 1);
            if (n <= 0) continue;
            link[n] = '\0';
            for (auto it = wanted.begin(); it != wanted.end(); ++it)
                if (it->first == link) {
                    held.push_back(it->second);
                    wanted.erase(it);
                    break;
                }
        }
        closedir(dir);
    }
    if (pids.size() > kMaxProcesses || links > kMaxLinks)
        for (const auto& [name, listener] : wanted) held.push_back(listener);
    return held;
}

Status DirectIngress::setSandbox(pid_t sandbox_pid) {
    const std::string path = "/proc/" + std::to_string(sandbox_pid) + "/ns/net";
    struct stat st {};
    if (stat(path.c_str(), &st) < 0) return Error::fromErrno("stat(\"" + path + "\")");
    sandbox_pid_ = sandbox_pid;
    sandbox_netns_ = st.st_ino;
    sandbox_netns_dev_ = st.st_dev;
    return okStatus();
}

// The kernel's answer, not the sandbox's word: SIOCGSKNS opens the socket's
// own network namespace. It needs CAP_NET_ADMIN over that namespace, which
// the supervisor has over the sandbox's in both modes (its user namespace is
// the supervisor's child) and, rootless, not over the host's: EPERM there
// means the host's, as a namespace other than the sandbox's does.
bool DirectIngress::inSandboxNetns(int fd) const {
    UniqueFd ns(ioctl(fd, SIOCGSKNS));
    if (!ns) return false;
    struct stat st {};
    return fstat(ns.get(), &st) == 0 && st.st_ino == sandbox_netns_ &&
           st.st_dev == sandbox_netns_dev_;
}

std::optional<seccomp::ServedAnswer> DirectIngress::serve(int listener_fd,
                                                          const seccomp_notif& call) {
    if (call.data.nr != __NR_listen) return std::nullopt;
    ++listens_;
    // Both are ints to the kernel: the upper halves are ignored, as it does.
    const int target = static_cast<int>(call.data.args[0]);
    const int backlog = static_cast<int>(call.data.args[1]);
    UniqueFd pidfd = openCaller(call.pid);
    if (!pidfd) return seccomp::ServedAnswer{0, ESRCH};  // gone: the answer reaches no one
    // The pid could have been reused before pidfd_open: a notification still
    // pending means the pidfd is the caller's.
    uint64_t id = call.id;
    if (ioctl(listener_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0)
        return seccomp::ServedAnswer{0, ESRCH};
    UniqueFd theirs(static_cast<int>(syscall(SYS_pidfd_getfd, pidfd.get(), target, 0)));
    if (!theirs) return seccomp::ServedAnswer{0, errno};  // EBADF: not an open fd

    const int domain = intOption(theirs.get(), SOL_SOCKET, SO_DOMAIN, -1);
    const int type = intOption(theirs.get(), SOL_SOCKET, SO_TYPE, -1);
    const int protocol = intOption(theirs.get(), SOL_SOCKET, SO_PROTOCOL, -1);
    // Not a TCP socket (a unix one, or no socket: the kernel says ENOTSOCK):
    // nothing of the host's is involved.
    if ((domain != AF_INET && domain != AF_INET6) || type != SOCK_STREAM || protocol != IPPROTO_TCP)
        return performListen(theirs.get(), backlog);

    struct stat st {};
    if (fstat(theirs.get(), &st) == 0)
        for (int listener : listeners_) {
            struct stat mine {};
            // Ours already (a second listen on it): only the backlog changes.
            if (fstat(listener, &mine) == 0 && mine.st_ino == st.st_ino && mine.st_dev == st.st_dev)
                return performListen(listener, backlog);
        }
    // A socket of the host's that is not a listener of ours: one accepted
    // from it. The supervisor acts on no other host socket; a socket that
    // was connected cannot become a listener of the published port anyway.
    if (!inSandboxNetns(theirs.get())) return seccomp::ServedAnswer{0, EINVAL};

    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    if (getsockname(theirs.get(), reinterpret_cast<sockaddr*>(&bound), &length) < 0 ||
        portOf(bound) != port_ || !isLoopbackOrAny(bound)) {
        // A port of the sandbox's own. An unbound socket's listen takes an
        // ephemeral port, known only after it.
        seccomp::ServedAnswer answer = performListen(theirs.get(), backlog);
        length = sizeof(bound);
        if (answer.error == 0 && other_ports_.size() < 8 &&
            getsockname(theirs.get(), reinterpret_cast<sockaddr*>(&bound), &length) == 0 &&
            portOf(bound) != port_ &&
            std::find(other_ports_.begin(), other_ports_.end(), portOf(bound)) ==
                other_ports_.end())
            other_ports_.push_back(portOf(bound));
        return answer;
    }
    // Connected (bound to the port, then connected inside): the kernel's
    // EINVAL, as bare; a listen never turns a connection into a listener.
    sockaddr_storage peer{};
    socklen_t peer_length = sizeof(peer);
    if (getpeername(theirs.get(), reinterpret_cast<sockaddr*>(&peer), &peer_length) == 0)
        return performListen(theirs.get(), backlog);
    for (int listener : listeners_) {
        sockaddr_storage mine{};
        socklen_t mine_length = sizeof(mine);
        if (getsockname(listener, reinterpret_cast<sockaddr*>(&mine), &mine_length) == 0 &&
            mine.ss_family == domain)
            return handOver(listener_fd, call, theirs.get(), listener, backlog);
    }
    // No host listener of that family (no IPv6 loopback on the host): the
    // server keeps its own socket, and the forwarder serves.
    return performListen(theirs.get(), backlog);
}

seccomp::ServedAnswer DirectIngress::handOver(int listener_fd, const seccomp_notif& call,
                                              int theirs, int listener, int backlog) {
    // What of the server's socket a server would notice: blocking or not,
    // close-on-exec or not, its backlog, and TCP_DEFER_ACCEPT. The listener
    // is shared by every sandbox process it is handed to (a second worker
    // listening on the port gets the same one), so the last word wins.
    const int status_flags = fcntl(theirs, F_GETFL);
    const int mine = fcntl(listener, F_GETFL);
    if (status_flags >= 0 && mine >= 0)
        fcntl(listener, F_SETFL, (mine & ~O_NONBLOCK) | (status_flags & O_NONBLOCK));
    const int defer = intOption(theirs, IPPROTO_TCP, TCP_DEFER_ACCEPT, 0);
    setsockopt(listener, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer, sizeof(defer));
    if (::listen(listener, backlog) < 0) return {0, errno};

    seccomp_notif_addfd addfd{};
    addfd.id = call.id;
    addfd.flags = SECCOMP_ADDFD_FLAG_SETFD;
    addfd.srcfd = static_cast<uint32_t>(listener);
    addfd.newfd = static_cast<uint32_t>(call.data.args[0] & 0xffffffffU);
    addfd.newfd_flags = closeOnExec(call.pid, static_cast<int>(addfd.newfd)) ? O_CLOEXEC : 0;
    if (ioctl(listener_fd, SECCOMP_IOCTL_NOTIF_ADDFD, &addfd) < 0) {
        // ENOENT: the caller went away or was interrupted; a restarted
        // listen comes back here. Otherwise (a kernel before 5.9) the server
        // keeps its own socket and the forwarder serves.
        if (errno == ENOENT) return {0, EINTR};
        return performListen(theirs, backlog);
    }
    if (!wasHanded(listener)) handed_listeners_.push_back(listener);
    if (!handed_family_) {
        sockaddr_storage address{};
        socklen_t length = sizeof(address);
        if (getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0)
            handed_family_ = address.ss_family;
    }
    ++handed_;
    return {0, 0};
}

}  // namespace stockade
