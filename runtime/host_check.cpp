#include "runtime/host_check.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "base/unique_fd.h"
#include "namespaces/landlock_in_child.h"
#include "namespaces/mount_in_child.h"
#include "namespaces/mount_plan.h"
#include "namespaces/net_in_child.h"
#include "namespaces/user.h"
#include "namespaces/uts_in_child.h"
#include "runtime/cgroup_fs.h"
#include "runtime/cgroup_limits.h"
#include "runtime/nftables.h"
#include "runtime/privileges_in_child.h"
#include "runtime/veth_backend.h"
#include "seccomp/default_program.h"
#include "seccomp/install_in_child.h"

namespace stockade {

namespace {

using Clock = std::chrono::steady_clock;

// A probe child that has not finished by then is killed: a kernel that
// hangs on one of these calls is a finding, not a reason to hang `check`.
constexpr auto kProbeTimeout = std::chrono::seconds(10);
constexpr uid_t kNobody = 65534;

// ------------------------------------------------------------ host files

std::string readFile(const std::string& path) {
    UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return "";
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd.get(), buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
}

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

int statusField(const std::string& status, const std::string& key) {
    auto at = status.find("\n" + key + ":");
    if (at == std::string::npos) return -1;
    return std::atoi(status.c_str() + at + key.size() + 2);
}

int openForWriteErrno(const std::string& path) {
    // Opening asks the kernel the permission question (mode, owner, LSMs,
    // a read-only mount) that writing would; closing without writing
    // changes nothing.
    UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
    return fd ? 0 : errno;
}

int writableDirErrno(const std::string& path) {
    return faccessat(AT_FDCWD, path.c_str(), W_OK | X_OK, AT_EACCESS) == 0 ? 0 : errno;
}

std::string fsName(const std::string& path) {
    static constexpr std::pair<unsigned long, const char*> kMagic[] = {
        {0xEF53, "ext4"},      {0x58465342, "xfs"},       {0x9123683E, "btrfs"},
        {0x01021994, "tmpfs"}, {0x794C7630, "overlayfs"}, {0x6969, "nfs"},
        {0x65735546, "fuse"},  {0x2FC12FC1, "zfs"},       {0xF2F52010, "f2fs"},
        {0x01021997, "9p"},    {0x73717368, "squashfs"}};
    struct statfs st;
    if (statfs(path.c_str(), &st) < 0) return "unknown filesystem";
    for (const auto& [magic, name] : kMagic)
        if (static_cast<unsigned long>(st.f_type) == magic) return name;
    char buf[32];
    std::snprintf(buf, sizeof(buf), "filesystem 0x%lx", static_cast<unsigned long>(st.f_type));
    return buf;
}

uint64_t microsSince(Clock::time_point start) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
}

// ------------------------------------------------------------ probe children
//
// A probe child reports each step it reaches as one fixed-size message over
// a pipe (smaller than PIPE_BUF, so each write is atomic), then _exits. A
// child that dies mid-way still leaves every step before the fatal one.

struct StepMessage {
    int32_t step;
    int32_t err;
};

void reportInChild(int fd, int step, int err) noexcept {
    StepMessage m{step, err};
    while (write(fd, &m, sizeof(m)) < 0 && errno == EINTR) {
    }
}

struct ProbeRun {
    std::vector<StepMessage> steps;
    std::string death;  // how the child ended, when not by _exit(0)
};

// Reads step messages until EOF; false when the deadline passed first.
bool collectSteps(int fd, ProbeRun& run, Clock::time_point deadline) {
    std::string bytes;
    char buf[512];
    while (true) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) return false;
        pollfd pfd{fd, POLLIN, 0};
        int ready = poll(&pfd, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return false;
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        bytes.append(buf, static_cast<size_t>(n));
    }
    for (size_t at = 0; at + sizeof(StepMessage) <= bytes.size(); at += sizeof(StepMessage)) {
        StepMessage m;
        std::memcpy(&m, bytes.data() + at, sizeof(m));
        run.steps.push_back(m);
    }
    return true;
}

std::string describeEnding(int status, bool timed_out) {
    if (timed_out) return "did not finish within 10 s and was killed";
    if (WIFEXITED(status)) {
        if (WEXITSTATUS(status) == 0) return "";
        return "exited with status " + std::to_string(WEXITSTATUS(status));
    }
    if (WIFSIGNALED(status)) {
        const char* name = sigabbrev_np(WTERMSIG(status));
        return std::string("was killed by SIG") + (name ? name : std::to_string(WTERMSIG(status)));
    }
    return "ended with wait status " + std::to_string(status);
}

void reap(pid_t pid, ProbeRun& run, bool timed_out) {
    if (timed_out) kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    run.death = describeEnding(status, timed_out);
}

// Runs `inChild(report_fd)` in a forked child. Only async-signal-safe code
// may run there (the caller may have threads); it dies with its parent, so a
// killed `stockade check` leaves no probe behind.
template <class InChild>
ProbeRun runForked(InChild&& inChild) {
    ProbeRun run;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        run.death = "could not start: " + Error::fromErrno("pipe2()").describe();
        return run;
    }
    UniqueFd read_end(p[0]), write_end(p[1]);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        run.death = "could not start: " + Error::fromErrno("fork()").describe();
        return run;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != parent) _exit(1);
        inChild(p[1]);
        _exit(0);
    }
    write_end.reset();
    bool finished = collectSteps(read_end.get(), run, Clock::now() + kProbeTimeout);
    reap(pid, run, !finished);
    return run;
}

// ------------------------------------------------------------ child side
//
// Everything from here to the parent-side probes runs after fork or clone3:
// system calls on data allocated before, no allocation, no exceptions.

struct SandboxProbePlan {
    ns::MountPlan mounts;
    std::vector<SandboxStep> op_steps;  // the step each mount op proves
    uid_t uid = 0;
    gid_t gid = 0;
    int last_cap = 40;
    int report_fd = -1;
    int go_fd = -1;
    int go_write_fd = -1;  // the parent's end, closed at once so its EOF is seen
};

