#include "namespaces/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

namespace stockade::ns {

namespace {

std::string hex(uint64_t value) {
    char buf[24];
    std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(value));
    return buf;
}

bool isUnder(const std::string& path, const std::string& dir) {
    if (dir == "/") return !path.empty() && path[0] == '/';
    return path == dir || (path.starts_with(dir) && path[dir.size()] == '/');
}

// landlock_add_rule(2) refuses directory-only rights on a file (EINVAL).
Result<uint64_t> rightsForInode(int fd, uint64_t allowed, const std::string& path) {
    struct stat st;
    if (fstat(fd, &st) < 0) return Error::fromErrno("fstat(\"" + path + "\")");
    return S_ISDIR(st.st_mode) ? allowed : allowed & kLandlockFileAccess;
}

Status addHostPathRule(const LandlockPlan& plan, const LandlockPath& rule) {
    // O_PATH: a rule needs the inode, not the right to read it; following
    // symlinks as the bind mount of the same path does.
    UniqueFd fd(open(rule.path.c_str(), O_PATH | O_CLOEXEC));
    if (!fd) {
        if (rule.optional && errno == ENOENT) return okStatus();
        return Error::fromErrno("open(\"" + rule.path + "\", O_PATH)");
    }
    auto allowed = rightsForInode(fd.get(), landlockAllowedFs(rule.access, plan.abi), rule.path);
    if (!allowed) return allowed.error();
    if (*allowed == 0) return okStatus();  // List on a file: nothing to grant
    LandlockPathBeneathAttr attr{*allowed, fd.get()};
    if (sysLandlockAddRule(plan.ruleset.get(), kLandlockRulePathBeneath, &attr, 0) < 0)
        return Error::fromErrno("landlock_add_rule(PATH_BENEATH, \"" + rule.path + "\", " +
                                hex(*allowed) + ")");
    return okStatus();
}

Status addNetworkRules(const LandlockPlan& plan, const LandlockRequest& request) {
    if (plan.handled_net == 0 || request.network != LandlockNetwork::BindPortOnly)
        return okStatus();
    LandlockNetPortAttr attr{kLandlockNetBindTcp, request.bind_port};
    if (sysLandlockAddRule(plan.ruleset.get(), kLandlockRuleNetPort, &attr, 0) < 0)
        return Error::fromErrno("landlock_add_rule(NET_PORT, bind " +
                                std::to_string(request.bind_port) + ")");
    return okStatus();
}

}  // namespace

LandlockSupport probeLandlock() {
    int abi = sysLandlockCreateRuleset(nullptr, 0, kLandlockCreateRulesetVersion);
    if (abi > 0) return {abi, ""};
    int err = errno;
    if (err == ENOSYS)
        return {0,
                "the kernel was built without Landlock (landlock_create_ruleset: ENOSYS); it "
                "needs Linux 5.13+ with CONFIG_SECURITY_LANDLOCK=y"};
    if (err == EOPNOTSUPP)
        return {0,
                "Landlock is built into the kernel but not enabled (landlock_create_ruleset: "
                "EOPNOTSUPP); add \"landlock\" to the lsm= kernel parameter"};
    return {0, Error::fromErrno("landlock_create_ruleset(NULL, 0, VERSION)", err).describe()};
}

int landlockAbi() {
    return probeLandlock().abi;
}

uint64_t landlockHandledFs(int abi) {
    if (abi < 1) return 0;
    uint64_t fs = (kLandlockFsMakeSym << 1) - 1;  // ABI 1: EXECUTE .. MAKE_SYM
    if (abi >= 2) fs |= kLandlockFsRefer;
    if (abi >= 3) fs |= kLandlockFsTruncate;
    if (abi >= 5) fs |= kLandlockFsIoctlDev;
    return fs;
}

uint64_t landlockHandledNet(int abi) {
    return abi >= 4 ? kLandlockNetBindTcp | kLandlockNetConnectTcp : 0;
}

uint64_t landlockScopes(int abi) {
    return abi >= 6 ? kLandlockScopeAbstractUnixSocket | kLandlockScopeSignal : 0;
}

uint64_t landlockAllowedFs(LandlockAccess access, int abi) {
    constexpr uint64_t read = kLandlockFsExecute | kLandlockFsReadFile | kLandlockFsReadDir;
    uint64_t rights = 0;
    switch (access) {
        case LandlockAccess::List:
            rights = kLandlockFsReadDir;
            break;
        case LandlockAccess::Read:
            rights = read;
            break;
        case LandlockAccess::ReadWrite:
            // Device nodes cannot be made without CAP_MKNOD in the initial
            // namespace anyway, and ioctl on devices belongs to /dev alone.
            rights = ~(kLandlockFsMakeChar | kLandlockFsMakeBlock | kLandlockFsIoctlDev);
            break;
        case LandlockAccess::Devices:
            // O_TRUNC on /dev/null (every shell's `>`) needs TRUNCATE from ABI 3.
            rights = kLandlockFsReadFile | kLandlockFsWriteFile | kLandlockFsTruncate |
                     kLandlockFsIoctlDev | kLandlockFsReadDir;
            break;
    }
    return rights & landlockHandledFs(abi);
}

