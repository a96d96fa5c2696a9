// probeHost (host_check.h): runs the probe children and reads what the host
// answered into HostFacts. The children's side is host_probe_in_child.cpp.
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
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
#include <sstream>

#include "base/error.h"
#include "base/unique_fd.h"
#include "namespaces/landlock.h"
#include "namespaces/mount_plan.h"
#include "namespaces/user.h"
#include "runtime/cgroups/cgroup_fs.h"
#include "runtime/cgroups/cgroup_limits.h"
#include "runtime/check/host_check.h"
#include "runtime/check/host_check_internal.h"
#include "runtime/check/host_probe_in_child.h"
#include "runtime/check/host_verdicts.h"
#include "runtime/child/child_plan.h"
#include "runtime/child/child_protocol.h"
#include "runtime/net/direct_ingress.h"
#include "runtime/net/nftables.h"
#include "runtime/net/veth_backend.h"
#include "runtime/plan/identity.h"
#include "runtime/supervisor/sandbox_launch.h"
#include "seccomp/default_program.h"

namespace stockade {

using namespace host_check_detail;

namespace {

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

// ------------------------------------------------------------ probe children

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

// ------------------------------------------------------------ parent side

// The sandbox's setup, probed: a small plan of its own (a read-only /usr, a
// /tmp, a /proc: one mount of each kind the verdicts name) walked through
// the sandbox's setup table in its check mode, which reports every step and
// stops at the first failure, short of the execve (runtime/child/child_setup.h).
struct SandboxProbe {
    ChildPlan plan;
    std::vector<SandboxStep> op_steps;  // the step each mount op proves
};

SandboxProbe sandboxProbePlan(const HostFacts& facts) {
    SandboxProbe probe;
    ChildPlan& plan = probe.plan;
    plan.setup_mode = SetupMode::Check;
    plan.ids = {facts.sandbox_uid, facts.sandbox_host_uid, facts.sandbox_gid,
                facts.sandbox_host_gid};
    plan.hostname = "stockade";
    plan.workdir = "/";
    // The probe's root has no /dev: stdin stays `check`'s own, and the
    // command's steps place no capture pipes.
    plan.stdin_null = false;
    plan.mounts.staging = "/tmp";
    plan.mounts.root_options = "mode=0755,size=1m";
    using ns::MountKind;
    if (access("/usr", F_OK) == 0) {
        ns::addOp(plan.mounts, {.kind = MountKind::BindFromHost,
                                .source = "/usr",
                                .target = "usr",
                                .description = "mount /usr read-only"});
        probe.op_steps.push_back(SandboxStep::BindReadOnly);
    }
    ns::addOp(plan.mounts,
              {.kind = MountKind::Tmpfs, .target = "tmp", .data = "mode=1777,size=1m"});
    probe.op_steps.push_back(SandboxStep::TmpTmpfs);
    ns::addOp(plan.mounts, {.kind = MountKind::Proc, .target = "proc"});
    probe.op_steps.push_back(SandboxStep::Proc);
    std::string cap = trimmed(readFile("/proc/sys/kernel/cap_last_cap"));
    if (!cap.empty()) plan.last_cap = std::atoi(cap.c_str());
    // The default filter, and a Landlock ruleset mirroring these mounts
    // where the kernel has Landlock, so that their steps install what a
    // run's do, where a run's do (the probes above tell why either fails).
    auto program = seccomp::defaultProgram();
    plan.seccomp_program.assign(program.begin(), program.end());
    if (ns::probeLandlock().abi > 0) {
        ns::LandlockRequest request;
        ns::mirrorMountPlan(plan.mounts, request);
        request.network = ns::LandlockNetwork::Unrestricted;
        if (auto ruleset = ns::buildLandlockPlan(request)) plan.landlock = std::move(*ruleset);
    }
    return probe;
}

// What one step's report says for the verdicts (HostFacts::sandbox).
void recordStep(HostFacts& facts, const SandboxProbe& probe, const ChildMessage& m) {
    facts.setup_steps.emplace_back(describeStage(m.stage), m.err);
    auto opStep = [&](SandboxStep otherwise) {
        return m.op_index >= 0 && static_cast<size_t>(m.op_index) < probe.op_steps.size()
                   ? probe.op_steps[static_cast<size_t>(m.op_index)]
                   : otherwise;
    };
    switch (m.stage) {
        case ChildStage::SetIds:
            facts.sandbox[SandboxStep::SetIds] = m.err;
            break;
        case ChildStage::PrivateMounts:
            facts.sandbox[SandboxStep::PrivateMounts] = m.err;
            break;
        case ChildStage::OpenSources:
            if (m.err) facts.sandbox[opStep(SandboxStep::RootTmpfs)] = m.err;
            break;
        case ChildStage::BuildRoot:
            if (m.err) {
                facts.sandbox[opStep(SandboxStep::RootTmpfs)] = m.err;
                break;
            }
            facts.sandbox[SandboxStep::RootTmpfs] = 0;
            for (SandboxStep step : probe.op_steps) facts.sandbox[step] = 0;
            break;
        case ChildStage::SealRoot:
            facts.sandbox[SandboxStep::SealRoot] = m.err;
            break;
        case ChildStage::PivotRoot:
            facts.sandbox[SandboxStep::PivotRoot] = m.err;
            break;
        case ChildStage::Loopback:
            facts.sandbox[SandboxStep::Loopback] = m.err;
            break;
        case ChildStage::Hostname:
            facts.sandbox[SandboxStep::Hostname] = m.err;
            break;
        case ChildStage::Dumpable:
            facts.sandbox[SandboxStep::Dumpable] = m.err;
            break;
        case ChildStage::CgroupNamespace:
            facts.sandbox[SandboxStep::CgroupNs] = m.err;
            break;
        case ChildStage::DropCapabilities:
            facts.sandbox[SandboxStep::DropCapabilities] = m.err;
            break;
        case ChildStage::NoNewPrivs:
            facts.sandbox[SandboxStep::NoNewPrivs] = m.err;
            break;
        default:
            break;
    }
}

// Reads the child's step reports until it hangs up; false when the deadline
// passed first.
bool collectReports(int sync_fd, HostFacts& facts, const SandboxProbe& probe,
                    Clock::time_point deadline) {
    while (true) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) return false;
        pollfd pfd{sync_fd, POLLIN, 0};
        int ready = poll(&pfd, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return false;
        ChildMessage m{};
        ssize_t n = recv(sync_fd, &m, sizeof(m), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return true;
        if (n == sizeof(m) && m.kind == ChildMessageKind::StepReport &&
            static_cast<int>(m.stage) < kChildStageCount)
            recordStep(facts, probe, m);
    }
}

// The sandbox's own clone3, flags and all (the network namespace the clone's,
// as a dev server's), then its setup table in check mode.
void probeSandbox(HostFacts& facts) {
    SandboxProbe probe = sandboxProbePlan(facts);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        facts.sandbox_death = "could not start: " + Error::fromErrno("socketpair()").describe();
        return;
    }
    UniqueFd sync_parent(sv[0]), sync_child(sv[1]);
    probe.plan.sync_fd = sv[1];
    // init takes its signals with sigwaitinfo in a run; blocked here alike.
    sigset_t mask = signalsForInit(), old_mask;
    sigprocmask(SIG_BLOCK, &mask, &old_mask);