// The sandbox child's setup sequence (runtime/child_in_child.cpp), in the
// same order and through the same functions, up to the exec it stops short of.
[[noreturn]] void sandboxProbeInChild(SandboxProbePlan& plan) noexcept {
    auto report = [&](SandboxStep step, int err) {
        reportInChild(plan.report_fd, static_cast<int>(step), err);
    };
    close(plan.go_write_fd);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    char go = 0;
    ssize_t n;
    while ((n = read(plan.go_fd, &go, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1 || go != 1) _exit(0);  // the maps could not be written, or the parent is gone

    int err = keepCapabilitiesAcrossSetuidInChild();
    if (err == 0 && (setresgid(plan.gid, plan.gid, plan.gid) < 0 ||
                     setresuid(plan.uid, plan.uid, plan.uid) < 0))
        err = errno;
    report(SandboxStep::SetIds, err);
    if (err) _exit(0);
    // The uid change cleared the parent-death signal (prctl(2)).
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    report(SandboxStep::CgroupNs, unshare(CLONE_NEWCGROUP) < 0 ? errno : 0);

    err = ns::makeMountsPrivateInChild();
    report(SandboxStep::PrivateMounts, err);
    if (err) _exit(0);
    size_t failed = 0;
    if ((err = ns::openSourcesInChild(plan.mounts, &failed))) {
        report(plan.op_steps[failed], err);
        _exit(0);
    }
    if ((err = ns::buildRootInChild(plan.mounts, &failed))) {
        report(failed < plan.op_steps.size() ? plan.op_steps[failed] : SandboxStep::RootTmpfs, err);
        _exit(0);
    }
    report(SandboxStep::RootTmpfs, 0);
    for (SandboxStep step : plan.op_steps) report(step, 0);
    ns::closeSourcesInChild(plan.mounts);
    err = ns::sealRootInChild(plan.mounts);
    report(SandboxStep::SealRoot, err);
    if (err) _exit(0);
    err = ns::pivotRootInChild(plan.mounts);
    report(SandboxStep::PivotRoot, err);
    if (err) _exit(0);

    // Nothing of the host's fds stays, as in the sandbox (judged elsewhere).
    if (plan.report_fd > 0) syscall(SYS_close_range, 0U, plan.report_fd - 1U, 0U);
    syscall(SYS_close_range, plan.report_fd + 1U, ~0U, 0U);

    static constexpr char kHostname[] = "stockade";
    report(SandboxStep::Hostname, ns::setHostnameInChild(kHostname, sizeof(kHostname) - 1));
    report(SandboxStep::Loopback, ns::bringLoopbackUpInChild());
    report(SandboxStep::Dumpable, prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ? errno : 0);
    int failed_step = 0;
    report(SandboxStep::DropCapabilities, dropAllPrivilegesInChild(plan.last_cap, &failed_step));
    report(SandboxStep::NoNewPrivs, setNoNewPrivsInChild());
    _exit(0);
}

struct NamespaceKind {
    const char* name;  // as in /proc/sys/user/max_<name>_namespaces
    int flag;
};
constexpr NamespaceKind kNamespaces[] = {
    {"user", CLONE_NEWUSER},     {"mnt", CLONE_NEWNS},  {"pid", CLONE_NEWPID},
    {"net", CLONE_NEWNET},       {"ipc", CLONE_NEWIPC}, {"uts", CLONE_NEWUTS},
    {"cgroup", CLONE_NEWCGROUP},
};
constexpr size_t kNamespaceCount = sizeof(kNamespaces) / sizeof(kNamespaces[0]);

// Each namespace alone, the others inside the user namespace as the
// sandbox's clone3 makes them, so the one at fault has a name.
void unshareEachInChild(int fd) noexcept {
    for (size_t i = 0; i < kNamespaceCount; ++i) {
        int err = unshare(kNamespaces[i].flag) < 0 ? errno : 0;
        reportInChild(fd, static_cast<int>(i), err);
        if (i == 0 && err) return;
    }
}

void seccompInChild(int fd) noexcept {
    auto report = [&](SeccompStep step, int err) {
        reportInChild(fd, static_cast<int>(step), err);
    };
    int err = setNoNewPrivsInChild();
    report(SeccompStep::NoNewPrivs, err);
    if (err) return;
    sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    sock_fprog allow_all{1, allow};
    err = seccomp::installFilterInChild(allow_all);
    report(SeccompStep::AllowAll, err);
    if (err) return;
    int listener = -1;
    err = seccomp::installFilterWithListenerInChild(allow_all, &listener);
    if (err == 0) close(listener);
    report(SeccompStep::Listener, err);
    // Last: after the default filter only write and _exit are needed.
    auto program = seccomp::defaultProgram();
    sock_fprog fprog{static_cast<unsigned short>(program.size()),
                     const_cast<sock_filter*>(program.data())};
    report(SeccompStep::DefaultFilter, seccomp::installFilterInChild(fprog));
}

constexpr std::pair<const char*, int> kRlimits[] = {
    {"RLIMIT_AS", RLIMIT_AS},       {"RLIMIT_NPROC", RLIMIT_NPROC},   {"RLIMIT_CPU", RLIMIT_CPU},
    {"RLIMIT_FSIZE", RLIMIT_FSIZE}, {"RLIMIT_NOFILE", RLIMIT_NOFILE},
};
constexpr int kCloseRangeStep = 100;

void basicsInChild(int fd) noexcept {
    for (size_t i = 0; i < sizeof(kRlimits) / sizeof(kRlimits[0]); ++i) {
        // Lowering the hard limit to the soft one is always permitted, and
        // dies with this child.
        rlimit limit;
        int err = getrlimit(kRlimits[i].second, &limit) < 0 ? errno : 0;
        limit.rlim_max = limit.rlim_cur;
        if (err == 0 && setrlimit(kRlimits[i].second, &limit) < 0) err = errno;
        reportInChild(fd, static_cast<int>(i), err);
    }
    // Above every fd this child has: closes nothing, answers ENOSYS before 5.9.
    int err = syscall(SYS_close_range, ~0U - 1, ~0U, 0U) < 0 ? errno : 0;
    reportInChild(fd, kCloseRangeStep, err);
}

// ------------------------------------------------------------ parent side

SandboxProbePlan sandboxProbePlan(const HostFacts& facts) {
    SandboxProbePlan plan;
    plan.uid = facts.sandbox_uid;
    plan.gid = facts.sandbox_gid;
    plan.mounts.staging = "/tmp";
    plan.mounts.root_options = "mode=0755,size=1m";
    using ns::MountKind;
    if (access("/usr", F_OK) == 0) {
        ns::addOp(plan.mounts, {.kind = MountKind::BindFromHost,
                                .source = "/usr",
                                .target = "usr",
                                .description = "mount /usr read-only"});
        plan.op_steps.push_back(SandboxStep::BindReadOnly);
    }
    ns::addOp(plan.mounts,
              {.kind = MountKind::Tmpfs, .target = "tmp", .data = "mode=1777,size=1m"});
    plan.op_steps.push_back(SandboxStep::TmpTmpfs);
    ns::addOp(plan.mounts, {.kind = MountKind::Proc, .target = "proc"});
    plan.op_steps.push_back(SandboxStep::Proc);
    std::string cap = trimmed(readFile("/proc/sys/kernel/cap_last_cap"));
    if (!cap.empty()) plan.last_cap = std::atoi(cap.c_str());
    return plan;
}

// The sandbox's own clone3, flags and all, then its child sequence.
void probeSandbox(HostFacts& facts) {
    SandboxProbePlan plan = sandboxProbePlan(facts);
    int report[2], go[2];
    if (pipe2(report, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0) {
        facts.sandbox_death = "could not start: " + Error::fromErrno("pipe2()").describe();
        return;
    }
    UniqueFd report_r(report[0]), report_w(report[1]), go_r(go[0]), go_w(go[1]);
    plan.report_fd = report[1];
    plan.go_fd = go[0];
    plan.go_write_fd = go[1];

    int pidfd = -1;
    clone_args args{};
    args.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                 CLONE_NEWUTS | CLONE_PIDFD;
    args.pidfd = reinterpret_cast<uintptr_t>(&pidfd);
    args.exit_signal = SIGCHLD;
    long pid = syscall(SYS_clone3, &args, sizeof(args));
    if (pid == 0) sandboxProbeInChild(plan);
    if (pid < 0) {
        facts.sandbox[SandboxStep::Clone3] = errno;
        return;
    }
    facts.sandbox[SandboxStep::Clone3] = 0;
    UniqueFd pidfd_owner(pidfd);
    report_w.reset();
    go_r.reset();

    facts.sandbox[SandboxStep::PidfdSignal] =
        syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0U) < 0 ? errno : 0;
    ns::IdMapping ids{facts.sandbox_uid, facts.sandbox_host_uid, facts.sandbox_gid,
                      facts.sandbox_host_gid};
    Status maps = ns::writeIdMaps(static_cast<pid_t>(pid), ids);
    facts.sandbox[SandboxStep::IdMaps] = maps                    ? 0
                                         : maps.error().errnum() ? maps.error().errnum()
                                                                 : EPERM;
    if (!maps) facts.id_maps_error = maps.error().describe();
    char byte = maps ? 1 : 0;
    (void)!write(go_w.get(), &byte, 1);
    go_w.reset();

    ProbeRun run;
    bool finished = collectSteps(report_r.get(), run, Clock::now() + kProbeTimeout);
    for (const StepMessage& m : run.steps) facts.sandbox[static_cast<SandboxStep>(m.step)] = m.err;
    if (!finished) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0U);
    siginfo_t info{};
    if (syscall(SYS_waitid, P_PIDFD, pidfd, &info, WEXITED, nullptr) == 0) {
        facts.sandbox[SandboxStep::PidfdWait] = 0;
        int status = info.si_code == CLD_EXITED ? (info.si_status & 0xff) << 8 : info.si_status;
        facts.sandbox_death = describeEnding(status, !finished);
    } else {
        facts.sandbox[SandboxStep::PidfdWait] = errno;
        reap(static_cast<pid_t>(pid), run, !finished);
        facts.sandbox_death = run.death;
    }
}

void probeUnshareEach(HostFacts& facts) {
    ProbeRun run = runForked(unshareEachInChild);
    for (const StepMessage& m : run.steps)
        if (m.step >= 0 && static_cast<size_t>(m.step) < kNamespaceCount)
            facts.unshare[kNamespaces[m.step].name] = m.err;
}

void probePlainClone3(HostFacts& facts) {
    int pidfd = -1;
    clone_args args{};
    args.flags = CLONE_PIDFD;
    args.pidfd = reinterpret_cast<uintptr_t>(&pidfd);
    args.exit_signal = SIGCHLD;
    long pid = syscall(SYS_clone3, &args, sizeof(args));
    if (pid == 0) _exit(0);
    facts.plain_clone3 = pid < 0 ? errno : 0;
    if (pid < 0) return;
    UniqueFd owner(pidfd);
    while (waitpid(static_cast<pid_t>(pid), nullptr, 0) < 0 && errno == EINTR) {
    }
}

void probeSeccomp(HostFacts& facts) {
    facts.default_filter_instructions = seccomp::defaultProgram().size();
    ProbeRun run = runForked(seccompInChild);
    for (const StepMessage& m : run.steps) facts.seccomp[static_cast<SeccompStep>(m.step)] = m.err;
}

void probeLandlockEnforcement(HostFacts& facts) {
    facts.landlock = ns::probeLandlock();
    if (facts.landlock.abi <= 0) return;
    ns::LandlockRequest request;  // no rules: every handled right denied
    auto plan = ns::buildLandlockPlan(request);
    if (!plan) {
        facts.landlock_error = plan.error().describe();
        return;
    }
    const ns::LandlockPlan& ruleset = *plan;
    ProbeRun run = runForked([&ruleset](int fd) noexcept {
        int err = setNoNewPrivsInChild();
        if (err == 0) err = ns::restrictSelfInChild(ruleset);
        reportInChild(fd, 0, err);
    });
    if (!run.steps.empty()) facts.landlock_restrict = run.steps.front().err;
}

void probeBasics(HostFacts& facts) {
    ProbeRun run = runForked(basicsInChild);
    for (const StepMessage& m : run.steps) {
        if (m.step == kCloseRangeStep)
            facts.close_range = m.err;
        else if (m.step >= 0 && static_cast<size_t>(m.step) < std::size(kRlimits))
            facts.rlimits[kRlimits[m.step].first] = m.err;
    }
}

void probeVeth(HostFacts& facts) {
    if (auto nft = findNft()) facts.nft = *nft;
    if (facts.euid != 0) return;
    facts.veth_probed = true;
    if (auto s = probeVethBackend(); !s) facts.veth_error = s.error().describe();
}

// As root, a root-owned worktree is shown to the sandbox's unprivileged uid
// through an idmapped mount (G3). The mount is detached and dies with its fd.
void probeIdmap(HostFacts& facts, const HostCheckRequest& request) {
    std::error_code ec;
    std::string path =
        request.worktree ? *request.worktree : std::filesystem::temp_directory_path(ec).string();
    if (path.empty()) path = "/tmp";
    struct stat st;
    facts.worktree_root_owned =
        request.worktree && stat(request.worktree->c_str(), &st) == 0 && st.st_uid == 0;
    if (facts.euid != 0) return;
    facts.idmap_probed = true;
    facts.idmap_path = path;
    facts.idmap_fs = fsName(path);
    auto tree = ns::makeIdmappedTree(path, 0, 0, kNobody, kNobody);
    if (!tree) facts.idmap_error = tree.error().describe();
}

void probeCgroups(HostFacts& facts) {
    std::string self = readFile("/proc/self/cgroup");
    Cgroup2Facts& v2 = facts.cgroup2;
    v2.mount = findCgroup2Mount(readFile("/proc/self/mountinfo"));
    if (!v2.mount.empty()) {
        v2.root_controllers = trimmed(readFile(v2.mount + "/cgroup.controllers"));
        if (auto rel = cgroupPathOf(self, "")) {
            std::string own = *rel == "/" ? v2.mount : v2.mount + *rel;
            // The same place runtime/cgroup_limits.cpp makes its subtree.
            v2.path = facts.euid == 0 ? v2.mount : own;
            v2.controllers = trimmed(readFile(v2.path + "/cgroup.controllers"));
            v2.subtree_control = trimmed(readFile(v2.path + "/cgroup.subtree_control"));
            if (v2.path == own && access((own + "/cgroup.type").c_str(), F_OK) == 0)
                for (pid_t pid : pidsIn(readFile(own + "/cgroup.procs")))
                    if (pid != getpid()) ++v2.other_processes;
            v2.dir_errno = writableDirErrno(v2.path);
            v2.subtree_control_errno = openForWriteErrno(v2.path + "/cgroup.subtree_control");
            v2.procs_errno = openForWriteErrno(v2.path + "/cgroup.procs");
        }
    }
    // The same places runtime/cgroup_limits.cpp looks.
    for (const char* controller : {"memory", "pids"}) {
        Cgroup1Facts& v1 = facts.cgroup1[controller];
        std::string mount = std::string("/sys/fs/cgroup/") + controller;
        auto rel = cgroupPathOf(self, controller);
        v1.bound = rel.has_value();
        v1.mounted = access((mount + "/cgroup.procs").c_str(), F_OK) == 0;
        if (!v1.bound || !v1.mounted) continue;
        v1.path = *rel == "/" ? mount : mount + *rel;
        v1.dir_errno = writableDirErrno(v1.path);
        v1.procs_errno = openForWriteErrno(v1.path + "/cgroup.procs");
    }
}

void readHostSwitches(HostFacts& facts) {
    utsname u;
    if (uname(&u) == 0) facts.kernel = u.release;
    facts.unprivileged_userns_clone =
        trimmed(readFile("/proc/sys/kernel/unprivileged_userns_clone"));
    facts.apparmor_restrict_userns =
        trimmed(readFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"));
    for (const NamespaceKind& kind : kNamespaces)
        facts.max_namespaces[kind.name] =
            trimmed(readFile(std::string("/proc/sys/user/max_") + kind.name + "_namespaces"));
    std::string status = readFile("/proc/self/status");
    facts.seccomp_mode = statusField(status, "Seccomp");
    facts.seccomp_filters = std::max(0, statusField(status, "Seccomp_filters"));
    struct stat root, init_root;
    facts.chrooted = stat("/", &root) == 0 && stat("/proc/1/root", &init_root) == 0 &&
                     (root.st_dev != init_root.st_dev || root.st_ino != init_root.st_ino);
    std::istringstream mountinfo(readFile("/proc/self/mountinfo"));
    std::string line;
    while (std::getline(mountinfo, line)) {
        std::istringstream fields(line);
        std::string id, parent, devno, root_field, point;
        fields >> id >> parent >> devno >> root_field >> point;
        if (point.starts_with("/proc/")) facts.proc_overmounts.push_back(point);
    }
    facts.lsm = trimmed(readFile("/sys/kernel/security/lsm"));
    facts.dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    facts.exe = n > 0 ? std::string(exe, static_cast<size_t>(n)) : "/usr/local/bin/stockade";
}

}  // namespace

HostFacts probeHost(const HostCheckRequest& request) {
    HostFacts facts;
    facts.euid = geteuid();
    // The ids the sandbox maps by default (chooseIdentity): rootless, only
    // ourselves; as root, the unprivileged 65534, never root.
    facts.sandbox_uid = facts.sandbox_host_uid = facts.euid == 0 ? kNobody : facts.euid;
    facts.sandbox_gid = facts.sandbox_host_gid = facts.euid == 0 ? kNobody : getegid();
    auto timed = [&](const char* name, auto&& probe) {
        auto start = Clock::now();
        probe();
        facts.probe_us.emplace_back(name, microsSince(start));
    };
    // One after another: about 3 ms of work in all, though on a busy
    // machine each child's first wake-up can add a scheduler tick.
    timed("switches", [&] { readHostSwitches(facts); });
    timed("cgroups", [&] { probeCgroups(facts); });
    timed("seccomp", [&] { probeSeccomp(facts); });
    timed("landlock", [&] { probeLandlockEnforcement(facts); });
    timed("rlimits_close_range", [&] { probeBasics(facts); });
    timed("sandbox_clone", [&] { probeSandbox(facts); });
    if (auto clone = facts.sandbox.find(SandboxStep::Clone3);
        clone == facts.sandbox.end() || clone->second != 0) {
        timed("unshare_each", [&] { probeUnshareEach(facts); });
        timed("clone3_pidfd", [&] { probePlainClone3(facts); });
    }
    timed("idmapped_mount", [&] { probeIdmap(facts, request); });
    timed("veth_backend", [&] { probeVeth(facts); });
    return facts;
}

// ------------------------------------------------------------ judging

namespace {

struct Verdict {
    CheckState state = CheckState::Ok;
    std::string mechanism;
    std::string reason;
    std::string fix;
};

Verdict ok(std::string mechanism) {
    return {CheckState::Ok, std::move(mechanism), "", ""};
}
Verdict unavailable(std::string reason, std::string fix) {
    return {CheckState::Unavailable, "", std::move(reason), std::move(fix)};
}
Verdict degraded(std::string mechanism, std::string reason, std::string fix) {
    return {CheckState::Degraded, std::move(mechanism), std::move(reason), std::move(fix)};
}

// The answer of a step that was never reached because an earlier one failed.
constexpr const char* kNotProbed = "not probed: ";

std::string failed(const std::string& call, int err) {
    return call + ": " + errnoName(err);
}

std::optional<int> stepErr(const HostFacts& f, SandboxStep step) {
    auto it = f.sandbox.find(step);
    if (it == f.sandbox.end()) return std::nullopt;
    return it->second;
}

bool cloneWorked(const HostFacts& f) {
    return stepErr(f, SandboxStep::Clone3) == 0;
}

bool isPermission(int err) {
    return err == EPERM || err == EACCES;
}

std::string seccompNote(const HostFacts& f) {
    if (f.seccomp_mode != 2) return "";
    return "this process already runs under " + std::to_string(f.seccomp_filters) +
           " seccomp filter(s) (Seccomp: 2 in /proc/self/status), which may answer it so";
}

const char* kSeccompFix =
    "run stockade outside the container or sandbox that filters it, or give that container a "
    "seccomp profile that allows the call (docker: --security-opt seccomp=unconfined)";

// Ubuntu 23.10+: unprivileged user namespaces are created, but confined by
// AppArmor's unprivileged_userns profile, which denies every capability in
// them; what fails is the first step that needs one.
bool appArmorRestricts(const HostFacts& f) {
    return f.euid != 0 && f.apparmor_restrict_userns == "1";
}

Verdict appArmorVerdict(const HostFacts& f, const std::string& what) {
    return unavailable(
        "AppArmor restricts unprivileged user namespaces "
        "(kernel.apparmor_restrict_unprivileged_userns = 1): the namespace is created without "
        "capabilities, so " +
            what + " is refused",
        "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or allow user namespaces to "
        "stockade alone: /etc/apparmor.d/stockade containing `abi <abi/4.0>, include "
        "<tunables/global> profile stockade " +
            f.exe +
            " flags=(unconfined) { userns, }`, then `apparmor_parser -r "
            "/etc/apparmor.d/stockade`");
}

// Why a namespace of kind `name` ("user", "net", ...) could not be created.
Verdict namespaceCause(const HostFacts& f, const std::string& name, const std::string& call,
                       int err) {
    std::string what = failed(call, err);
    std::string knob = "user.max_" + name + "_namespaces";
    if (err == ENOSPC) {
        auto it = f.max_namespaces.find(name);
        std::string value = it == f.max_namespaces.end() ? "" : it->second;
        if (value == "0")
            return unavailable(knob + " is 0 (/proc/sys/user/max_" + name + "_namespaces): no " +
                                   name + " namespace may be created (" + what + ")",
                               "sysctl -w " + knob + "=15000");
        return unavailable("the limit on " + name + " namespaces is reached (" + knob + " = " +
                               (value.empty() ? "?" : value) +
                               " here, or a lower limit in an enclosing user namespace) (" + what +
                               ")",
                           "sysctl -w " + knob +
                               "=15000 in the namespace that holds the limit, or end the "
                               "processes holding the namespaces");
    }
    if (err == EINVAL) {
        static const std::map<std::string, std::string> config = {
            {"user", "CONFIG_USER_NS"},  {"mnt", "CONFIG_NAMESPACES"}, {"pid", "CONFIG_PID_NS"},
            {"net", "CONFIG_NET_NS"},    {"ipc", "CONFIG_IPC_NS"},     {"uts", "CONFIG_UTS_NS"},
            {"cgroup", "CONFIG_CGROUPS"}};
        std::string option = config.count(name) ? config.at(name) : "CONFIG_NAMESPACES";
        return unavailable("the kernel was built without " + option + " (" + what + ")",
                           "a kernel built with " + option + "=y");
    }
    if (err == EUSERS)
        return unavailable("user namespaces are already nested 32 deep (" + what + ")",
                           "run stockade from a less deeply nested namespace");
    if (!isPermission(err))
        return unavailable(what,
                           "report this to the stockade maintainers with `stockade check "
                           "--json`");
    if (name == "user" && f.euid != 0 && f.unprivileged_userns_clone == "0")
        return unavailable(
            "kernel.unprivileged_userns_clone is 0 (Debian's switch, "
            "/proc/sys/kernel/unprivileged_userns_clone): only root may create user namespaces "
            "(" +
                what + ")",
            "sysctl -w kernel.unprivileged_userns_clone=1 (keep it in /etc/sysctl.d/), or run "
            "stockade as root");
    if (name != "user" && appArmorRestricts(f)) return appArmorVerdict(f, "`" + what + "`");
    if (f.seccomp_mode == 2) return unavailable(seccompNote(f) + " (" + what + ")", kSeccompFix);
    if (name == "user" && f.chrooted)
        return unavailable(
            "this process runs in a chroot, where the kernel refuses new user namespaces "
            "(user_namespaces(7)) (" +
                what + ")",
            "run stockade outside the chroot");
    if (name == "user" && appArmorRestricts(f)) return appArmorVerdict(f, "`" + what + "`");
    return unavailable(what +
                           ", though no known switch forbids it (no "
                           "kernel.unprivileged_userns_clone=0, no AppArmor restriction, no "
                           "seccomp filter on this process): a security module such as "
                           "SELinux may deny it",
                       "look for the denial in the audit log (ausearch -m avc -ts recent, dmesg) "
                       "and allow namespace creation to stockade");
}

// The first sandbox step among `steps` that failed or was not reached.
struct StepFailure {
    SandboxStep step;
    std::optional<int> err;  // nullopt: not reached
};
std::optional<StepFailure> firstFailure(const HostFacts& f,
                                        std::initializer_list<SandboxStep> steps) {
    for (SandboxStep step : steps) {
        auto err = stepErr(f, step);
        if (!err || *err != 0) return StepFailure{step, err};
    }
    return std::nullopt;
}

// The entries that judge a step, where its cause and fix are given.
const char* entryOfStep(SandboxStep step) {
    switch (step) {
        case SandboxStep::Clone3:
            return "user_ns and clone3";
        case SandboxStep::PidfdSignal:
        case SandboxStep::PidfdWait:
            return "clone3";
        case SandboxStep::IdMaps:
        case SandboxStep::SetIds:
            return "user_ns";
        case SandboxStep::CgroupNs:
            return "cgroup_ns";
        case SandboxStep::Proc:
            return "proc";
        case SandboxStep::Hostname:
            return "uts_ns";
        case SandboxStep::Loopback:
            return "net_ns";
        case SandboxStep::Dumpable:
            return "pid_ns";
        case SandboxStep::DropCapabilities:
            return "capabilities";
        case SandboxStep::NoNewPrivs:
            return "no_new_privs";
        default:
            return "mount_ns";
    }
}

// For steps never reached: what stopped the sandbox sequence before them.
Verdict notReached(const HostFacts& f) {
    std::string prefix = std::string(kNotProbed) + "the sandbox setup stopped earlier: ";
    for (const auto& [step, err] : f.sandbox)
        if (err != 0)
            return unavailable(prefix + sandboxStepName(step) + " failed (" + errnoName(err) + ")",
                               std::string("see ") + entryOfStep(step));
    return unavailable(
        prefix + "the probe child " + (f.sandbox_death.empty() ? "stopped" : f.sandbox_death),
        "run `stockade check` again; report it if it persists");
}

// A failed step of the sandbox sequence, with the cause where one is known.
Verdict stepVerdict(const HostFacts& f, const StepFailure& failure) {
    if (!failure.err) return notReached(f);
    int err = *failure.err;
    std::string what = failed(sandboxStepName(failure.step), err);
    if (isPermission(err) && appArmorRestricts(f)) return appArmorVerdict(f, "`" + what + "`");
    if (failure.step == SandboxStep::Proc && isPermission(err)) {
        std::string covered;
        for (const std::string& p : f.proc_overmounts) covered += (covered.empty() ? "" : ", ") + p;
        return unavailable(
            "the kernel allows a fresh procfs in a user namespace only while the host's /proc "
            "is fully visible (mount_too_revealing)" +
                (covered.empty() ? std::string()
                                 : ", and here paths are mounted over it: " + covered) +
                " (" + what + ")",
            "run stockade where /proc is not masked: on the host, or in a container started with "
            "--security-opt systempaths=unconfined");
    }
    if (err == ENOSYS && (failure.step == SandboxStep::BindReadOnly))
        return unavailable(
            "the new mount API (open_tree, mount_setattr, move_mount) is missing (" + what + ")",
            "Linux 5.12 or newer");
    if (f.seccomp_mode == 2 && (isPermission(err) || err == ENOSYS))
        return unavailable(seccompNote(f) + " (" + what + ")", kSeccompFix);
    return unavailable(what,
                       "report this to the stockade maintainers with `stockade check "
                       "--json`");
}

// The errno a namespace's creation got: from the sandbox clone when it
// worked, else from the one-by-one probe; nullopt when never tried.
std::optional<int> namespaceErr(const HostFacts& f, const std::string& name) {
    if (cloneWorked(f)) {
        if (name == "cgroup") return stepErr(f, SandboxStep::CgroupNs);
        return 0;
    }
    auto it = f.unshare.find(name);
    if (it == f.unshare.end()) return std::nullopt;
    return it->second;
}

Verdict judgeUserNs(const HostFacts& f) {
    auto err = namespaceErr(f, "user");
    if (!err)
        return unavailable(std::string(kNotProbed) + "the probe child " +
                               (f.sandbox_death.empty() ? "reported nothing" : f.sandbox_death),
                           "run `stockade check` again; report it if it persists");
    std::string call = cloneWorked(f) ? "clone3(CLONE_NEWUSER|...)" : "unshare(CLONE_NEWUSER)";
    if (*err) return namespaceCause(f, "user", call, *err);
    // Created, but AppArmor may have left it without capabilities.
    if (appArmorRestricts(f)) {
        for (const auto& [name, e] : f.unshare)
            if (isPermission(e))
                return appArmorVerdict(f, "unshare of the " + name + " namespace inside it");
        for (const auto& [step, e] : f.sandbox)
            if (step != SandboxStep::IdMaps && isPermission(e))
                return appArmorVerdict(f, "`" + failed(sandboxStepName(step), e) + "`");
    }
    if (!cloneWorked(f)) return ok("unprivileged user namespaces can be created");
    if (auto maps = stepErr(f, SandboxStep::IdMaps); maps && *maps) {
        // A process that changed its uid without exec is not dumpable, and
        // neither are its children: their /proc files belong to root (proc(5)).
        if (!f.dumpable && f.euid != 0 && isPermission(*maps))
            return unavailable(
                "stockade is not dumpable (it changed uid without exec), so the "
                "/proc/PID files of its child belong to root and its id maps "
                "cannot be written: " +
                    f.id_maps_error,
                "start stockade through exec as the user (su, runuser, setpriv), "
                "not from a process that dropped root without exec");
        return unavailable(
            "the supervisor could not write the namespace's id maps: " + f.id_maps_error,
            "let stockade write /proc/PID/uid_map and gid_map of its child (no "
            "LSM denial, /proc mounted without restrictions)");
    }
    if (auto failure = firstFailure(f, {SandboxStep::SetIds})) return stepVerdict(f, *failure);
    return ok("own user namespace; uid " + std::to_string(f.sandbox_uid) + " inside is host uid " +
              std::to_string(f.sandbox_host_uid) + ", never host root; setgroups denied");
}

Verdict judgeNamespace(const HostFacts& f, const std::string& name, const std::string& flag,
                       std::initializer_list<SandboxStep> content, const std::string& mechanism) {
    auto err = namespaceErr(f, name);
    if (!err) {
        if (namespaceErr(f, "user").value_or(0) != 0)
            return unavailable(std::string(kNotProbed) + "it needs a user namespace (see user_ns)",
                               "see user_ns");
        return notReached(f);
    }
    if (*err) return namespaceCause(f, name, "unshare(" + flag + ") in a new user namespace", *err);
    if (!cloneWorked(f)) {
        if (content.size() == 0) return ok(mechanism);
        return unavailable(std::string(kNotProbed) +
                               "the namespace can be created, but the sandbox's clone3 failed "
                               "(see clone3)",
                           "see clone3");
    }
    if (auto failure = firstFailure(f, content)) return stepVerdict(f, *failure);
    return ok(mechanism);
}

Verdict judgeClone3(const HostFacts& f) {
    auto clone = stepErr(f, SandboxStep::Clone3);
    if (clone == 0) {
        if (auto e = stepErr(f, SandboxStep::PidfdSignal); e && *e)
            return unavailable(failed("pidfd_send_signal", *e), "Linux 5.3 or newer");
        if (auto e = stepErr(f, SandboxStep::PidfdWait); e && *e)
            return unavailable(failed("waitid(P_PIDFD)", *e) +
                                   (*e == EINVAL ? ": waiting on a pidfd needs Linux 5.4" : ""),
                               "Linux 5.4 or newer");
        return ok("clone3 with CLONE_PIDFD; pidfd_send_signal and waitid(P_PIDFD)");
    }
    if (!clone) return notReached(f);
    if (f.plain_clone3 && *f.plain_clone3) {
        int err = *f.plain_clone3;
        std::string what = failed("clone3(CLONE_PIDFD)", err);
        if (err == ENOSYS && f.seccomp_mode == 2)
            return unavailable(seccompNote(f) +
                                   " (container runtimes' default profiles answer clone3 with "
                                   "ENOSYS) (" +
                                   what + ")",
                               kSeccompFix);
        if (err == ENOSYS)
            return unavailable("the kernel has no clone3, which the sandbox needs (" + what + ")",
                               "Linux 5.3 or newer (5.4 for waitid on a pidfd)");
        return unavailable(what, "report this to the stockade maintainers");
    }
    bool each_ok = !f.unshare.empty() && std::all_of(f.unshare.begin(), f.unshare.end(),
                                                     [](const auto& kv) { return kv.second == 0; });
    if (f.plain_clone3 == 0 && !each_ok)
        return ok("clone3 with CLONE_PIDFD (the sandbox's clone3 fails for want of a namespace)");
    return unavailable(failed("clone3(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID|CLONE_NEWNET|"
                              "CLONE_NEWIPC|CLONE_NEWUTS|CLONE_PIDFD)",
                              *clone) +
                           ", though each namespace alone can be created",
                       "report this to the stockade maintainers with `stockade check --json`");
}

std::optional<int> seccompErr(const HostFacts& f, SeccompStep step) {
    auto it = f.seccomp.find(step);
    if (it == f.seccomp.end()) return std::nullopt;
    return it->second;
}

Verdict judgeNoNewPrivs(const HostFacts& f) {
    auto err = seccompErr(f, SeccompStep::NoNewPrivs);
    if (!err)
        return unavailable(std::string(kNotProbed) + "the probe child reported nothing",
                           "run `stockade check` again");
    if (*err) return unavailable(failed("prctl(PR_SET_NO_NEW_PRIVS)", *err), "Linux 3.5 or newer");
    if (auto e = stepErr(f, SandboxStep::NoNewPrivs); e && *e)
        return stepVerdict(f, {SandboxStep::NoNewPrivs, e});
    return ok("no_new_privs");
}

Verdict judgeSeccomp(const HostFacts& f) {
    if (auto v = judgeNoNewPrivs(f); v.state != CheckState::Ok) return v;
    auto allow = seccompErr(f, SeccompStep::AllowAll);
    if (!allow)
        return unavailable(std::string(kNotProbed) + "the probe child reported nothing",
                           "run `stockade check` again");
    if (*allow) {
        std::string what = failed("seccomp(SECCOMP_SET_MODE_FILTER, allow-all)", *allow);
        if (*allow == EINVAL || *allow == ENOSYS)
            return unavailable("the kernel has no seccomp filter mode" +
                                   std::string(f.seccomp_mode < 0 ? " (not even CONFIG_SECCOMP: "
                                                                    "no Seccomp line in "
                                                                    "/proc/self/status)"
                                                                  : " (CONFIG_SECCOMP_FILTER)") +
                                   " (" + what + ")",
                               "a kernel built with CONFIG_SECCOMP=y and CONFIG_SECCOMP_FILTER=y");
        return unavailable(what, "report this to the stockade maintainers");
    }
    auto def = seccompErr(f, SeccompStep::DefaultFilter);
    std::string program = "stockade's default-deny filter (" +
                          std::to_string(f.default_filter_instructions) + " BPF instructions)";
    if (!def)
        return unavailable(std::string(kNotProbed) + "the probe child stopped before " + program,
                           "run `stockade check` again");
    if (*def)
        return unavailable("the kernel takes a filter but refuses " + program + " (" +
                               failed("seccomp(SECCOMP_SET_MODE_FILTER)", *def) + ")",
                           "Linux 4.14 or newer (SECCOMP_RET_KILL_PROCESS)");
    return ok(program);
}

Verdict judgeSeccompListener(const HostFacts& f) {
    auto err = seccompErr(f, SeccompStep::Listener);
    if (!err)
        return unavailable(std::string(kNotProbed) + "seccomp itself is unavailable",
                           "see seccomp");
    if (*err == 0) return ok("refusals reported through SECCOMP_FILTER_FLAG_NEW_LISTENER");
    std::string what = failed("seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)", *err);
    if (*err == EBUSY)
        return degraded("kernel-answered refusals",
                        "a filter with a listener already confines this process (a sandbox "
                        "around stockade): refusals are answered EPERM but not counted (" +
                            what + ")",
                        "run stockade outside the other sandbox");
    return degraded("kernel-answered refusals",
                    "refusals are answered EPERM by the kernel but not reported in the result (" +
                        what + (*err == EINVAL ? ": user notification needs Linux 5.0" : "") + ")",
                    "Linux 5.0 or newer");
}

Verdict judgeLandlock(const HostFacts& f) {
    const int abi = f.landlock.abi;
    if (abi <= 0) {
        std::string reason = f.landlock.reason;
        if (f.seccomp_mode == 2) reason += "; " + seccompNote(f);
        std::string lsm = f.lsm.empty() ? "lockdown,yama,integrity,apparmor" : f.lsm;
        std::string fix =
            "Linux 5.13 or newer with CONFIG_SECURITY_LANDLOCK=y and landlock in the "
            "lsm= kernel parameter (lsm=landlock," +
            lsm + ")";
        if (f.seccomp_mode == 2) fix += "; or " + std::string(kSeccompFix);
        return unavailable(reason, fix);
    }
    std::string name = "abi-" + std::to_string(abi);
    if (!f.landlock_error.empty())
        return unavailable("building a ruleset failed: " + f.landlock_error,
                           "report this to the stockade maintainers");
    if (!f.landlock_restrict)
        return unavailable(std::string(kNotProbed) + "the probe child reported nothing",
                           "run `stockade check` again");
    if (*f.landlock_restrict)
        return unavailable(failed("landlock_restrict_self", *f.landlock_restrict),
                           "report this to the stockade maintainers");
    if (abi < 4)
        return degraded(name,
                        "Landlock ABI " + std::to_string(abi) +
                            " restricts the filesystem only: no TCP rules (ABI 4, Linux 6.7) and "
                            "no scoping of abstract unix sockets and signals (ABI 6, Linux 6.12)",
                        "Linux 6.12 or newer");
    if (abi < 6)
        return degraded(name,
                        "Landlock ABI " + std::to_string(abi) +
                            " cannot scope abstract unix sockets and signals (ABI 6, Linux 6.12)",
                        "Linux 6.12 or newer");
    return ok(name);
}

Verdict judgeVeth(const HostFacts& f) {
    const std::string keep =
        "; or keep the default --net-backend userspace, which works in "
        "every mode";
    if (f.euid != 0)
        return unavailable(
            "needs root (a veth pair and nftables rules in the host's network "
            "namespace)",
            "run stockade serve as root" + keep);
    if (f.nft.empty())
        return unavailable("no nft binary in /usr/sbin, /sbin or /usr/bin",
                           "apt-get install nftables" + keep);
    if (!f.veth_probed)
        return unavailable(std::string(kNotProbed) + "the probe did not run",
                           "run `stockade check` again");
    if (!f.veth_error.empty())
        return unavailable(f.veth_error,
                           "a kernel with veth and nf_tables (CONFIG_VETH, CONFIG_NF_TABLES, "
                           "CONFIG_NFT_NAT, CONFIG_NFT_CT)" +
                               keep);
    return ok("veth pair, nftables (" + f.nft + ")");
}

Verdict judgeIdmap(const HostFacts& f) {
    if (!f.idmap_probed)
        return ok("not needed: rootless, the sandbox runs as uid " +
                  std::to_string(f.sandbox_host_uid) + ", which owns what it writes");
    if (f.idmap_error.empty())
        return ok("MOUNT_ATTR_IDMAP on " + f.idmap_path + " (" + f.idmap_fs + ")");
    std::string where = f.idmap_path + " (" + f.idmap_fs + ")";
    std::string consequence = "a root-owned worktree would not be writable by the sandbox";
    if (f.idmap_error.find("unshare(CLONE_NEWUSER)") != std::string::npos)
        return degraded("",
                        consequence + ": an idmapped mount needs a user namespace (see user_ns)",
                        "see user_ns");
    if (f.idmap_error.find("EINVAL") != std::string::npos)
        return degraded("",
                        consequence + ": the filesystem of " + where +
                            " does not support idmapped mounts (" + f.idmap_error + ")",
                        "keep worktrees on a filesystem that does (ext4, xfs, btrfs; tmpfs from "
                        "Linux 6.3), or chown the worktree to an unprivileged user");
    if (f.idmap_error.find("EPERM") != std::string::npos)
        return degraded("",
                        consequence +
                            ": idmapped mounts need CAP_SYS_ADMIN in the initial user "
                            "namespace (" +
                            f.idmap_error + ")",
                        "run stockade as root on the host, not in a container, or chown the "
                        "worktree to an unprivileged user");
    if (f.idmap_error.find("ENOSYS") != std::string::npos)
        return degraded("",
                        consequence + ": mount_setattr needs Linux 5.12 (" + f.idmap_error + ")",
                        "Linux 5.12 or newer, or chown the worktree to an unprivileged user");
    return degraded("", consequence + " (" + f.idmap_error + ")",
                    "chown the worktree to an unprivileged user");
}

const char* kDelegateFix = "`systemd-run --user --scope -p Delegate=yes stockade …`";

std::string cgroupParent(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(0, slash);
}

Verdict judgeCgroup2Base(const HostFacts& f) {
    const Cgroup2Facts& v2 = f.cgroup2;
    if (v2.mount.empty())
        return unavailable("no cgroup2 filesystem is mounted (/proc/self/mountinfo)",
                           "mount it (mount -t cgroup2 none /sys/fs/cgroup), or boot with "
                           "systemd.unified_cgroup_hierarchy=1");
    if (v2.path.empty())
        return unavailable("/proc/self/cgroup has no cgroup v2 line (0::)",
                           "run stockade in a cgroup v2 hierarchy");
    std::string where =
        v2.path + " (controllers: " + (v2.controllers.empty() ? "none" : v2.controllers) + ")";
    std::string fix = f.euid == 0
                          ? "mount the cgroup filesystem read-write (a container needs a "
                            "writable /sys/fs/cgroup)"
                          : "run stockade in a delegated cgroup: " + std::string(kDelegateFix) +
                                ", or run it as root";
    auto notWritable = [&](const std::string& what, int err) {
        return unavailable(what + " is not writable by uid " + std::to_string(f.euid) + " (" +
                               errnoName(err) + ")",
                           fix);
    };
    if (v2.dir_errno) return notWritable(v2.path, v2.dir_errno);
    if (v2.subtree_control_errno)
        return notWritable(v2.path + "/cgroup.subtree_control", v2.subtree_control_errno);
    if (v2.procs_errno) return notWritable(v2.path + "/cgroup.procs", v2.procs_errno);
    return ok("writable at " + where);
}

Verdict judgeCgroup2(const HostFacts& f, const std::string& controller) {
    const Cgroup2Facts& v2 = f.cgroup2;
    std::string unified =
        "boot with systemd.unified_cgroup_hierarchy=1 (or cgroup_no_v1=" + controller +
        ") so that " + controller + " moves to cgroup v2";
    if (!v2.mount.empty() && !hasWord(v2.root_controllers, controller)) {
        std::string bound =
            f.cgroup1.count(controller) && f.cgroup1.at(controller).bound
                ? "; it is bound to the cgroup v1 hierarchy at /sys/fs/cgroup/" + controller
                : "";
        return unavailable("controller not available in the unified hierarchy (" + v2.mount +
                               "/cgroup.controllers has no " + controller + bound + ")",
                           unified + (f.euid == 0 ? "" : "; then " + std::string(kDelegateFix)));
    }
    Verdict base = judgeCgroup2Base(f);
    if (base.state != CheckState::Ok) return base;
    if (!hasWord(v2.controllers, controller)) {
        std::string parent = cgroupParent(v2.path);
        return unavailable(
            "controller not delegated to " + v2.path + " (" + parent +
                "/cgroup.subtree_control does not enable " + controller + ")",
            f.euid == 0 ? "echo +" + controller + " > " + parent + "/cgroup.subtree_control"
                        : "run stockade in a delegated cgroup: " + std::string(kDelegateFix));
    }
    if (v2.other_processes > 0 && !hasWord(v2.subtree_control, controller))
        return unavailable(
            v2.path + " holds " + std::to_string(v2.other_processes) +
                " other process(es) besides stockade, and cgroup v2 enables no controller "
                "below a cgroup that holds processes (stockade moves itself out, not others)",
            "run stockade alone in a delegated cgroup: " + std::string(kDelegateFix));
    return ok("delegated and writable at " + v2.path);
}

Verdict judgeCgroup1(const HostFacts& f, const std::string& controller) {
    auto it = f.cgroup1.find(controller);
    std::string mount = "/sys/fs/cgroup/" + controller;
    if (it == f.cgroup1.end() || !it->second.bound)
        return unavailable("no cgroup v1 hierarchy holds " + controller + " (/proc/self/cgroup)",
                           "use cgroup v2 (see cgroup2." + controller + ")");
    const Cgroup1Facts& v1 = it->second;
    if (!v1.mounted)
        return unavailable(controller + " is a v1 controller but not mounted at " + mount +
                               " (where stockade looks)",
                           "mount -t cgroup -o " + controller + " cgroup " + mount);
    std::string fix = f.euid == 0 ? "mount " + mount + " read-write"
                                  : "run stockade as root (cgroup v1 is not delegated to "
                                    "unprivileged users), or use cgroup v2: " +
                                        std::string(kDelegateFix);
    if (v1.dir_errno)
        return unavailable(v1.path + " is not writable by uid " + std::to_string(f.euid) + " (" +
                               errnoName(v1.dir_errno) + ")",
                           fix);
    if (v1.procs_errno)
        return unavailable(v1.path + "/cgroup.procs is not writable by uid " +
                               std::to_string(f.euid) + " (" + errnoName(v1.procs_errno) + ")",
                           fix);
    return ok("writable at " + v1.path);
}

Verdict judgeRlimits(const HostFacts& f) {
    std::string names, failures;
    for (const auto& [name, err] : f.rlimits) {
        names += (names.empty() ? "" : ", ") + name;
        if (err)
            failures += (failures.empty() ? "" : "; ") + failed("setrlimit(" + name + ")", err);
    }
    if (f.rlimits.empty())
        return unavailable(std::string(kNotProbed) + "the probe child reported nothing",
                           "run `stockade check` again");
    if (!failures.empty()) return unavailable(failures, "report this to the stockade maintainers");
    return ok(names);
}

Verdict judgeCloseRange(const HostFacts& f) {
    if (!f.close_range)
        return unavailable(std::string(kNotProbed) + "the probe child reported nothing",
                           "run `stockade check` again");
    if (*f.close_range)
        return unavailable("inherited fds could not be closed before the command runs (" +
                               failed("close_range", *f.close_range) + ")",
                           *f.close_range == ENOSYS ? "Linux 5.9 or newer"
                                                    : "report this to the stockade maintainers");
    return ok("close_range(2)");
}

// The first clause of a reason, for lines that summarize others: reasons
// put their detail in parentheses after it.
std::string headline(const std::string& reason) {
    return reason.substr(0, reason.find(" ("));
}

// A limit: the strongest mechanism that holds it (SPEC §4).
Verdict judgeLimit(const HostFacts& f, const std::string& limit, const std::string& rlimit,
                   const Verdict& v2, const Verdict& v1, const Verdict& rl) {
    if (v2.state == CheckState::Ok) return ok("cgroup2");
    if (v1.state == CheckState::Ok) return ok("cgroup1");
    std::string causes = "cgroup2." + limit + ": " + headline(v2.reason) + "; cgroup1." + limit +
                         ": " + headline(v1.reason);
    if (rl.state != CheckState::Ok)
        return unavailable("no mechanism holds it (" + causes + "; rlimit: " + rl.reason + ")",
                           v2.fix);
    std::string weaker = limit == "memory"
                             ? "RLIMIT_AS bounds each process's address space, not the sandbox's "
                               "total"
                             : "RLIMIT_NPROC counts every process of the sandbox's host uid, not "
                               "only the sandbox's";
    // The way to a real bound from where this host stands.
    bool in_unified = !f.cgroup2.mount.empty() && hasWord(f.cgroup2.root_controllers, limit);
    bool on_v1 = f.cgroup1.count(limit) && f.cgroup1.at(limit).bound;
    std::string fix;
    if (f.euid != 0) {
        fix = "run stockade in a delegated cgroup v2 subtree: " + std::string(kDelegateFix);
        if (!in_unified && on_v1)
            fix +=
                ", after booting with systemd.unified_cgroup_hierarchy=1 (this host keeps "
                "memory and pids on cgroup v1)";
        if (on_v1) fix += "; or run stockade as root";
    } else {
        fix = in_unified || !on_v1 ? v2.fix : v1.fix;
    }
    return degraded("rlimit (" + rlimit + ")", "no writable cgroup (" + causes + "); " + weaker,
                    fix);
}

CheckState worst(CheckState a, CheckState b) {
    return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

CheckEntry makeEntry(std::string id, std::string title, CheckKind kind, Verdict v, bool required) {
    return {std::move(id),       std::move(title), kind,    v.state, std::move(v.mechanism),
            std::move(v.reason), std::move(v.fix), required};
}

// A guarantee is as strong as the weakest feature it rests on.
CheckEntry summarize(const HostReport& report, std::string id, std::string title,
                     std::vector<std::string> parts, std::string mechanism, bool required) {
    CheckEntry e{std::move(id),
                 std::move(title),
                 CheckKind::Guarantee,
                 CheckState::Ok,
                 std::move(mechanism),
                 "",
                 "",
                 required};
    std::vector<const CheckEntry*> weak;
    for (const std::string& part : parts)
        if (const CheckEntry* p = report.find(part); p && p->state != CheckState::Ok)
            weak.push_back(p);
    // One cause is given whole; several by their first clause, each with
    // its own line below.
    std::vector<std::string> fixes;
    for (const CheckEntry* p : weak) {
        e.state = worst(e.state, p->state);
        e.reason += (e.reason.empty() ? "" : "; ") + p->id + ": " +
                    (weak.size() == 1 ? p->reason : headline(p->reason));
        if (std::find(fixes.begin(), fixes.end(), p->fix) == fixes.end()) fixes.push_back(p->fix);
    }
    for (const std::string& fix : fixes) e.fix += (e.fix.empty() ? "" : "; ") + fix;
    if (e.state == CheckState::Unavailable) e.mechanism.clear();
    return e;
}

}  // namespace

const char* checkStateName(CheckState state) {
    switch (state) {
        case CheckState::Ok:
            return "ok";
        case CheckState::Degraded:
            return "degraded";
        case CheckState::Unavailable:
            return "unavailable";
    }
    return "unavailable";
}

const char* checkKindName(CheckKind kind) {
    switch (kind) {
        case CheckKind::Guarantee:
            return "guarantee";
        case CheckKind::Feature:
            return "feature";
        case CheckKind::Mechanism:
            return "mechanism";
        case CheckKind::Limit:
            return "limit";
    }
    return "feature";
}

const char* sandboxStepName(SandboxStep step) {
    switch (step) {
        case SandboxStep::Clone3:
            return "clone3(CLONE_NEWUSER|NEWNS|NEWPID|NEWNET|NEWIPC|NEWUTS)";
        case SandboxStep::PidfdSignal:
            return "pidfd_send_signal";
        case SandboxStep::IdMaps:
            return "write uid_map/gid_map";
        case SandboxStep::SetIds:
            return "setresuid to the sandbox's uid";
        case SandboxStep::CgroupNs:
            return "unshare(CLONE_NEWCGROUP)";
        case SandboxStep::PrivateMounts:
            return "mount(\"/\", MS_REC|MS_PRIVATE)";
        case SandboxStep::RootTmpfs:
            return "mount the root tmpfs";
        case SandboxStep::BindReadOnly:
            return "bind /usr read-only (open_tree, mount_setattr)";
        case SandboxStep::TmpTmpfs:
            return "mount a size-limited tmpfs";
        case SandboxStep::Proc:
            return "mount(\"proc\") in the new PID namespace";
        case SandboxStep::SealRoot:
            return "remount the root read-only";
        case SandboxStep::PivotRoot:
            return "pivot_root";
        case SandboxStep::Hostname:
            return "sethostname";
        case SandboxStep::Loopback:
            return "bring lo up";
        case SandboxStep::Dumpable:
            return "prctl(PR_SET_DUMPABLE, 0)";
        case SandboxStep::DropCapabilities:
            return "drop capabilities (securebits, bounding set, capset)";
        case SandboxStep::NoNewPrivs:
            return "prctl(PR_SET_NO_NEW_PRIVS)";
        case SandboxStep::PidfdWait:
            return "waitid(P_PIDFD)";
    }
    return "?";
}

const CheckEntry* HostReport::find(std::string_view id) const {
    for (const CheckEntry& e : entries)
        if (e.id == id) return &e;
    return nullptr;
}

HostReport reportFromFacts(const HostFacts& f, const HostCheckRequest& request) {
    HostReport report;
    report.euid = f.euid;
    report.kernel = f.kernel;
    report.probe_us = f.probe_us;
    auto required = [&](const std::string& id) {
        return std::find(request.require.begin(), request.require.end(), id) !=
               request.require.end();
    };
    auto feature = [&](const std::string& id, const std::string& title, Verdict v, bool needed) {
        report.entries.push_back(
            makeEntry(id, title, CheckKind::Feature, std::move(v), needed || required(id)));
    };
    using S = SandboxStep;

    // Features: what the sandbox's own code needs of the kernel. Every one
    // without a fallback in runtime/ is required.
    feature("user_ns", "user namespace", judgeUserNs(f), true);
    feature("mount_ns", "mount namespace, fresh root",
            judgeNamespace(f, "mnt", "CLONE_NEWNS",
                           {S::PrivateMounts, S::RootTmpfs, S::BindReadOnly, S::TmpTmpfs,
                            S::SealRoot, S::PivotRoot},
                           "own mount namespace; read-only binds, tmpfs, pivot_root"),
            true);
    feature("proc", "fresh /proc",
            judgeNamespace(f, "pid", "CLONE_NEWPID", {S::Proc}, "a fresh procfs for the sandbox"),
            true);
    feature("pid_ns", "PID namespace",
            judgeNamespace(f, "pid", "CLONE_NEWPID", {S::Dumpable},
                           "own PID namespace; init non-dumpable"),
            true);
    feature("net_ns", "network namespace",
            judgeNamespace(f, "net", "CLONE_NEWNET", {S::Loopback},
                           "own network namespace with only lo"),
            true);
    feature("ipc_ns", "IPC namespace",
            judgeNamespace(f, "ipc", "CLONE_NEWIPC", {}, "own IPC namespace"), true);
    feature("uts_ns", "UTS namespace",
            judgeNamespace(f, "uts", "CLONE_NEWUTS", {S::Hostname}, "own hostname"), true);
    feature("cgroup_ns", "cgroup namespace",
            judgeNamespace(f, "cgroup", "CLONE_NEWCGROUP", {}, "own cgroup namespace"), true);
    feature("clone3", "clone3 and pidfds", judgeClone3(f), true);
    feature(
        "capabilities", "capabilities dropped",
        [&] {
            if (auto failure = firstFailure(f, {S::DropCapabilities}))
                return stepVerdict(f, *failure);
            return ok("none: bounding and ambient sets cleared, securebits locked");
        }(),
        true);
    feature("no_new_privs", "no_new_privs", judgeNoNewPrivs(f), true);
    feature("close_range", "only fds 0-2 cross", judgeCloseRange(f), true);
    feature("seccomp", "seccomp filter", judgeSeccomp(f), request.seccomp);
    feature("seccomp_listener", "seccomp user notification", judgeSeccompListener(f), false);
    feature("landlock", "Landlock", judgeLandlock(f), request.landlock == LandlockMode::Required);
    // The sandbox refuses to start when a root-owned worktree cannot be idmapped.
    feature("idmapped_mounts", "idmapped mounts", judgeIdmap(f),
            f.euid == 0 && f.worktree_root_owned);
    // Only `serve --net-backend veth` needs it; never required.
    feature("veth_backend", "serve --net-backend veth", judgeVeth(f), false);

    // Mechanisms that can hold a limit, strongest first (SPEC §4).
    auto mechanism = [&](const std::string& id, const std::string& title, Verdict v) {
        report.entries.push_back(makeEntry(id, title, CheckKind::Mechanism, std::move(v), false));
    };
    Verdict v2_memory = judgeCgroup2(f, "memory"), v2_pids = judgeCgroup2(f, "pids");
    Verdict v1_memory = judgeCgroup1(f, "memory"), v1_pids = judgeCgroup1(f, "pids");
    Verdict rlimits = judgeRlimits(f);
    mechanism("cgroup2", "cgroup v2", judgeCgroup2Base(f));
    mechanism("cgroup2.memory", "cgroup v2 memory", v2_memory);
    mechanism("cgroup2.pids", "cgroup v2 pids", v2_pids);
    mechanism("cgroup1.memory", "cgroup v1 memory", v1_memory);
    mechanism("cgroup1.pids", "cgroup v1 pids", v1_pids);
    mechanism("rlimit", "rlimits", rlimits);

    auto limit = [&](const std::string& id, const std::string& title, Verdict v) {
        report.entries.push_back(
            makeEntry(id, title, CheckKind::Limit, std::move(v), required(id)));
    };
    limit("memory", "memory", judgeLimit(f, "memory", "RLIMIT_AS", v2_memory, v1_memory, rlimits));
    limit("pids", "pids", judgeLimit(f, "pids", "RLIMIT_NPROC", v2_pids, v1_pids, rlimits));
    limit("cpu_time", "CPU time",
          rlimits.state == CheckState::Ok ? ok("rlimit (RLIMIT_CPU)") : rlimits);

    // Guarantees (SPEC §3), each summarizing the features it rests on.
    auto mechanismOf = [&](const std::string& id) {
        const CheckEntry* e = report.find(id);
        return e ? e->mechanism : std::string();
    };
    std::vector<std::string> limit_ids;
    std::string limits_held;
    for (auto [id, wanted] : {std::pair<const char*, bool>{"memory", request.memory_limit},
                              {"pids", request.pids_limit},
                              {"cpu_time", request.cpu_time_limit}}) {
        if (!wanted) continue;
        limit_ids.push_back(id);
        limits_held +=
            std::string(limits_held.empty() ? "" : ", ") + id + ": " + headline(mechanismOf(id));
    }
    limits_held += std::string(limits_held.empty() ? "" : "; ") +
                   "wall time, output: the supervisor; /tmp: tmpfs size";
    bool limits_required = std::any_of(limit_ids.begin(), limit_ids.end(), required);
    std::vector<CheckEntry> guarantees = {
        summarize(report, "G1", "network", {"net_ns"}, "own network namespace with only lo", true),
        summarize(report, "G2", "filesystem", {"mount_ns", "proc"},
                  "own mount namespace, fresh root (pivot_root), fresh /proc", true),
        summarize(report, "G3", "identity", {"user_ns", "idmapped_mounts"}, mechanismOf("user_ns"),
                  true),
        summarize(report, "G4", "privileges", {"capabilities", "no_new_privs"},
                  "no capabilities, securebits locked, no_new_privs", true),
        summarize(report, "G5", "syscalls", {"seccomp", "seccomp_listener"},
                  mechanismOf("seccomp") + "; " + mechanismOf("seccomp_listener"), request.seccomp),
        summarize(report, "G6", "processes", {"pid_ns", "clone3"},
                  "own PID namespace with stockade's init; pidfd supervision", true),
        summarize(report, "G7", "environment", {"close_range"},
                  "an empty environment but the profile's allowlist; only fds 0, 1, 2 cross "
                  "(close_range); a new session",
                  true),
        summarize(report, "G8", "limits", limit_ids, limits_held, limits_required),
        summarize(report, "G9", "the rest", {"ipc_ns", "uts_ns", "cgroup_ns"},
                  "own IPC, UTS and cgroup namespaces", true),
        summarize(report, "G10", "landlock", {"landlock"}, mechanismOf("landlock"),
                  request.landlock == LandlockMode::Required),
    };
    // G8 is degraded by a weaker mechanism but still holds something.
    if (guarantees[7].state != CheckState::Unavailable) guarantees[7].mechanism = limits_held;
    report.entries.insert(report.entries.begin(), guarantees.begin(), guarantees.end());

    // A requirement that failed only because an earlier one did is not
    // named again: the first cause is the one to fix.
    for (bool consequences : {false, true}) {
        for (const CheckEntry& e : report.entries) {
            if (e.kind == CheckKind::Guarantee || !e.required || e.state == CheckState::Ok)
                continue;
            if (e.reason.starts_with(kNotProbed) == consequences)
                report.blockers.push_back(e.id + ": " + e.reason);
        }
        if (!report.blockers.empty()) break;
    }
    report.can_run = report.blockers.empty();
    return report;
}

HostReport checkHost(const HostCheckRequest& request) {
    auto start = Clock::now();
    HostFacts facts = probeHost(request);
    HostReport report = reportFromFacts(facts, request);
    report.elapsed_us = microsSince(start);
    return report;
}

HostCheckRequest hostCheckRequestFor(const Profile& profile) {
    HostCheckRequest r;
    r.memory_limit = profile.limits.memory_bytes.has_value();
    r.pids_limit = profile.limits.pids.has_value();
    r.cpu_time_limit = profile.limits.cpu_time_ms.has_value();
    r.seccomp = profile.seccomp != "none";
    r.landlock = profile.landlock;
    r.require = profile.require;
    return r;
}

HostCheckRequest hostCheckRequestFor(const Policy& policy) {
    HostCheckRequest r;
    r.memory_limit = policy.limits.memory_bytes.has_value();
    r.pids_limit = policy.limits.pids.has_value();
    r.cpu_time_limit = policy.limits.cpu_time_ms.has_value();
    r.seccomp = policy.seccomp != "none";
    r.landlock = policy.landlock;
    r.require = policy.require;
    r.worktree = policy.fs.worktree;
    return r;
}

// ------------------------------------------------------------ output

std::string formatReport(const HostReport& report) {
    std::ostringstream out;
    out << "stockade check: uid " << report.euid << ", Linux " << report.kernel << ", "
        << (report.elapsed_us + 500) / 1000 << " ms\n";
    const std::pair<CheckKind, const char*> sections[] = {
        {CheckKind::Guarantee, "Guarantees"},
        {CheckKind::Feature, "Kernel features"},
        {CheckKind::Mechanism, "Limit mechanisms"},
        {CheckKind::Limit, "Limits"}};
    size_t label_width = 0;
    auto label = [](const CheckEntry& e) {
        return e.kind == CheckKind::Guarantee ? e.id + (e.id.size() < 3 ? "  " : " ") + e.title
                                              : e.id;
    };
    for (const CheckEntry& e : report.entries) label_width = std::max(label_width, label(e).size());
    for (const auto& [kind, title] : sections) {
        out << "\n" << title << "\n";
        for (const CheckEntry& e : report.entries) {
            if (e.kind != kind) continue;
            std::string l = label(e);
            std::string state = checkStateName(e.state);
            out << "  " << l << std::string(label_width - l.size() + 1, ' ') << state
                << std::string(12 - state.size(), ' ');
            std::string text = e.mechanism;
            if (e.state != CheckState::Ok) {
                text += (text.empty() ? "" : ": ") + e.reason;
                if (!e.fix.empty()) text += "; fix: " + e.fix;
            }
            out << text << "\n";
        }
    }
    out << "\n";
    if (report.can_run) {
        out << "The profile can run as required.\n";
    } else {
        out << "The profile cannot run as required:\n";
        for (const std::string& b : report.blockers) out << "  " << b << "\n";
    }
    return out.str();
}

std::string reportJson(const HostReport& report) {
    using nlohmann::json;
    json doc;
    doc["schema"] = "stockade.check/v1";
    doc["uid"] = report.euid;
    doc["kernel"] = report.kernel;
    doc["can_run"] = report.can_run;
    doc["blockers"] = report.blockers;
    doc["elapsed_us"] = report.elapsed_us;
    json probes = json::object();
    for (const auto& [name, us] : report.probe_us) probes[name] = us;
    doc["probe_us"] = probes;
    json checks = json::array();
    auto orNull = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
    for (const CheckEntry& e : report.entries)
        checks.push_back({{"id", e.id},
                          {"kind", checkKindName(e.kind)},
                          {"title", e.title},
                          {"state", checkStateName(e.state)},
                          {"mechanism", orNull(e.mechanism)},
                          {"reason", orNull(e.reason)},
                          {"fix", orNull(e.fix)},
                          {"required", e.required}});
    doc["checks"] = checks;
    return doc.dump(2) + "\n";
}

}  // namespace stockade
