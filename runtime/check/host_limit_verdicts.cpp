// Verdicts on the mechanisms that can hold a limit (cgroup v2, cgroup v1,
// rlimits) and on each limit: the strongest that holds it (host_verdicts.h).
#include <string>

#include "base/error.h"
#include "runtime/cgroups/cgroup_fs.h"
#include "runtime/check/host_check.h"
#include "runtime/check/host_verdicts.h"

namespace stockade::host_check_detail {

namespace {

// How an unprivileged user gets a cgroup v2 subtree of their own: systemd
// delegates one on asking; without systemd as init (a container, a CI
// runner's VM, this test host) only root can, by hand.
std::string delegateFix(const HostFacts& f) {
    if (f.systemd) return "`systemd-run --user --scope -p Delegate=yes stockade …`";
    const std::string mount = f.cgroup2.mount.empty() ? "/sys/fs/cgroup" : f.cgroup2.mount;
    const std::string dir = mount + "/stockade-" + std::to_string(f.euid);
    return "one that root makes and hands over (`systemd-run --user` needs systemd as init, "
           "which this host does not run): as root `mkdir " +
           dir + " && chown -R " + std::to_string(f.euid) + " " + dir +
           "`, with memory and pids enabled in " + mount +
           "/cgroup.subtree_control; then start stockade from a shell moved into it (`echo $$ > " +
           dir + "/cgroup.procs`)";
}

std::string cgroupParent(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(0, slash);
}

}  // namespace

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
    std::string fix = f.euid == 0 ? "mount the cgroup filesystem read-write (a container needs a "
                                    "writable /sys/fs/cgroup)"
                                  : "run stockade in a delegated cgroup: " + delegateFix(f) +
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
                           unified + (f.euid == 0 ? "" : "; then " + delegateFix(f)));
    }
    Verdict base = judgeCgroup2Base(f);
    if (base.state != CheckState::Ok) return base;
    if (!hasWord(v2.controllers, controller)) {
        std::string parent = cgroupParent(v2.path);
        return unavailable("controller not delegated to " + v2.path + " (" + parent +
                               "/cgroup.subtree_control does not enable " + controller + ")",
                           f.euid == 0
                               ? "echo +" + controller + " > " + parent + "/cgroup.subtree_control"
                               : "run stockade in a delegated cgroup: " + delegateFix(f));
    }
    if (v2.other_processes > 0 && !hasWord(v2.subtree_control, controller))
        return unavailable(
            v2.path + " holds " + std::to_string(v2.other_processes) +
                " other process(es) besides stockade, and cgroup v2 enables no controller "
                "below a cgroup that holds processes (stockade moves itself out, not others)",
            "run stockade alone in a delegated cgroup: " + delegateFix(f));
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
                                        delegateFix(f);
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
                             ? "RLIMIT_DATA bounds each process's private writable memory, not "
                               "the sandbox's total nor shared memory"
                             : "RLIMIT_NPROC counts every process of the sandbox's host uid, not "
                               "only the sandbox's";
    // The way to a real bound from where this host stands.
    bool in_unified = !f.cgroup2.mount.empty() && hasWord(f.cgroup2.root_controllers, limit);
    bool on_v1 = f.cgroup1.count(limit) && f.cgroup1.at(limit).bound;
    std::string fix;
    if (f.euid != 0) {
        fix = "run stockade in a delegated cgroup v2 subtree: " + delegateFix(f);
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

}  // namespace stockade::host_check_detail
