#include "runtime/plan/lower_tier_plan.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "base/text_safety.h"
#include "namespaces/landlock.h"
#include "runtime/plan/child_plan_builder.h"
#include "runtime/plan/worktree_masks.h"
#include "runtime/policy/sandbox_path.h"

namespace stockade {

namespace {

// The device nodes the full tier's /dev holds (ns::addDefaultDevices), at
// their host paths: readable and writable, nothing created beside them.
constexpr const char* kDevices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                    "/dev/urandom"};

// /repo and /tmp as the profile names them, where the command finds them on
// the host; any other workdir is a host path already.
Result<std::string> hostWorkdir(const Policy& policy, const std::string& tmp) {
    const std::string& w = policy.workdir;
    if (policy.fs.worktree && isUnder(w, "/repo")) return *policy.fs.worktree + w.substr(5);
    if (isUnder(w, "/tmp")) return tmp + w.substr(4);
    return w;
}

// Removes what is beneath `top` (held open), by fd: each entry is found
// relative to its parent's fd and never followed as a link, so that a
// process of the sandbox's uid outside it cannot swap a directory for a link
// mid-walk and turn a root-run removal onto another tree. Iterative, with no
// depth cap (a red team left a tree 300 levels deep behind a recursion that
// stopped at 256), and each directory of this uid's own made 0700 before it
// is listed (one the sandbox closed with chmod 500 kept its files). One fd
// per level is open at a time. False when something could not be removed.
bool removeBeneath(int top) {
    struct Level {
        DIR* listing;
        int fd;            // the directory's, for the entries beneath it
        std::string name;  // its name in the level above ("" for the top)
    };
    const uid_t self = geteuid();
    bool whole = true;
    (void)fchmod(top, 0700);
    std::vector<Level> stack;
    auto enter = [&](int fd, std::string name) {
        const int listing_fd = dup(fd);
        DIR* listing = listing_fd < 0 ? nullptr : fdopendir(listing_fd);
        if (!listing) {
            if (listing_fd >= 0) close(listing_fd);
            if (fd != top) close(fd);
            whole = false;
            return false;
        }
        stack.push_back({listing, fd, std::move(name)});
        return true;
    };
    if (!enter(top, "")) return false;
    while (!stack.empty()) {
        Level& level = stack.back();
        errno = 0;
        dirent* entry = readdir(level.listing);
        if (!entry) {
            if (errno) whole = false;
            Level done = std::move(stack.back());
            stack.pop_back();
            closedir(done.listing);
            if (done.fd != top) close(done.fd);
            if (!stack.empty() && unlinkat(stack.back().fd, done.name.c_str(), AT_REMOVEDIR) < 0)
                whole = false;
            continue;
        }
        const char* name = entry->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
        struct stat st;
        if (fstatat(level.fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            whole = false;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (unlinkat(level.fd, name, 0) < 0) whole = false;
            continue;
        }
        // A link swapped in since the fstatat cannot be changed
        // (AT_SYMLINK_NOFOLLOW) nor opened (O_NOFOLLOW).
        if (st.st_uid == self && self != 0)
            (void)fchmodat(level.fd, name, 0700, AT_SYMLINK_NOFOLLOW);
        const int sub = openat(level.fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) {
            whole = false;
            continue;
        }
        enter(sub, name);
    }
    return whole;
}

}  // namespace

LowerTierTmp::~LowerTierTmp() {
    if (path_.empty()) return;
    int dir = open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    bool whole = dir >= 0;
    if (dir >= 0) {
        whole = removeBeneath(dir);
        close(dir);
    }
    if (rmdir(path_.c_str()) < 0 || !whole)
        std::fprintf(stderr, "stockade: the run's private TMPDIR %s could not be removed whole\n",
                     escapeForTerminal(path_).c_str());
}

Result<LowerTierTmp> LowerTierTmp::create(uid_t uid, gid_t gid) {
    std::string templ = "/tmp/stockade-run-XXXXXX";
    if (!mkdtemp(templ.data())) return Error::fromErrno("mkdtemp(\"/tmp/stockade-run-XXXXXX\")");
    LowerTierTmp out;
    out.path_ = templ;
    if (geteuid() == 0 && chown(templ.c_str(), uid, gid) < 0)
        return Error::fromErrno("chown(\"" + templ + "\")");
    return out;
}

Result<ns::IdMapping> lowerTierIds(const Policy& policy, const Identity& identity) {
    ns::IdMapping ids{};
    ids.count = 1;
    if (geteuid() != 0) {
        ids.inside_uid = ids.host_uid = getuid();
        ids.inside_gid = ids.host_gid = getgid();
        return ids;
    }
    if (policy.fs.worktree) {
        const struct stat& st = policy.fs.worktree_held.st;
        if (st.st_uid == 0)
            return Error::message(
                "--worktree " + *policy.fs.worktree +
                ": owned by root; the lower tier runs the command as the worktree's owner, and "
                "only a mount namespace (the full tier's idmapped mount) could make a root-owned "
                "worktree writable to anyone else");
        ids.inside_uid = ids.host_uid = st.st_uid;
        ids.inside_gid = ids.host_gid = st.st_gid != 0 ? st.st_gid : st.st_uid;
        return ids;
    }
    // No worktree: the leased id, as the full tier's host id.
    ids.inside_uid = ids.host_uid = identity.ids.host_uid;
    ids.inside_gid = ids.host_gid = identity.ids.host_gid;
    return ids;
}

Result<ChildPlan> buildLowerTierPlan(const Policy& policy, const ns::IdMapping& ids,
                                     const std::string& tmp, size_t* read_only_names) {
    *read_only_names = 0;
    if (policy.fs.rootfs != "/")
        return Error::message("--rootfs needs a mount namespace, which the lower tier lacks");
    if (policy.network != NetworkMode::None)
        return Error::message(
            "a profile with network (serve) needs a network namespace; the lower tier runs "
            "only profiles without network");
    if (policy.seccomp != "default")
        return Error::message(
            "the lower tier needs the default seccomp filter, which refuses "
            "every socket family but AF_UNIX; this profile has \"seccomp\": \"" +
            policy.seccomp + "\"");
    ChildPlan plan;
    plan.lower_tier = true;
    plan.lower_tier_privileged = geteuid() == 0;
    plan.supervisor_pid = getpid();
    plan.ids = ids;

    ns::LandlockRequest request;
    for (const std::string& dir : policy.fs.system_dirs)
        request.host_paths.push_back({dir, ns::LandlockAccess::Read, true});
    for (const std::string& name : policy.fs.etc_entries)
        request.host_paths.push_back({"/etc/" + name, ns::LandlockAccess::Read, true});
    for (const char* device : kDevices)
        request.host_paths.push_back({device, ns::LandlockAccess::Devices, true});
    // /proc for /proc/self: the command's own. Other processes' entries are
    // listed too (no PID namespace), but Landlock refuses ptrace-mode access
    // to any process outside the domain, so their environ, mem, fds and maps
    // stay out of reach (docs/threat-model.md, "The lower tier").
    request.host_paths.push_back({"/proc", ns::LandlockAccess::Read, false});
    if (policy.fs.mount_sys)
        request.host_paths.push_back({"/sys", ns::LandlockAccess::Read, false});
    request.host_paths.push_back({tmp, ns::LandlockAccess::ReadWrite, false});
    if (policy.fs.worktree) {
        // Landlock rules only grant: beneath the writable worktree nothing
        // can be made unreadable or read-only. Hidden names (credentials)
        // present now refuse the run; read-only ones are recorded.
        const WorktreeMaskRules& rules = policy.fs.worktree_masks;
        if (!rules.hide.empty() || !rules.read_only.empty()) {
            WalkedDirs walked;
            auto scan =
                scanWorktreeHeldStill(policy.fs.worktree_held.get(), rules, nullptr, &walked);
            if (!scan) return scan.error().withContext("walk the worktree for hidden names");
            if (!scan->truncated_by.empty())
                return Error::message(
                    "the worktree could not be walked whole for the names to "
                    "hide (" +
                    scan->truncated_by + ")");
            if (!scan->hidden.empty()) {
                std::string names;
                for (size_t i = 0; i < scan->hidden.size() && i < 5; ++i)
                    names += (i ? ", " : "") + scan->hidden[i].relative;
                return Error::message(
                    "the worktree holds names the profile hides (" + names +
                    "), and the lower tier cannot hide them: Landlock grants the worktree as a "
                    "whole. Remove them, exempt them with --show, or run where the full tier "
                    "can be had");
            }
            *read_only_names = scan->read_only.size();
        }
        request.host_paths.push_back({*policy.fs.worktree, ns::LandlockAccess::ReadWrite, false});
    }
    for (const ExtraMount& m : policy.fs.mounts) {
        if (m.target != m.source)
            return Error::message("--mount " + m.source + ":" + m.target +
                                  ": the lower tier has no mount namespace, so a mount stays at "
                                  "its host path; give it as " +
                                  m.source + ":" + m.source);
        request.host_paths.push_back(
            {m.source, m.writable ? ns::LandlockAccess::ReadWrite : ns::LandlockAccess::Read,
             false});
    }
    // No network namespace: TCP bind and connect denied by Landlock (ABI 4),
    // every family but AF_UNIX by the filter (runtime/plan/sandbox_seccomp.h).
    request.network = ns::LandlockNetwork::DenyTcp;
    request.scope_ipc = true;
    auto landlock = ns::buildLandlockPlan(request);
    if (!landlock) return landlock.error().withContext("plan the Landlock ruleset");
    if (!landlock->active())
        return Error::message("the lower tier needs Landlock, and this kernel gives none: " +
                              landlock->unavailable_reason);
    plan.landlock = std::move(*landlock);

    std::vector<std::string> env;
    for (const std::string& e : policy.environment)
        if (!e.starts_with("TMPDIR=") && !e.starts_with("HOME=")) env.push_back(e);
    env.push_back("HOME=" + tmp);
    env.push_back("TMPDIR=" + tmp);
    plan.env_storage = env;
    for (std::string& s : plan.env_storage) plan.envp.push_back(s.data());
    plan.envp.push_back(nullptr);
    plan.argv_storage = policy.command;
    for (std::string& s : plan.argv_storage) plan.argv.push_back(s.data());
    plan.argv.push_back(nullptr);
    plan.search_path = "/usr/local/bin:/usr/bin:/bin";
    for (const std::string& e : policy.environment)
        if (e.starts_with("PATH=")) plan.search_path = e.substr(5);
    auto workdir = hostWorkdir(policy, tmp);
    if (!workdir) return workdir.error();
    plan.workdir = *workdir;
    plan.stdin_null = policy.stdin_mode == StdinMode::Null;
    std::ifstream cap("/proc/sys/kernel/cap_last_cap");
    if (!(cap >> plan.last_cap)) plan.last_cap = 63;
    addCommandRlimits(policy, plan);
    return plan;
}

std::vector<std::string> lowerTierDegraded(const Policy& policy, const ChildPlan& plan,
                                           size_t read_only_names) {
    std::vector<std::string> out;
    out.push_back("user_ns: no user namespace; the command runs as host uid " +
                  std::to_string(plan.ids.host_uid) +
                  (geteuid() == 0
                       ? " (the worktree's owner, shared with that user's other processes)"
                       : " (the caller's own)"));
    out.push_back(
        "mount_ns: no mount namespace; paths outside the view are hidden by Landlock (EACCES), "
        "not absent; the worktree is at its host path " +
        (policy.fs.worktree ? *policy.fs.worktree : std::string("(none)")) +
        " (the command's cwd for /repo), /tmp is a private directory given as TMPDIR, and /etc "
        "is the host's own entries, not a synthesized passwd and group");
    out.push_back(
        "pid_ns: no PID namespace; host processes are visible in /proc (their environ and "
        "memory are out of reach: Landlock refuses ptrace access outside its domain); every "
        "descendant is killed at the end through init's children (a child subreaper)");
    std::string net = "net_ns: no network namespace; ";
    net += plan.landlock.scoped ? "abstract unix sockets scoped by Landlock, "
                                : "abstract unix sockets NOT scoped (Landlock below ABI 6), ";
    net += plan.landlock.handled_net ? "TCP bind and connect denied by Landlock, "
                                     : "TCP left to seccomp alone (Landlock below ABI 4), ";
    net +=
        "every other socket family but AF_UNIX streams and seqpackets refused by seccomp "
        "(UDP and unix datagrams included), and connect(2) refused (a unix socket's path "
        "lookup is not Landlock's: the host's named sockets stay out of reach, and so does a "
        "unix server of the sandbox's own)";
    out.push_back(net);
    out.push_back(
        "metadata: changing a file's mode, owner, times or extended attributes by path is "
        "refused (EPERM; Landlock does not govern it, so a path outside the view would be "
        "changed), fchmod, fchown, futimens and fsetxattr on an open file work; inotify and "
        "fanotify answer ENOSYS (a watch outside the view would tell its names)");
    out.push_back(
        "per-user counts: RLIMIT_NPROC, inotify instances, POSIX message queue bytes and "
        "pending signals are counted for host uid " +
        std::to_string(plan.ids.host_uid) + ", with that user's other processes");
    out.push_back(std::string("signals: ") +
                  (plan.landlock.scoped
                       ? "scoped by Landlock: no process outside the sandbox can be signalled"
                       : "NOT scoped (Landlock below ABI 6): processes of the same uid can be "
                         "signalled"));
    out.push_back(
        "ipc_ns, uts_ns, cgroup_ns: none; System V IPC and POSIX message queues are the host's, "
        "the hostname is the host's");
    if (!plan.lower_tier_privileged)
        out.push_back(
            "capabilities: the bounding set is not cleared (that needs CAP_SETPCAP); every other "
            "set is empty and no_new_privs keeps any execve from gaining");
    out.push_back(
        "lifetime: if stockade itself is SIGKILLed, init dies with it (PR_SET_PDEATHSIG) but "
        "what the command double-forked is not killed unless a cgroup holds it");
    if (policy.fs.worktree)
        out.push_back(
            "read_only_names: .git and the profile's read-only names are writable (Landlock "
            "cannot narrow beneath the writable worktree)" +
            (read_only_names ? ": " + std::to_string(read_only_names) + " such names found"
                             : std::string()));
    return out;
}

}  // namespace stockade
