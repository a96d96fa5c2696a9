// Verdicts on the kernel features outside the sandbox's clone sequence
// (host_verdicts.h): no_new_privs, seccomp, Landlock, the veth backend,
// idmapped mounts, close_range.
#include <errno.h>

#include <optional>
#include <string>

#include "runtime/check/host_check.h"
#include "runtime/check/host_verdicts.h"

namespace stockade::host_check_detail {

namespace {

std::optional<int> seccompErr(const HostFacts& f, SeccompStep step) {
    auto it = f.seccomp.find(step);
    if (it == f.seccomp.end()) return std::nullopt;
    return it->second;
}

}  // namespace

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
        "; or use the default, or --net-backend userspace, which work in "
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

Verdict judgeDirect(const HostFacts& f) {
    const std::string keep =
        "; otherwise serve, by default or with --net-backend direct, goes through the "
        "userspace forwarder by itself, and says so";
    if (!f.direct_probed)
        return unavailable(std::string(kNotProbed) + "the probe did not run",
                           "run `stockade check` again");
    if (f.direct_error.empty())
        return ok(
            "host listeners confined by SO_BINDTODEVICE, a locked socket filter and a "
            "cgroup's BPF programs refusing their bind and connect");
    const std::string& why = f.direct_error;
    if (f.euid != 0)
        return unavailable(why + (why.find("needs root") == std::string::npos
                                      ? "; and the cgroup programs that refuse the host "
                                        "sockets' bind and connect need root"
                                      : ""),
                           "run stockade serve as root" + keep);
    if (why.find("cgroup2") != std::string::npos)
        return unavailable(why,
                           "mount cgroup v2 (mount -t cgroup2 none /sys/fs/cgroup/unified on a "
                           "hybrid host), or boot with systemd.unified_cgroup_hierarchy=1" +
                               keep);
    if (why.find("bpf(") != std::string::npos)
        return unavailable(why,
                           "a kernel with CONFIG_BPF_SYSCALL and CONFIG_CGROUP_BPF, where no "
                           "security module refuses bpf(2) to root" +
                               keep);
    return unavailable(why, "report this to the stockade maintainers" + keep);
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

}  // namespace stockade::host_check_detail
