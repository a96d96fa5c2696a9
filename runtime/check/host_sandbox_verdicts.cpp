// Verdicts on the sandbox's own clone and child sequence (host_verdicts.h):
// the user namespace and the others, clone3 and pidfds, and the step that
// stopped it, with the switch or restriction that caused it.
#include <errno.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "base/error.h"
#include "runtime/check/host_check.h"
#include "runtime/check/host_verdicts.h"

namespace stockade::host_check_detail {

namespace {

bool cloneWorked(const HostFacts& f) {
    return stepErr(f, SandboxStep::Clone3) == 0;
}

bool isPermission(int err) {
    return err == EPERM || err == EACCES;
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
    // A step of the table that no verdict maps: named as the table names it.
    for (const auto& [step, err] : f.setup_steps)
        if (err != 0)
            return unavailable(
                prefix + "setup step \"" + step + "\" failed (" + errnoName(err) + ")",
                "see the check's setup_steps");
    return unavailable(
        prefix + "the probe child " + (f.sandbox_death.empty() ? "stopped" : f.sandbox_death),
        "run `stockade check` again; report it if it persists");
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

}  // namespace

std::optional<StepFailure> firstFailure(const HostFacts& f,
                                        std::initializer_list<SandboxStep> steps) {
    for (SandboxStep step : steps) {
        auto err = stepErr(f, step);
        if (!err || *err != 0) return StepFailure{step, err};
    }
    return std::nullopt;
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

}  // namespace stockade::host_check_detail