std::string LandlockPlan::enforcedName() const {
    return active() ? "abi-" + std::to_string(abi) : std::string();
}

Result<LandlockPlan> buildLandlockPlan(const LandlockRequest& request) {
    if (request.network == LandlockNetwork::BindPortOnly && request.bind_port == 0)
        return Error::message("landlock: a dev server's published port must not be 0");
    for (const LandlockPath& p : request.sandbox_paths)
        if (p.path.empty() || p.path[0] != '/')
            return Error::message("landlock: the sandbox path \"" + p.path + "\" is not absolute");

    LandlockPlan plan;
    plan.unexpressed_read_only = request.read_only_within_writable;
    // A read-only path beneath a writable one, in the same list, is the same
    // case as .git: the rule on the ancestor already grants it everything.
    for (const auto* list : {&request.host_paths, &request.sandbox_paths})
        for (const LandlockPath& ro : *list) {
            if (ro.access == LandlockAccess::ReadWrite) continue;
            for (const LandlockPath& rw : *list)
                if (rw.access == LandlockAccess::ReadWrite && ro.path != rw.path &&
                    isUnder(ro.path, rw.path)) {
                    plan.unexpressed_read_only.push_back(ro.path);
                    break;
                }
        }
    LandlockSupport support = probeLandlock();
    if (support.abi == 0) {
        plan.unavailable_reason = support.reason;
        return plan;
    }
    int abi = request.abi_limit > 0 ? std::min(support.abi, request.abi_limit) : support.abi;
    if (abi < 2) {
        // Under ABI 1 a file can never be renamed or linked into another
        // directory (landlock(7), LANDLOCK_ACCESS_FS_REFER): builds and
        // package managers do that constantly, so ABI 1 breaks real programs.
        plan.unavailable_reason =
            "Landlock ABI 1 always denies moving a file between directories (REFER needs ABI "
            "2, Linux 5.19)";
        return plan;
    }

    plan.handled_fs = landlockHandledFs(abi);
    if (request.network != LandlockNetwork::Unrestricted)
        plan.handled_net = landlockHandledNet(abi);
    if (request.scope_ipc) plan.scoped = landlockScopes(abi);
    LandlockRulesetAttr attr{plan.handled_fs, plan.handled_net, plan.scoped};
    plan.ruleset.reset(sysLandlockCreateRuleset(&attr, sizeof(attr), 0));
    if (!plan.ruleset)
        return Error::fromErrno("landlock_create_ruleset(fs=" + hex(plan.handled_fs) + ", net=" +
                                hex(plan.handled_net) + ", scoped=" + hex(plan.scoped) + ")");
    plan.abi = abi;

    for (const LandlockPath& p : request.host_paths)
        if (auto s = addHostPathRule(plan, p); !s)
            return s.error().withContext("landlock rule for " + p.path);
    if (auto s = addNetworkRules(plan, request); !s) return s.error().withContext("landlock");
    for (const LandlockPath& p : request.sandbox_paths)
        plan.sandbox_rules.push_back({p.path, landlockAllowedFs(p.access, abi), p.optional});
    return plan;
}

void mirrorMountPlan(const MountPlan& mounts, LandlockRequest& request) {
    request.sandbox_paths.push_back({"/", LandlockAccess::List, false});
    std::vector<std::string> directories;
    auto inside = [](const std::string& target) { return "/" + target; };
    for (const MountOp& op : mounts.ops) {
        const std::string path = inside(op.target);
        const bool in_dev = isUnder(path, "/dev");
        if (op.kind == MountKind::BindFromHost) {
            LandlockAccess access = in_dev        ? LandlockAccess::Devices
                                    : op.writable ? LandlockAccess::ReadWrite
                                                  : LandlockAccess::Read;
            request.host_paths.push_back({op.source, access, op.optional});
        } else if (op.kind == MountKind::AttachPrepared) {
            request.sandbox_paths.push_back(
                {path, op.writable ? LandlockAccess::ReadWrite : LandlockAccess::Read, false});
        } else if (op.kind == MountKind::Tmpfs) {
            request.sandbox_paths.push_back(
                {path, path == "/dev" ? LandlockAccess::Devices : LandlockAccess::ReadWrite,
                 op.optional});
        } else if (op.kind == MountKind::Proc) {
            // Writable: programs write their own /proc/self files
            // (oom_score_adj, comm); what must stay read-only there (/proc/sys,
            // sysrq-trigger) is held by read-only mounts, which Landlock
            // could not tighten anyway.
            request.sandbox_paths.push_back({path, LandlockAccess::ReadWrite, false});
        } else if (op.kind == MountKind::Directory) {
            request.sandbox_paths.push_back({path, LandlockAccess::Read, op.optional});
            directories.push_back(path);
        } else if (op.kind == MountKind::File || op.kind == MountKind::CopyFromHost) {
            bool covered = std::any_of(directories.begin(), directories.end(),
                                       [&](const std::string& d) { return isUnder(path, d); });
            if (!covered) request.sandbox_paths.push_back({path, LandlockAccess::Read, true});
        } else if (op.kind == MountKind::ReadOnlyBeneath) {
            request.read_only_within_writable.push_back(path);
        }
    }
}

}  // namespace stockade::ns
