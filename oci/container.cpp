#include "oci/container.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/magic.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <tuple>

#include "base/proc_stat.h"
#include "base/small_file.h"
#include "oci/cgroups.h"
#include "oci/config.h"
#include "oci/container_plan.h"
#include "oci/device_cgroup.h"
#include "oci/hooks.h"
#include "oci/monitor.h"
#include "oci/profile.h"
#include "oci/stdio_pipes.h"
#include "runtime/child/child_protocol.h"
#include "runtime/child/command_signals_in_child.h"
#include "runtime/policy/writable_trees.h"
#include "runtime/supervisor/sandbox_launch.h"

namespace stockade::oci {

namespace {

using nlohmann::json;

Result<std::string> absolutePath(const std::string& path, const std::string& what) {
    char buf[PATH_MAX];
    if (!realpath(path.c_str(), buf))
        return Error::fromErrno(what + ": realpath(\"" + path + "\")");
    return std::string(buf);
}

// Written beside and renamed over, so a reader never sees it half written;
// decimal with no trailing newline (containerd's parser refuses "1234\n").
// The pid file beside its directory's other names, as exec writes it
// (writePidFileAt): the directory's owner may have put a FIFO or a link at
// any fixed name there.
Status writePidFile(const std::string& path, pid_t pid) {
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    UniqueFd dir_fd(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (name.empty()) return Error::message("--pid-file: \"" + path + "\" names a directory");
    if (!dir_fd) return Error::fromErrno("--pid-file: open(\"" + dir + "\")");
    if (int err = writePidFileAt(dir_fd.get(), name, std::to_string(pid)))
        return Error::fromErrno("--pid-file: write(\"" + path + "\")", err);
    return okStatus();
}

// The message for a child's setup failure, runc's words where podman maps
// them to an exit code (127, 126).
// create ended by the client's signal, read from `cancel_fd` (a signalfd).
Error cancelled(int cancel_fd) {
    signalfd_siginfo info{};
    int sig = read(cancel_fd, &info, sizeof(info)) == sizeof(info) ? int(info.ssi_signo) : 0;
    const char* abbrev = sig ? sigabbrev_np(sig) : nullptr;
    return Error::message(std::string("container setup failed: create ended by ") +
                          (abbrev ? std::string("SIG") + abbrev : std::string("a signal")) +
                          " before the container was created");
}

std::string childFailure(const ChildMessage& msg, const ChildPlan& plan) {
    // A createContainer hook's failure is its own message, as prestart's
    // is ("error running createContainer hook #0 (PATH): exit status 3,
    // stdout: ..., stderr: ..."): made printable by the child, checked
    // again here; an exec or a call that failed gets its errno's name.
    if (msg.stage == ChildStage::CreateContainerHooks) {
        std::string note = printableCallNote(msg);
        if (msg.err == ECANCELED || msg.err == ETIMEDOUT) return note;
        return note + ": " + errnoName(msg.err);
    }
    if (msg.stage == ChildStage::FindExecutable) {
        std::string name = plan.argv_storage.empty() ? "" : plan.argv_storage[0];
        if (msg.err == ENOENT || msg.err == ENOTDIR || msg.err == EACCES)
            return execFailureText(name, msg.err);
    }
    SandboxOutcome out;
    childSetupFailure(msg, plan, out);
    return "container setup failed: " + out.error_message + ": " + errnoName(msg.err);
}

// Everything `create` does, for create and run: the container's directory
// exists from the mkdir on, and is removed again on any failure, with the
// process killed, so a refused create leaves nothing.

// What create enforces, for the record: the namespaces, the filter's
// origin, the capabilities (their bounding set), no_new_privs, whether the
// root is idmapped, and where the limits are held.
std::map<std::string, std::string> enforcedBy(const Config& config, const std::string& profile,
                                              size_t cgroup_dirs, bool devices_held,
                                              bool idmapped_root) {
    std::map<std::string, std::string> out;
    for (const char* type : {"mount", "user", "cgroup"}) out[type] = "new";
    for (const Namespace& n : config.namespaces)
        if (n.type != "mount" && n.type != "user" && n.type != "cgroup")
            out[n.type] = n.path.empty() ? "new" : "joined";
    for (const char* type : {"network", "ipc", "uts", "pid"})
        if (!out.count(type)) out[type] = "the caller's";
    // A process that may remount gets stockade's mount refusals whatever
    // the spec asks (container_plan.h seccompProgramFor).
    std::string filter = config.seccomp ? "spec" : mayRemount(config) ? "stockade-mount" : "";
    if (!profile.empty()) filter += filter.empty() ? profile : "+" + profile;
    // An idmapped root's processes get the privileged-file guard and no
    // CAP_SETFCAP (container_plan.h ProcessGuards); exec reads "root" back.
    if (idmapped_root) filter += filter.empty() ? "stockade-guard" : "+stockade-guard";
    out["seccomp"] = filter.empty() ? "none" : filter;
    out["root"] = idmapped_root ? "idmapped" : "bound";
    const Config::CapabilityMasks caps =
        idmapped_root ? withoutFileCapabilitySetting(config.capabilities) : config.capabilities;
    char bounding[32];
    snprintf(bounding, sizeof(bounding), "%016llx", static_cast<unsigned long long>(caps.bounding));
    out["capabilities"] = bounding;
    out["noNewPrivileges"] = "true";
    if (cgroup_dirs) {
        struct statfs fs {};
        const bool v2 = statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
        out["limits"] = v2 ? "cgroup v2" : "cgroup v1";
    } else {
        out["limits"] = "none (no cgroup)";
    }
    // Read back by exec: a process that may remount needs device rules of
    // the container's own behind nodev (oci/device_cgroup.h).
    out["devices"] = !devices_held                  ? "none (no device cgroup)"
                     : out["limits"] == "cgroup v2" ? "cgroup v2 device program"
                                                    : "cgroup v1 devices";
    return out;
}

// Each of `pids` (init's descendants, listed a moment ago) held by a
// pidfd, kept only where it is alive and still init's descendant when
// listed again: a pid that ended and was reused between the listing and
// pidfd_open is not held.
std::vector<UniqueFd> holdStill(const std::vector<pid_t>& pids, pid_t init) {
    std::vector<std::pair<pid_t, UniqueFd>> opened;
    for (pid_t pid : pids) {
        UniqueFd fd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
        if (fd) opened.emplace_back(pid, std::move(fd));
    }
    const std::vector<pid_t> again = processesIn(init);
    std::vector<UniqueFd> held;
    for (auto& [pid, fd] : opened)
        if (std::find(again.begin(), again.end(), pid) != again.end() &&
            syscall(SYS_pidfd_send_signal, fd.get(), 0, nullptr, 0) == 0)
            held.push_back(std::move(fd));
    return held;
}

// SIGKILL to each held process, then their ends awaited (5 s at most in
// all): whether every one ended.
bool killHeldAndWait(const std::vector<UniqueFd>& held) {
    for (const UniqueFd& fd : held) syscall(SYS_pidfd_send_signal, fd.get(), SIGKILL, nullptr, 0);
    timespec start{};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (const UniqueFd& fd : held) {
        while (true) {
            timespec now{};
            clock_gettime(CLOCK_MONOTONIC, &now);
            const long left = 5000 - ((now.tv_sec - start.tv_sec) * 1000 +
                                      (now.tv_nsec - start.tv_nsec) / 1000000);
            if (left <= 0) return false;
            pollfd pfd{fd.get(), POLLIN, 0};
            const int n = poll(&pfd, 1, static_cast<int>(left));
            if (n > 0) break;
            if (n < 0 && errno != EINTR) return false;
        }
    }
    return true;
}

}  // namespace

std::string execFailureText(const std::string& name, int err) {
    const std::string quoted = "exec: \"" + name + "\": ";
    if (err == EACCES) return quoted + "permission denied";
    if (name.find('/') == std::string::npos) return quoted + "executable file not found in $PATH";
    return quoted + "stat " + name + ": " +
           (err == ENOTDIR ? "not a directory" : "no such file or directory");
}

std::string rfc3339Now() {
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    tm utc{};
    gmtime_r(&now.tv_sec, &utc);
    char buf[64];
    size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &utc);
    snprintf(buf + n, sizeof(buf) - n, ".%09ldZ", now.tv_nsec);
    return buf;
}

std::string notExist(const std::string& id) {
    return "container " + id + " does not exist";
}

std::optional<std::string> canonical(const std::string& path) {
    char real[PATH_MAX];
    if (!realpath(path.c_str(), real)) return std::nullopt;
    return std::string(real);
}

// What start and delete do is read back from the container's record under
// --root (its pid, its cgroups, the poststart and poststop hooks, host
// programs they run): a container that could write --root, make or replace
// it in its parent, or write beneath it (another container's directory, or
// its own, made before this check) could forge them. Refused, as `run`
// refuses a sandbox that could write its state directory. The writable
// trees: the rootfs unless read-only, each bind mount without "ro".
Status refuseWritableRoot(const Config& config, const std::string& bundle,
                          const std::string& root_dir) {
    auto absolute = [&](const std::string& path) {
        return path.starts_with("/") ? path : bundle + "/" + path;
    };
    const std::optional<std::string> root = canonical(root_dir);
    if (!root) return Error::fromErrno("realpath(\"" + root_dir + "\")");
    std::vector<std::string> writable;
    if (!config.root_readonly)
        if (auto r = canonical(absolute(config.root_path))) writable.push_back(*r);
    for (const Mount& m : config.mounts)
        if (m.bind && !(m.flags & MS_RDONLY))
            if (auto r = canonical(absolute(m.source))) writable.push_back(*r);
    auto refuse = [&](const std::string& tree) {
        return Error::message("the container could write " + tree + ", which holds --root " +
                              root_dir +
                              " (the containers' records, their hooks included: a later start "
                              "or delete would trust what it left there): mount it read-only "
                              "or keep --root out of it");
    };
    for (const std::string& tree : writable)
        if (tree == *root || tree.starts_with(*root + "/")) return refuse(tree);
    std::vector<std::string> dirs{*root};
    if (auto parent = canonical(*root + "/..")) dirs.push_back(*parent);
    if (writable.empty()) return okStatus();
    if (auto found = firstWritableBy(dirs, writable)) return refuse(found->tree);
    return okStatus();
}

Status createContainer(const std::string& root_dir, const std::string& id,
                       const std::string& bundle_arg, const std::string& pid_file,
                       const ConsoleTarget& console_target, bool systemd_cgroup,
                       const std::string& default_profile,
                       const std::function<void(const std::string&)>& note, Created& out) {
    if (auto s = validateId(id); !s) return s.error();
    auto bundle = absolutePath(bundle_arg, "bundle");
    if (!bundle) return bundle.error();
    UniqueFd bundle_fd(open(bundle->c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!bundle_fd) return Error::fromErrno("bundle: open(\"" + *bundle + "\")");
    auto text =
        readSmallFile(bundle_fd.get(), "config.json", *bundle + "/config.json", kMaxConfigBytes);
    if (!text) return text.error();
    auto config = parseConfig(text->content);
    if (!config) return config.error();
    if (auto s = checkHookPaths(config->hooks); !s) return s.error();
    auto runtime_profile = runtimeDefaultProfile(default_profile);
    if (!runtime_profile) return runtime_profile.error();
    auto profile = containerProfile(*config, *runtime_profile);
    if (!profile) return profile.error();
    if (!profile->empty())
        note("stockade profile \"" + *profile + "\": stockade's default seccomp filter" +
             (config->seccomp ? " after the spec's own (a call runs only if both allow it)" : "") +
             ", no capabilities, no_new_privs");
    // runc's rules: a terminal needs somewhere to send it, and a socket
    // needs a terminal to carry.
    if (config->terminal && console_target.socket_path.empty() && console_target.held < 0)
        return Error::message(
            "cannot allocate tty if stockade will detach without setting console socket");
    if (!config->terminal && !console_target.socket_path.empty())
        return Error::message("cannot use console socket if stockade will not allocate a tty");
    UniqueFd console;
    int console_fd = -1;
    if (config->terminal && !console_target.socket_path.empty()) {
        auto connected = connectConsoleSocket(console_target.socket_path);
        if (!connected) return connected.error();
        console = std::move(*connected);
        console_fd = console.get();
    } else if (config->terminal) {
        console_fd = console_target.held;
    }
    for (const std::string& name : config->seccomp_dropped)
        note("linux.seccomp: \"" + name +
             "\" has a second unconditional action; the first holds, as under runc and crun");
    if (config->capabilities.ambient_dropped)
        note(
            "process.capabilities.ambient: capabilities not both permitted and inheritable are "
            "not raised, as under runc and crun");
    if (!config->no_new_privileges)
        note(
            "process.noNewPrivileges is false: stockade sets no_new_privs in every "
            "container all the same (G4)");

    auto root = openRoot(root_dir, true);
    if (!root) return root.error();
    if (mkdirat(root->get(), id.c_str(), 0700) < 0) {
        if (errno == EEXIST) return Error::message("container with id exists: " + id);
        return Error::fromErrno("mkdir(\"" + root_dir + "/" + id + "\")");
    }
    // In a pid namespace joined by path, or the caller's, the container's
    // processes outlive its init: the cgroup is how they all end
    // (oci/pid_join.h).
    const bool joins_pid = config->sharesPidNamespace();
    bool ok = false;
    std::optional<ContainerCgroups> cgroups;
    std::optional<pid_t> started;
    UniqueFd started_pidfd;
    // In a shared pid namespace, init's descendants once the command has
    // parked (the command, and nothing after it: a parked command runs no
    // program), held by pidfd: what a failed create ends, and nothing else.
    std::vector<UniqueFd> parked;
    struct Cleanup {
        std::function<void()> run;
        ~Cleanup() { run(); }
    } cleanup{[&] {
        if (ok) return;
        bool children_ended = false;
        if (started_pidfd) {
            // In a shared pid namespace init is not PID 1, and its end
            // does not end the command it parked: the processes held once
            // it parked, whatever became of init since (its end, on this
            // create's failure, may come first: the sync socket closes
            // before this runs, and its children then go to another
            // parent). Before that, init's children, found in the
            // container's cgroup while it is frozen; another create's
            // processes there are left alone either way. Where neither
            // holds, only emptying the cgroups below ends them.
            siginfo_t ended{};
            const bool init_there = syscall(SYS_waitid, P_PIDFD, started_pidfd.get(), &ended,
                                            WEXITED | WNOHANG | WNOWAIT, nullptr) == 0 &&
                                    ended.si_pid == 0;
            if (!parked.empty())
                children_ended = killHeldAndWait(parked);
            else if (cgroups && joins_pid && init_there && started)
                children_ended = killChildrenInContainerCgroups(cgroups->dirs, *started).ok();
            syscall(SYS_pidfd_send_signal, started_pidfd.get(), SIGKILL, nullptr, 0);
            siginfo_t info;
            syscall(SYS_waitid, P_PIDFD, started_pidfd.get(), &info, WEXITED, nullptr);
        }
        // Elsewhere init was PID 1 of the container's pid namespace: its
        // end ended every process of the container, a createContainer
        // hook's too. A cgroup is emptied whole only in a shared pid
        // namespace whose init's children could not be found, and only
        // one this create made: a cgroupsPath is no container's alone, and
        // another create may have joined the one made here since. Then the
        // directories this create made; rmdir leaves one that still holds
        // another's processes, and one that was there stays.
        if (cgroups && joins_pid && !children_ended) (void)killContainerCgroups(cgroups->made_here);
        if (cgroups) (void)removeContainerCgroups(cgroups->made_here);
        (void)removeContainer(root->get(), id);
    }};
    auto dir = openContainer(root->get(), id);
    if (!dir) return dir.error();
    flock(dir->get(), LOCK_EX);
    // The config as read here, kept for exec (oci/state.h).
    if (auto s =
            writeNewSmallFile(dir->get(), kConfigFile, id + "/" + kConfigFile, text->content, 0400);
        !s)
        return s.error();
    // After the container's own directory exists: a bind of it is judged too.
    if (auto s = refuseWritableRoot(*config, *bundle, root_dir); !s) return s.error();

    // The cgroup first: a limit that cannot be set refuses the container
    // before anything of it exists.
    if (joins_pid && !isHostRoot())
        return Error::message(
            std::string("config.json: linux.namespaces (pid): ") +
            (config->callersPidNamespace() ? "a container in the caller's pid namespace (none "
                                             "listed)"
                                           : "joining a pid namespace") +
            " rootless is not supported yet: the container's init is not PID 1 there, so "
            "stockade ends its processes through a cgroup of its own, and a rootless container "
            "has none yet");
    // CAP_SYS_ADMIN in the container's user namespace can remount its
    // mounts `dev` (H2): as root the device cgroup then stands behind
    // nodev, so such a container always has a cgroup (oci/device_cgroup.h).
    const bool may_remount = mayRemount(*config);
    if (may_remount && !isHostRoot())
        note(
            "process.capabilities: CAP_SYS_ADMIN: the container can remount its mounts "
            "(nodev and nosuid undone; stockade's filter keeps a read-only one read-only), and "
            "no device cgroup holds rootless (docs/threat-model.md, \"Residual risks\")");
    // As root every container has a cgroup, as under runc (pause, the
    // device rules, its processes found whole); one nothing asked for is
    // made where it can be (a read-only cgroupfs, inside another
    // container, is said and run without), one asked for or needed is
    // required.
    const bool cgroup_required = !config->cgroups_path.empty() || config->resources.any() ||
                                 joins_pid || (may_remount && isHostRoot());
    if (cgroup_required || isHostRoot()) {
        if (!isHostRoot()) {
            // Named by field where one is asked (podman's --cpuset-cpus
            // among them), so the message says what could not be held.
            std::string fields = config->cgroups_path.empty() ? "" : "linux.cgroupsPath";
            const Resources& r = config->resources;
            for (const auto& [asked, name] :
                 {std::pair{r.memory_limit || r.swap_limit || r.wants_memory_tuning(), "memory"},
                  std::pair{bool(r.pids_limit), "pids.limit"}, std::pair{r.wants_cpu(), "cpu"},
                  std::pair{bool(r.cpuset_cpus), "cpu.cpus"},
                  std::pair{bool(r.cpuset_mems), "cpu.mems"},
                  std::pair{!r.hugepage_limits.empty(), "hugepageLimits"},
                  std::pair{!r.unified.empty(), "unified"}})
                if (asked)
                    fields += std::string(fields.empty() ? "" : ", ") + "linux.resources." + name;
            return Error::message("config.json: " + fields +
                                  ": cgroups of a rootless container are not supported yet (no "
                                  "cgroup of its own to hold the limit)");
        }
        const std::optional<std::string> canonical_root = canonical(root_dir);
        if (!canonical_root) return Error::fromErrno("realpath(\"" + root_dir + "\")");
        auto path = cgroupfsPath(config->cgroups_path, id, systemd_cgroup, *canonical_root);
        if (!path) return path.error();
        if (systemd_cgroup)
            note("--systemd-cgroup: " + config->cgroups_path + " made as " + *path +
                 " by cgroupfs writes (no systemd unit is started)");
        // pids.limit once init and the command are in (below): init joins
        // before it forks the command, whose fork would count against a
        // limit of 1 (runc's init is the command itself).
        // Refused before anything is made or run, its pids.* keys too
        // (written late, below): runc refuses them on v1 as well.
        if (!config->resources.unified.empty() && !unifiedCgroups())
            return Error::message(
                "linux.resources.unified: cgroup v2 files, and this host's container cgroups "
                "are v1 (/sys/fs/cgroup is no cgroup2 mount)");
        Resources early = config->resources;
        early.pids_limit.reset();
        // unified's pids files likewise, written after pids.limit as runc
        // writes unified last.
        std::erase_if(early.unified, [](const auto& kv) { return kv.first.starts_with("pids."); });
        CgroupAsk ask{*path, early};
        // A default cgroup is the container's alone (no cgroupsPath may name
        // one); one killed whole, too. Either is made here or refused.
        if (config->cgroups_path.empty()) {
            ask.must_be_new = true;
            ask.must_be_new_why = "a default cgroup is one container's alone";
        } else if (joins_pid) {
            ask.must_be_new = true;
            ask.must_be_new_why =
                "a container joining a pid namespace ends by the kill of every process in its "
                "cgroup";
        }
        // Every container with a cgroup gets the device rules; one that
        // can remount cannot be made without them.
        ask.devices = true;
        ask.devices_required = may_remount;
        ask.device_rules = containerDeviceRules(config->devices, config->resources.device_rules);
        ask.best_effort = !cgroup_required;
        auto made = makeContainerCgroups(ask);
        if (!made) return made.error();
        if (made->unavailable.empty()) {
            cgroups = std::move(*made);
            // Named before anything runs in them: a create killed from here
            // on leaves them to `delete --force` (removeUnrecordedContainer).
            std::string listed;
            for (const std::string& d : cgroups->made_here) listed += d + "\n";
            if (auto s = writeNewSmallFile(dir->get(), kCgroupsFile, id + "/" + kCgroupsFile,
                                           listed, 0600);
                !s)
                return s.error();
        } else
            note("no cgroup of the container's own (" + made->unavailable +
                 "): it cannot be paused, and no device cgroup holds");
        if (joins_pid && !canKillWhole(cgroups->dirs))
            return Error::message(
                "config.json: linux.namespaces (pid): joining a pid namespace needs v2's "
                "cgroup.kill (Linux 5.14) or a v1 freezer hierarchy, to end the container's "
                "processes without signalling pids it could have reused");
    }
    // An overlay image root is made again as the container's own overlay
    // (oci/idmapped_root.h), with a work directory named for the container
    // and listed here before it is made.
    const OverlayWork overlay_work{
        kOverlayWorkPrefix + id.substr(0, 200), [&](const std::string& path) {
            return writeNewSmallFile(dir->get(), kOverlayWorkFile, id + "/" + kOverlayWorkFile,
                                     path, 0600);
        }};
    auto planned =
        planContainer(*config, *bundle, cgroups ? cgroups->dirs : std::vector<std::string>{},
                      *profile, cgroups && cgroups->devices_held, &overlay_work);
    if (!planned) return planned.error();
    ContainerPlan& cplan = *planned;
    for (const std::string& said : cplan.notes) note(said);
    ChildPlan& plan = cplan.plan;
    const bool idmapped_root = cplan.idmapped_root.tree.valid();
    // The refusals by name: the command installs the notified program and
    // hands its listener to the monitor, which answers and counts them.
    auto denials = planDenials(*config, *profile, idmapped_root, plan);
    if (!denials) return denials.error();

    if (mkfifoat(dir->get(), kExecFifo, 0600) < 0) return Error::fromErrno("mkfifo(exec.fifo)");
    UniqueFd fifo_read(
        openat(dir->get(), kExecFifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW));
    if (!fifo_read) return Error::fromErrno("open(exec.fifo, O_RDONLY)");
    UniqueFd fifo_write(openat(dir->get(), kExecFifo, O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fifo_write) return Error::fromErrno("open(exec.fifo, O_WRONLY)");
    if (fcntl(fifo_read.get(), F_SETFL, 0) < 0) return Error::fromErrno("fcntl(exec.fifo)");
    // createContainer and startContainer: run by the child side, in the
    // container's namespaces (runtime/child/hooks_in_child.h), with the
    // state as their moment has it: "creating", then "created".
    std::vector<UniqueFd> hook_fds;
    const json hook_state = {{"ociVersion", "1.2.0"},
                             {"id", id},
                             {"bundle", *bundle},
                             {"rootfs", cplan.rootfs},
                             {"annotations", config->annotations}};
    for (auto [list, hooks, status, on_host] :
         {std::tuple{&plan.create_container_hooks, &config->hooks.create_container, "creating",
                     true},
          std::tuple{&plan.start_container_hooks, &config->hooks.start_container, "created",
                     false}}) {
        json state = hook_state;
        state["status"] = status;
        auto made = childHookList(
            list == &plan.create_container_hooks ? "createContainer" : "startContainer", *hooks,
            state, on_host, hook_fds);
        if (!made) return made.error();
        *list = std::move(*made);
    }
    // Each createContainer hook is PID 1 of a pid namespace of its own, so
    // that what it starts ends with it; one cannot be made inside a pid
    // namespace joined by path (its owner is not the container's user
    // namespace's), where what a hook left would outlive the container.
    if (joins_pid && !config->hooks.create_container.empty())
        return Error::message(std::string("config.json: hooks.createContainer: not run in ") +
                              (config->callersPidNamespace() ? "the caller's pid namespace"
                                                             : "a pid namespace joined by path") +
                              " (what a hook starts could not be ended with it)");
    // A hook gets the host's /tmp back by taking the staging mount off
    // there: a root.path that is /tmp or holds it (/) would have its clone
    // taken off with it, and what is beneath unmounted in init's too.
    const std::string& staging = plan.mounts.staging;
    if (!config->hooks.create_container.empty() &&
        (cplan.rootfs == staging || cplan.rootfs == "/" || staging.starts_with(cplan.rootfs + "/")))
        return Error::message("config.json: root.path: " + cplan.rootfs + " is or holds " +
                              staging +
                              ", where create builds the root: not supported with "
                              "hooks.createContainer");
    plan.create_container_hooks.own_pid_namespace = true;
    plan.create_container_hooks.root_path = cplan.rootfs;
    plan.create_container_hooks.uncover = plan.mounts.staging;
    plan.console_socket_fd = console_fd;
    plan.start_fifo_read_fd = fifo_read.get();
    plan.start_fifo_write_fd = fifo_write.get();

    // Hooks run in the runtime's namespaces, which create leaves for the
    // ones it joins: their child goes back to these first.
    HookPlace hook_place;
    std::vector<UniqueFd> own_namespaces;
    for (const auto& join : cplan.joins) {
        const char* name = join.second == CLONE_NEWNET   ? "net"
                           : join.second == CLONE_NEWIPC ? "ipc"
                           : join.second == CLONE_NEWUTS ? "uts"
                           : join.second == CLONE_NEWPID ? "pid_for_children"
                                                         : nullptr;
        if (!name) return Error::message("hooks: a joined namespace of an unexpected type");
        const std::string path = std::string("/proc/self/ns/") + name;
        UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd) return Error::fromErrno("hooks: open(\"" + path + "\")");
        hook_place.namespaces.emplace_back(fd.get(), join.second);
        own_namespaces.push_back(std::move(fd));
    }
    for (auto& [fd, type] : cplan.joins)
        if (setns(fd.get(), type) < 0)
            return Error::fromErrno("linux.namespaces: setns(" + std::to_string(type) + ")");
    if (auto s = prepareJoinedNamespaces(cplan); !s) return s.error();
    // process.oomScoreAdj: inherited by the clone as umask is; a value
    // below the caller's needs CAP_SYS_RESOURCE, and without it create fails.
    // Each of these is the runtime's own again once the clone has them
    // (below): what runs from here after it (the hooks) is the host's.
    std::string own_oom_score_adj;
    if (config->oom_score_adj)
        if (auto own = readSmallFile(AT_FDCWD, "/proc/self/oom_score_adj", "oom_score_adj", 64))
            own_oom_score_adj = own->content;
    const mode_t own_umask = ::umask(0);
    ::umask(own_umask);
    std::vector<gid_t> own_groups(static_cast<size_t>(std::max(0, getgroups(0, nullptr))));
    if (getgroups(static_cast<int>(own_groups.size()), own_groups.data()) < 0) own_groups.clear();
    if (config->oom_score_adj) {
        UniqueFd adj(open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC));
        const std::string text = std::to_string(*config->oom_score_adj);
        if (!adj || write(adj.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
            return Error::fromErrno("config.json: process.oomScoreAdj: write(" + text + ")");
    }
    // process.user.umask: the clone inherits it, and so does the command.
    if (config->umask) ::umask(*config->umask);
    // As root: the container's supplementary groups, as host gids, and none
    // of root's; the clone inherits them and its user namespace denies
    // setgroups, so nothing in the container can change them (oci/groups.h).
    // So too where the container has the ids of the caller's own namespace
    // (rootless podman's, ns::IdMapping::callers_ranges), whose groups the
    // caller may set: not the caller's group 0 (the podman user's own).
    const bool sets_groups = isHostRoot() || (cplan.ids.callersIds() && cplan.sets_groups);
    if (sets_groups && setgroups(cplan.host_groups.size(), cplan.host_groups.data()) < 0)
        return Error::fromErrno("setgroups(" + std::to_string(cplan.host_groups.size()) +
                                " host gids of process.user.additionalGids)");
    if (isHostRoot() || cplan.ids.callersIds()) giveStdioPipes(cplan.ids.host_uid);
    // init takes its signals with sigwaitinfo, so they are blocked before
    // the clone, which inherits the mask: every signal init may take
    // (runtime/child/command_signals_in_child.h). After the clone, create
    // keeps blocked only what it reads itself (runtime/supervisor/sandbox_launch.h).
    sigset_t mask = containerInitSignals(), own_mask;
    if (sigprocmask(SIG_BLOCK, &mask, &own_mask) < 0) return Error::fromErrno("sigprocmask()");
    sigset_t create_mask = signalsForInit();
    sigorset(&create_mask, &create_mask, &own_mask);
    // Blocked, a client's SIGTERM (timeout(1), a shim giving up) would not
    // end a create that waits on its child or a hook: it is read here
    // instead, and ends create as a failure does, nothing left behind.
    sigset_t ending;
    sigemptyset(&ending);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&ending, sig);
    UniqueFd cancel(signalfd(-1, &ending, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!cancel) return Error::fromErrno("signalfd()");
    hook_place.cancel_fd = cancel.get();

    LaunchSpec spec;
    spec.namespaces = cplan.clone_flags;
    spec.ids = &cplan.ids;
    spec.seccomp_listener = !plan.seccomp_notified_program.empty();
    spec.net_in_clone = true;
    // The container's cgroups before init unshares its cgroup namespace:
    // their directory is its root, as under runc (not the runtime's own).
    spec.before_placed = [&](pid_t init_pid) -> Status {
        if (!cgroups) return okStatus();
        return joinContainerCgroups(*cgroups, {init_pid});
    };
    spec.after_clone = [&] {
        plan.prepared.clear();
        hook_fds.clear();
        cplan.lease_fd.reset();
    };
    LaunchedSandbox launched;
    SandboxOutcome failed;
    if (!launchSandbox(plan, spec, launched, failed)) {
        // No process may be born in a pid namespace whose PID 1 has ended
        // (pid_namespaces(7)): the clone's ENOMEM, said for what it is.
        if (joins_pid && failed.error_errno == ENOMEM)
            return Error::message(
                "container setup failed: linux.namespaces (pid): the joined pid namespace "
                "cannot take the container (its init has ended)");
        return Error::message("container setup failed: " + failed.error_message +
                              (failed.error_errno ? ": " + errnoName(failed.error_errno) : ""));
    }
    started = launched.pid;
    started_pidfd = std::move(launched.pidfd);
    if (sigprocmask(SIG_SETMASK, &create_mask, nullptr) < 0)
        return Error::fromErrno("sigprocmask()");
    // The runtime's own namespaces, umask, OOM score and groups again: the
    // hooks, and under `run` poststart and poststop, run from this process
    // on the host (as runc's do), not in the namespaces joined for the clone
    // nor with the container's umask or score.
    // Rootless, the runtime may sit in a namespace it needed no capability
    // to be in (rootless podman runs it in the host's network namespace,
    // which the initial user namespace owns): once it has joined another
    // (a pod's), it cannot go back (EPERM). Only the hooks it runs need it
    // back (runc's parent never leaves); without them create goes on where
    // it is, and the monitor forked from here holds nothing of a network.
    bool returned = true;
    for (const UniqueFd& fd : own_namespaces)
        if (setns(fd.get(), 0) < 0) {
            if (errno != EPERM || isHostRoot())
                return Error::fromErrno("setns(the runtime's own namespace)");
            returned = false;
        }
    if (!returned && (!config->hooks.prestart.empty() || !config->hooks.create_runtime.empty()))
        return Error::message(
            "config.json: hooks: prestart and createRuntime cannot run in the runtime's "
            "namespaces: once create has joined the container's (linux.namespaces with a path), "
            "it cannot return to its own, which its user namespace does not own (EPERM)");
    ::umask(own_umask);
    if (!own_oom_score_adj.empty()) {
        UniqueFd adj(open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC));
        if (adj) (void)!write(adj.get(), own_oom_score_adj.data(), own_oom_score_adj.size());
    }
    // Empty included: the container's groups must not stay with the hooks
    // and the monitor forked from here.
    if (isHostRoot() && setgroups(own_groups.size(), own_groups.data()) < 0)
        return Error::fromErrno("setgroups(the runtime's own " + std::to_string(own_groups.size()) +
                                " groups)");

    // Parked, or the first failure the child names, or its end, or the
    // client's signal.
    while (true) {
        pollfd fds[3] = {{launched.sync.get(), POLLIN, 0},
                         {started_pidfd.get(), POLLIN, 0},
                         {cancel.get(), POLLIN, 0}};
        if (poll(fds, 3, -1) < 0) {
            if (errno == EINTR) continue;
            return Error::fromErrno("poll()");
        }
        if (fds[2].revents) return cancelled(cancel.get());
        ChildMessage msg;
        ssize_t n = receiveChildMessage(launched.sync.get(), msg);
        if (n == sizeof(msg)) {
            if (msg.kind == ChildMessageKind::Parked) break;
            if (msg.kind == ChildMessageKind::SetupFailed ||
                msg.kind == ChildMessageKind::ExecFailed)
                return Error::message(childFailure(msg, plan));
            continue;
        }
        if (n < 0 && errno == EAGAIN && !(fds[1].revents & POLLIN)) continue;
        return Error::message("container setup failed: its init ended before it was set up");
    }

    Record record;
    record.id = id;
    record.pid = *started;
    record.start_time = processStartTime(*started);
    record.bundle = *bundle;
    record.rootfs = cplan.rootfs;
    record.created = rfc3339Now();
    record.annotations = config->annotations;
    record.profile = *profile;
    record.enforced = enforcedBy(*config, *profile, cgroups ? cgroups->dirs.size() : 0,
                                 cgroups && cgroups->devices_held, idmapped_root);
    // Its own pid namespace beneath init's, or init's: `exec` joins the
    // command's (commandPidNamespaceNested).
    record.enforced["command pid"] = cplan.plan.command_pid_ns ? "1" : "2";
    // The ids of the caller's own namespace (rootless podman's subordinate
    // ids): `exec` gives groups and stdio as create did only for these.
    record.enforced["ids"] = cplan.ids.callersIds() ? "the caller's" : "mapped";
    // Whether the container's processes may call setgroups(2) (oci/groups.h),
    // as the kernel says it for init: "deny" is inherited from a caller's
    // namespace that denies it, and a joined user namespace keeps its own.
    {
        const std::string path = "/proc/" + std::to_string(*started) + "/setgroups";
        auto said = readSmallFile(AT_FDCWD, path.c_str(), path, 64);
        record.enforced["setgroups"] =
            said && said->content.starts_with("allow") ? "allow" : "deny";
    }
    record.denials.counted = launched.listener.valid();
    record.denials.not_counted = denials->not_counted;
    // Into the cgroup while everything of the container is parked: init and
    // the command, before a byte of the bundle's program has run.
    if (cgroups) {
        std::vector<pid_t> pids = processesIn(*started);
        if (joins_pid) parked = holdStill(pids, *started);
        pids.insert(pids.begin(), *started);
        if (auto s = joinContainerCgroups(*cgroups, pids); !s) return s.error();
        record.cgroups = cgroups->dirs;
        Resources late;
        late.pids_limit = config->resources.pids_limit;
        for (const auto& [key, value] : config->resources.unified)
            if (key.starts_with("pids.")) late.unified[key] = value;
        if (late.any())
            if (auto s = applyResources(cgroups->dirs, late); !s) return s.error();
    }
    if (record.start_time == 0) return Error::message("container setup failed: its init is gone");
    // prestart and createRuntime, on the host, with the command parked
    // before its exec (after pivot_root: stockade's child does its whole
    // setup in one order before it parks; docs/oci.md "Hooks"). The state
    // they read is the record's: the held pid, the config's annotations.
    record.hooks.poststart = config->hooks.poststart;
    record.hooks.poststop = config->hooks.poststop;
    if (!config->hooks.prestart.empty() || !config->hooks.create_runtime.empty()) {
        const std::string state = stateJson(record, Status3::Created);
        for (auto [name, list] : {std::pair{"prestart", &config->hooks.prestart},
                                  std::pair{"createRuntime", &config->hooks.create_runtime}})
            if (auto s = runHooks(name, *list, state, hook_place); !s) {
                pollfd pending{cancel.get(), POLLIN, 0};
                if (poll(&pending, 1, 0) == 1) return cancelled(cancel.get());
                return s.error();
            }
        if (processStartTime(*started) != record.start_time)
            return Error::message("container setup failed: its init ended during the hooks");
    }
    // The monitor, from here on the holder of this end of the sync socket
    // (oci/monitor.h): forked after the cgroup join, so it is not of the
    // container's cgroup; ended with this process until it commits.
    auto monitor =
        Monitor::start(dir->get(), launched.sync.get(),
                       launched.listener ? launched.listener.get() : -1, denials->source, id);
    if (!monitor) return monitor.error();
    // The monitor's alone: the listener is the first thing on it after start.
    launched.listener.reset();
    record.monitor_pid = monitor->pid();
    record.monitor_start_time = monitor->startTime();
    if (record.monitor_start_time == 0) return Error::message("monitor: it ended at its start");
    if (auto s = writeRecord(dir->get(), record); !s) return s.error();
    if (!pid_file.empty())
        if (auto s = writePidFile(pid_file, *started); !s) return s.error();
    // Committed, by the monitor: the parked command may now wait for
    // `start`. A create that dies before this leaves no process behind.
    if (auto s = monitor->commit(); !s) return s.error();
    ok = true;
    out.pid = *started;
    out.pidfd = std::move(started_pidfd);
    out.terminal = config->terminal;
    return okStatus();
}

Result<Opened> openExisting(const std::string& root_dir, const std::string& id) {
    if (auto s = validateId(id); !s) return s.error();
    Opened out;
    auto root = openRoot(root_dir, false);
    if (!root) return Error::message(notExist(id));
    out.root = std::move(*root);
    auto dir = openContainer(out.root.get(), id);
    if (!dir) return Error::message(notExist(id));
    out.dir = std::move(*dir);
    flock(out.dir.get(), LOCK_EX);
    auto record = readRecord(out.dir.get(), id);
    if (!record) return record.error();
    out.record = std::move(*record);
    return out;
}

Status removeUnrecordedContainer(int root_fd, const std::string& id) {
    auto dir = openContainer(root_fd, id);
    if (!dir) return okStatus();
    // A create killed left the cgroups it made listed, and whatever runs
    // there. The lock is held by a create still running (which cleans up
    // after itself) or for a moment by another command: waited for a
    // while, and if still held nothing is touched, so that the list is
    // never removed before its cgroups.
    bool locked = false;
    for (int tries = 0; tries < 100 && !locked; ++tries) {
        locked = flock(dir->get(), LOCK_EX | LOCK_NB) == 0;
        if (!locked) usleep(20 * 1000);
    }
    if (!locked) return okStatus();
    // Read again under the lock: a create that finished meanwhile wrote one.
    if (readRecord(dir->get(), id))
        return Error::message("container " + id +
                              " was created meanwhile: delete it again to remove it");
    const std::vector<std::string> cgroups = readPendingCgroups(dir->get());
    // As a failing create's own cleanup: emptied only where the pid
    // namespace is shared (joined, or the caller's), so that its processes
    // outlive init; elsewhere init was PID 1 and took them with it when it
    // saw create gone, and what is in the directory now is another's that
    // joined the same cgroupsPath. The config is the copy create kept
    // before it made any cgroup; one that cannot be read is taken as shared.
    auto kept = readSmallFile(dir->get(), kConfigFile, id + "/" + kConfigFile, kMaxConfigBytes);
    auto config = kept ? parseConfig(kept->content) : Result<Config>(kept.error());
    const bool shared = !config || config->sharesPidNamespace();
    if (shared)
        if (auto s = killContainerCgroups(cgroups); !s) return s.error();
    // A directory still busy there is the other's now (its own delete
    // removes it), and stays.
    if (auto s = removeContainerCgroups(cgroups); !s && (shared || s.error().errnum() != EBUSY))
        return s.error();
    return removeContainer(root_fd, id);
}

Status destroyContainer(const Opened& c) {
    // Its init gone, a container in a joined pid namespace may still have
    // processes (reparented to that namespace's PID 1): they end here.
    if (pidNamespaceJoined(c.record))
        if (auto s = killContainerCgroups(c.record.cgroups); !s) return s.error();
    stopMonitor(c.record);
    // Stopped is init gone; the container's last processes (and the
    // monitor) may take a loaded host longer than create's 100 ms to leave
    // its cgroups: an earlier CI run left an empty v1 directory so. runc
    // tries about 300 ms; a delete waits up to 2 s.
    if (auto s = removeContainerCgroups(c.record.cgroups, 2000); !s) return s.error();
    return removeContainer(c.root.get(), c.record.id);
}

Status startContainer(const Opened& c) {
    Status3 status = statusOf(c.dir.get(), c.record);
    if (status == Status3::Stopped)
        return Error::message("cannot start a container that has stopped");
    if (status == Status3::Running)
        return Error::message("cannot start an already running container");
    if (status == Status3::Paused)
        return Error::message("cannot start a container in the paused state");
    UniqueFd fifo(openat(c.dir.get(), kExecFifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW));
    if (!fifo) {
        if (errno == ENXIO) return Error::message("cannot start a container that has stopped");
        return Error::fromErrno("open(exec.fifo)");
    }
    char go = 0;
    if (write(fifo.get(), &go, 1) != 1) return Error::fromErrno("write(exec.fifo)");
    unlinkat(c.dir.get(), kExecFifo, 0);
    return okStatus();
}

namespace {

void runHooksAfter(const char* name, Opened c, Status3 status,
                   const std::function<void(const std::string&)>& warn) {
    const Record record = std::move(c.record);
    const std::vector<Hook>& list =
        std::string_view(name) == "poststart" ? record.hooks.poststart : record.hooks.poststop;
    if (list.empty()) return;
    const std::string state = stateJson(record, status);
    c = Opened{};
    for (const std::string& failure : runHooksWarning(name, list, state)) warn(failure);
}

}  // namespace

void runPoststart(Opened c, const std::function<void(const std::string&)>& warn) {
    const Status3 status = statusOf(c.dir.get(), c.record);
    runHooksAfter("poststart", std::move(c), status, warn);
}

void runPoststop(Opened c, const std::function<void(const std::string&)>& warn) {
    runHooksAfter("poststop", std::move(c), Status3::Stopped, warn);
}

// The container's init by a pidfd, checked to be the recorded process
// after it was opened (so a reused pid is never signalled); none when gone.
UniqueFd pidfdOf(const Record& record) {
    UniqueFd fd(static_cast<int>(syscall(SYS_pidfd_open, record.pid, 0)));
    if (!fd) return fd;
    if (processStartTime(record.pid) != record.start_time) fd.reset();
    return fd;
}

void thawAfterKill(const Record& record) {
    // A v1 freezer holds even SIGKILL until the cgroup is thawed (v2's
    // lets fatal signals through); a container paused and killed must die.
    if (containerCgroupsFrozen(record.cgroups)) (void)freezeContainerCgroups(record.cgroups, false);
}

void killAndWait(const Record& record) {
    UniqueFd fd = pidfdOf(record);
    if (!fd) return;
    syscall(SYS_pidfd_send_signal, fd.get(), SIGKILL, nullptr, 0);
    thawAfterKill(record);
    pollfd pfd{fd.get(), POLLIN, 0};
    while (poll(&pfd, 1, -1) < 0 && errno == EINTR) {
    }
    if (pidNamespaceJoined(record)) (void)killContainerCgroups(record.cgroups);
}

bool commandPidNamespaceNested(const Record& record) {
    auto pid = record.enforced.find("command pid");
    return pid != record.enforced.end() && pid->second == "1";
}

bool pidNamespaceJoined(const Record& record) {
    auto pid = record.enforced.find("pid");
    return pid != record.enforced.end() &&
           (pid->second == "joined" || pid->second == "the caller's");
}

PidNumbers pidNumbersOf(pid_t pid) {
    const std::string path = "/proc/" + std::to_string(pid) + "/status";
    auto file = readSmallFile(AT_FDCWD, path.c_str(), path, 64 * 1024);
    PidNumbers numbers;
    if (!file) return numbers;
    std::istringstream in(file->content);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string key;
        fields >> key;
        if (key == "PPid:") fields >> numbers.parent;
        if (key == "NSpid:")
            for (pid_t p; fields >> p;) numbers.in_namespaces.push_back(p);
    }
    return numbers;
}

std::vector<pid_t> containerProcesses(const Record& record) {
    std::vector<pid_t> out;
    if (!pidNamespaceJoined(record)) {
        out = processesIn(record.pid);
        // An `exec`'s processes are no descendants of init (their parent is
        // the exec, outside): those of the container's cgroup in a pid
        // namespace at least as deep as init's, which the exec itself, in
        // the cgroup but in the caller's pid namespace, is not.
        const size_t depth = pidNumbersOf(record.pid).in_namespaces.size();
        if (depth > 0)
            for (pid_t pid : processesInContainerCgroups(record.cgroups))
                if (pid != record.pid && pidNumbersOf(pid).in_namespaces.size() >= depth &&
                    std::find(out.begin(), out.end(), pid) == out.end())
                    out.push_back(pid);
        return out;
    }
    for (pid_t pid : processesInContainerCgroups(record.cgroups))
        if (pid != record.pid) out.push_back(pid);
    return out;
}

// Every process of the container but its init: init's descendants, by the
// parent pids of /proc/N/stat (world-readable, unlike /proc/N/ns of a
// non-dumpable init seen by its unprivileged owner). Every process of the
// pid namespace is one, since orphans there reparent to its init.
std::vector<pid_t> processesIn(pid_t init) {
    std::map<pid_t, pid_t> parent;
    DIR* proc = opendir("/proc");
    if (!proc) return {};
    while (dirent* e = readdir(proc)) {
        char* end = nullptr;
        long pid = strtol(e->d_name, &end, 10);
        if (!end || *end || pid <= 0) continue;
        if (auto stat = ProcStat::read(static_cast<pid_t>(pid)))
            parent[static_cast<pid_t>(pid)] = stat->parent();
    }
    closedir(proc);
    std::vector<pid_t> out;
    for (const auto& [pid, ppid] : parent) {
        pid_t up = ppid;
        for (int depth = 0; up > 1 && up != init && depth < 4096; ++depth) {
            auto it = parent.find(up);
            up = it == parent.end() ? 0 : it->second;
        }
        if (up == init && pid != init) out.push_back(pid);
    }
    return out;
}

Result<UniqueFd> connectConsoleSocket(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof(addr.sun_path))
        return Error::message("--console-socket: the path is empty or too long");
    memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return Error::fromErrno("--console-socket: socket()");
    if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0)
        return Error::fromErrno("--console-socket: connect(\"" + path + "\")");
    return fd;
}

}  // namespace stockade::oci
