#include "runtime/net/listener_cgroup.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <thread>

#include "base/bpf_insn.h"
#include "base/fault_injection.h"
#include "base/fd_passing.h"
#include "runtime/cgroups/cgroup_fs.h"
#include "runtime/child/listener_cgroup_in_child.h"
#include "runtime/net/direct_ingress.h"

namespace stockade {

namespace {

constexpr const char* kLeafPrefix = "stockade-listeners-";

// The context of a cgroup/bind and cgroup/connect program (struct
// bpf_sock_addr, <linux/bpf.h>): 4-byte fields, addresses and port in
// network byte order as the caller passed them.
constexpr int16_t kUserFamily = offsetof(bpf_sock_addr, user_family);
constexpr int16_t kUserIp4 = offsetof(bpf_sock_addr, user_ip4);
constexpr int16_t kUserIp6 = offsetof(bpf_sock_addr, user_ip6);
constexpr int16_t kUserPort = offsetof(bpf_sock_addr, user_port);

// r2 = *(u32 *)(ctx + off)
bpf_insn loadContext(int16_t off) {
    return bpfInstruction(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, off, 0);
}

// The program returns 1 (let the call go on) or 0 (the caller gets EPERM;
// a bind program's other bits only skip checks, which these never ask for).
// A bind program lets through only `family`'s loopback at `port` (network
// order), exactly as the listener binds; a connect program nothing.
std::vector<bpf_insn> program(bpf_attach_type type, uint16_t port) {
    std::vector<bpf_insn> code;
    std::vector<size_t> to_deny;
    auto requireEqual = [&](int16_t off, uint32_t value) {
        code.push_back(loadContext(off));
        to_deny.push_back(code.size());
        // The immediate is sign-extended; every value here is below 2^31.
        code.push_back(bpfInstruction(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 0,
                                      static_cast<int32_t>(value)));
    };
    if (type == BPF_CGROUP_INET4_BIND) {
        requireEqual(kUserFamily, AF_INET);
        requireEqual(kUserIp4, htonl(INADDR_LOOPBACK));
        requireEqual(kUserPort, htons(port));
    } else if (type == BPF_CGROUP_INET6_BIND) {
        requireEqual(kUserFamily, AF_INET6);
        for (int16_t word = 0; word < 4; ++word)
            requireEqual(static_cast<int16_t>(kUserIp6 + 4 * word), word == 3 ? htonl(1) : 0);
        requireEqual(kUserPort, htons(port));
    }
    if (!to_deny.empty()) {
        code.push_back(bpfInstruction(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1));
        code.push_back(bpfInstruction(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
    }
    const size_t deny = code.size();
    for (size_t at : to_deny) code[at].off = static_cast<int16_t>(deny - at - 1);
    code.push_back(bpfInstruction(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0));
    code.push_back(bpfInstruction(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
    return code;
}

const char* attachName(bpf_attach_type type) {
    switch (type) {
        case BPF_CGROUP_INET4_BIND:
            return "BPF_CGROUP_INET4_BIND";
        case BPF_CGROUP_INET6_BIND:
            return "BPF_CGROUP_INET6_BIND";
        case BPF_CGROUP_INET4_CONNECT:
            return "BPF_CGROUP_INET4_CONNECT";
        default:
            return "BPF_CGROUP_INET6_CONNECT";
    }
}

constexpr bpf_attach_type kHooks[] = {BPF_CGROUP_INET4_BIND, BPF_CGROUP_INET6_BIND,
                                      BPF_CGROUP_INET4_CONNECT, BPF_CGROUP_INET6_CONNECT};

Result<UniqueFd> loadProgram(bpf_attach_type type, uint16_t port) {
    const std::vector<bpf_insn> code = program(type, port);
    bpf_attr attr{};
    attr.prog_type = BPF_PROG_TYPE_CGROUP_SOCK_ADDR;
    attr.expected_attach_type = type;  // a sock_addr program must name its hook
    attr.insns = reinterpret_cast<uintptr_t>(code.data());
    attr.insn_cnt = static_cast<uint32_t>(code.size());
    attr.license = reinterpret_cast<uintptr_t>("");  // calls no helper
    UniqueFd fd(faultInjected(FaultPoint::BpfProgLoad, injectedFault())
                    ? -1
                    : static_cast<int>(syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr))));
    if (!fd)
        return Error::fromErrno(std::string("bpf(BPF_PROG_LOAD, CGROUP_SOCK_ADDR for ") +
                                attachName(type) + ")");
    return fd;
}

// Flags 0: no program below this leaf (it has no children) and, should a
// parent carry programs with BPF_F_ALLOW_MULTI, those run as well: a parent
// may refuse more, never let through what these refuse.
Status attachProgram(int cgroup_fd, int program_fd, bpf_attach_type type) {
    bpf_attr attr{};
    attr.target_fd = static_cast<uint32_t>(cgroup_fd);
    attr.attach_bpf_fd = static_cast<uint32_t>(program_fd);
    attr.attach_type = type;
    attr.attach_flags = 0;
    if (syscall(SYS_bpf, BPF_PROG_ATTACH, &attr, sizeof(attr)) < 0)
        return Error::fromErrno(std::string("bpf(BPF_PROG_ATTACH, ") + attachName(type) + ")");
    return okStatus();
}

// rmdir, waiting out the moment a reaped child's cgroup still counts it.
Status removeLeaf(const std::string& path) {
    for (int attempt = 0;; ++attempt) {
        if (rmdir(path.c_str()) == 0 || errno == ENOENT) return okStatus();
        if (errno != EBUSY || attempt >= 200) return Error::fromErrno("rmdir(\"" + path + "\")");
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

// The leaf of a stockade killed between mkdir and rmdir: removed by the next.
void removeStaleLeaves(const std::string& mount) {
    if (DIR* dir = opendir(mount.c_str())) {
        while (dirent* entry = readdir(dir)) {
            const std::string name = entry->d_name;
            if (entry->d_type != DT_DIR || !name.starts_with(kLeafPrefix)) continue;
            const pid_t owner =
                std::atoi(name.c_str() + std::char_traits<char>::length(kLeafPrefix));
            if (owner > 0 && kill(owner, 0) < 0 && errno == ESRCH)
                (void)rmdir((mount + "/" + name).c_str());
        }
        closedir(dir);
    }
}

class Leaf {
  public:
    static Result<Leaf> create(const std::string& mount) {
        Leaf leaf;
        leaf.path_ = mount + "/" + kLeafPrefix + std::to_string(getpid());
        if (mkdir(leaf.path_.c_str(), 0700) < 0) {
            // Ours from before (a pid reused after a kill): empty, so removable.
            if (errno != EEXIST || rmdir(leaf.path_.c_str()) < 0 ||
                mkdir(leaf.path_.c_str(), 0700) < 0)
                return Error::fromErrno("mkdir(\"" + leaf.path_ + "\")");
        }
        leaf.made_ = true;
        leaf.fd_.reset(open(leaf.path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!leaf.fd_) return Error::fromErrno("open(\"" + leaf.path_ + "\")");
        return leaf;
    }
    Leaf() = default;
    Leaf(Leaf&& other) noexcept
        : path_(std::move(other.path_)), fd_(std::move(other.fd_)), made_(other.made_) {
        other.made_ = false;
    }
    Leaf& operator=(Leaf&&) = delete;
    ~Leaf() { (void)remove(); }

    Status remove() {
        fd_.reset();
        if (!made_) return okStatus();
        made_ = false;
        return removeLeaf(path_);
    }
    int fd() const { return fd_.get(); }
    const std::string& path() const { return path_; }

  private:
    std::string path_;
    UniqueFd fd_;
    bool made_ = false;
};

std::string stepCall(ListenerStep step, int family, uint16_t port) {
    const std::string where = family == AF_INET6 ? "[::1]" : "127.0.0.1";
    switch (step) {
        case ListenerStep::Socket:
            return "socket() for " + where;
        case ListenerStep::BindToDevice:
            return "setsockopt(SO_BINDTODEVICE, \"lo\") for " + where;
        case ListenerStep::AttachFilter:
            return "setsockopt(SO_ATTACH_FILTER) for " + where;
        case ListenerStep::LockFilter:
            return "setsockopt(SO_LOCK_FILTER) for " + where;
        case ListenerStep::Bind:
            return "bind(" + where + ":" + std::to_string(port) + ")";
        case ListenerStep::Listen:
            return "listen(" + where + ")";
        default:
            return "send the listeners";
    }
}

// The child in the leaf: its report and listeners, then it is reaped.
Result<std::vector<UniqueFd>> makeInLeaf(const Leaf& leaf, uint16_t port,
                                         bool& confinement_failed) {
    ListenerPlan plan;
    plan.v4.sin_family = AF_INET;
    plan.v4.sin_port = htons(port);
    plan.v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    plan.v6.sin6_family = AF_INET6;
    plan.v6.sin6_port = htons(port);
    plan.v6.sin6_addr = in6addr_loopback;
    plan.filter = handedSocketFilter();

    int ends[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) < 0) {
        confinement_failed = true;
        return Error::fromErrno("socketpair()");
    }
    UniqueFd mine(ends[0]), theirs(ends[1]);
    int pidfd = -1;
    clone_args args{};
    args.flags = CLONE_INTO_CGROUP | CLONE_PIDFD;
    args.pidfd = reinterpret_cast<uintptr_t>(&pidfd);
    args.cgroup = static_cast<uint64_t>(leaf.fd());
    args.exit_signal = 0;  // reaped through its pidfd; no SIGCHLD for the supervisor
    const long pid = syscall(SYS_clone3, &args, sizeof(args));
    if (pid == 0) makeListenersInChild(plan, theirs.get());
    if (pid < 0) {
        confinement_failed = true;
        return Error::fromErrno("clone3(CLONE_INTO_CGROUP of \"" + leaf.path() + "\")");
    }
    UniqueFd child(pidfd);
    theirs.reset();

    ListenerReport report;
    int fds[kMaxPassedFds];
    int count = 0;
    bool truncated = false;
    const ssize_t n =
        receiveWithFds(mine.get(), &report, sizeof(report), fds, &count, 0, &truncated);
    std::vector<UniqueFd> listeners;
    for (int i = 0; i < count; ++i) listeners.emplace_back(fds[i]);
    siginfo_t info{};
    while (syscall(SYS_waitid, P_PIDFD, child.get(), &info, WEXITED | __WALL, nullptr) < 0 &&
           errno == EINTR) {
    }
    if (n != static_cast<ssize_t>(sizeof(report)) || truncated) {
        confinement_failed = true;
        return Error::message("the listener child in \"" + leaf.path() +
                              "\" ended without its report");
    }
    const auto step = static_cast<ListenerStep>(report.failed);
    if (step != ListenerStep::None) {
        // A bind or listen of the port is the port's failure, said as the
        // plain listeners say it; anything else is the confinement's.
        confinement_failed = step != ListenerStep::Bind && step != ListenerStep::Listen;
        return Error::fromErrno(stepCall(step, report.family, port) +
                                    (report.err == EADDRINUSE ? " (the port is in use)" : ""),
                                report.err);
    }
    if (static_cast<int>(listeners.size()) != report.count || listeners.empty()) {
        confinement_failed = true;
        return Error::message("the listener child sent " + std::to_string(listeners.size()) +
                              " listeners, said " + std::to_string(report.count));
    }
    return listeners;
}

}  // namespace

Result<std::vector<UniqueFd>> listenInListenerCgroup(uint16_t port, bool& confinement_failed) {
    confinement_failed = true;
    if (geteuid() != 0)
        return Error::message("needs root (cgroup socket programs need CAP_BPF and CAP_NET_ADMIN)");
    const std::string mount = findCgroup2Mount(readCgroupFileOr("/proc/self/mountinfo"));
    if (mount.empty())
        return Error::message("no cgroup2 filesystem is mounted (/proc/self/mountinfo)");
    removeStaleLeaves(mount);
    std::vector<UniqueFd> programs;
    for (bpf_attach_type hook : kHooks) {
        auto fd = loadProgram(hook, port);
        if (!fd) return fd.error();
        programs.push_back(std::move(*fd));
    }
    auto leaf = Leaf::create(mount);
    if (!leaf) return leaf.error();
    for (size_t i = 0; i < programs.size(); ++i)
        if (auto s = attachProgram(leaf->fd(), programs[i].get(), kHooks[i]); !s)
            return s.error().withContext("attach to \"" + leaf->path() + "\"");
    auto listeners = makeInLeaf(*leaf, port, confinement_failed);
    // The sockets hold the cgroup and its programs from here (measured on
    // Linux 6.18: after rmdir, binds and connects are still refused, and the
    // programs are freed once the last socket closes).
    if (auto s = leaf->remove(); !s) {
        confinement_failed = true;
        return s.error();
    }
    return listeners;
}

std::optional<std::string> listenerCgroupProblem() {
    bool confinement_failed = false;
    auto listeners = listenInListenerCgroup(0, confinement_failed);
    if (listeners || !confinement_failed) return std::nullopt;
    return listeners.error().describe();
}

}  // namespace stockade