    int pidfd = -1;
    clone_args args{};
    args.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                 CLONE_NEWUTS | CLONE_PIDFD;
    args.pidfd = reinterpret_cast<uintptr_t>(&pidfd);
    args.exit_signal = SIGCHLD;
    long pid = syscall(SYS_clone3, &args, sizeof(args));
    if (pid == 0) runChildInChild(probe.plan);
    int clone_errno = errno;
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    if (pid < 0) {
        facts.sandbox[SandboxStep::Clone3] = clone_errno;
        return;
    }
    facts.sandbox[SandboxStep::Clone3] = 0;
    UniqueFd pidfd_owner(pidfd);
    sync_child.reset();

    facts.sandbox[SandboxStep::PidfdSignal] =
        syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0U) < 0 ? errno : 0;
    Status maps = ns::writeIdMaps(static_cast<pid_t>(pid), probe.plan.ids);
    facts.sandbox[SandboxStep::IdMaps] = maps                    ? 0
                                         : maps.error().errnum() ? maps.error().errnum()
                                                                 : EPERM;
    if (!maps) facts.id_maps_error = maps.error().describe();
    // "go" and "placed" (no v1 leaves: the probe's cgroups are check's own),
    // or, when the maps could not be written, the hang-up that ends it.
    char go = 1;
    if (!maps || send(sync_parent.get(), &go, 1, MSG_NOSIGNAL) != 1 ||
        sendPlacement(sync_parent.get(), nullptr, 0) != 0)
        shutdown(sync_parent.get(), SHUT_WR);

    bool finished = collectReports(sync_parent.get(), facts, probe, Clock::now() + kProbeTimeout);
    if (!finished) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0U);
    siginfo_t info{};
    if (syscall(SYS_waitid, P_PIDFD, pidfd, &info, WEXITED, nullptr) == 0) {
        facts.sandbox[SandboxStep::PidfdWait] = 0;
        int status = info.si_code == CLD_EXITED ? (info.si_status & 0xff) << 8 : info.si_status;
        facts.sandbox_death = describeEnding(status, !finished);
    } else {
        facts.sandbox[SandboxStep::PidfdWait] = errno;
        ProbeRun run;
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
    ProbeRun run = runForked([&ruleset](int fd) noexcept { landlockInChild(fd, ruleset); });
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

// The same try serve makes before it hands a host socket to a server.
void probeDirect(HostFacts& facts) {
    facts.direct_probed = true;
    if (auto problem = directIngressProblem()) facts.direct_error = *problem;
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
    // A worktree named is probed as a run mounts it, with what is mounted
    // beneath it; the temporary directory stands for its filesystem alone
    // (another program's mounts beneath /tmp, an overlay of a container
    // engine's, are not this host's answer, and made this probe flaky).
    UniqueFd dir(open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir) {
        facts.idmap_error = Error::fromErrno("open(\"" + path + "\", O_PATH)").describe();
        return;
    }
    auto tree = ns::makeIdmappedTree(dir.get(), path, ns::IdMapping{0, kNobody, 0, kNobody},
                                     request.worktree.has_value());
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
            // The same place runtime/cgroups/cgroup_limits.cpp makes its subtree.
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
    // The same places runtime/cgroups/cgroup_limits.cpp looks.
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
    facts.apparmor_enabled = trimmed(readFile("/sys/module/apparmor/parameters/enabled"));
    // The AppArmor-specific file first: with stacked LSMs attr/current is
    // the first major LSM's (SELinux's context, say).
    facts.apparmor_label = trimmed(readFile("/proc/self/attr/apparmor/current"));
    if (facts.apparmor_label.empty() && facts.apparmor_enabled == "Y")
        facts.apparmor_label = trimmed(readFile("/proc/self/attr/current"));
    facts.apparmor_installed_attachment = appArmorAttachment(readFile(kAppArmorProfilePath));
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
    struct stat systemd_dir;
    facts.systemd = lstat("/run/systemd/system", &systemd_dir) == 0 && S_ISDIR(systemd_dir.st_mode);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    facts.exe = n > 0 ? std::string(exe, static_cast<size_t>(n)) : "/usr/local/bin/stockade";
    // The profile the install shipped beside this binary, which may not be
    // in /etc/apparmor.d (the parser refused it, or there was none then).
    if (n > 0)
        facts.apparmor_shipped_attachment =
            appArmorAttachment(readFile(appArmorShippedProfile(facts.exe)));
}

}  // namespace

HostFacts probeHost(const HostCheckRequest& request) {
    HostFacts facts;
    facts.euid = geteuid();
    // The ids the sandbox maps by default (chooseIdentity): rootless, only
    // ourselves; as root, 65534 inside and a leased host id outside, held
    // while the probes run (65534 outside too when none is free: a run
    // would then refuse, which is not what the check is about).
    IdLease lease;
    if (facts.euid == 0)
        if (auto range = idRangeForRoot())
            if (auto leased = IdLease::acquire(*range)) lease = std::move(*leased);
    const uid_t root_host_id = lease.held() ? lease.id() : kNobody;
    facts.sandbox_uid = facts.euid == 0 ? kNobody : facts.euid;
    facts.sandbox_gid = facts.euid == 0 ? kNobody : getegid();
    facts.sandbox_host_uid = facts.euid == 0 ? root_host_id : facts.euid;
    facts.sandbox_host_gid = facts.euid == 0 ? root_host_id : getegid();
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
    timed("direct_backend", [&] { probeDirect(facts); });
    return facts;
}

}  // namespace stockade
