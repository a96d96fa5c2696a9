// `stockade check` (SPEC §3, end): which guarantees this host can enforce for
// this user, and for each one it cannot, the cause that was found and the fix.
//
// Everything is found by trying it. probeHost() runs the sandbox's own steps
// in throwaway children: one clone3 with the sandbox's namespace flags that
// walks the child's setup sequence (id maps, cgroup namespace, a fresh root
// with a procfs, hostname, lo, capability drop, no_new_privs) with the same
// *InChild functions the sandbox uses; a seccomp child that installs an
// allow-all filter, a listener and the default program; a Landlock child that
// restricts itself; an rlimit child. Cgroups are probed by opening their
// control files for writing, which asks the kernel the same permission
// question a write would, without changing anything. Nothing is left behind:
// every mount lives in a mount namespace that dies with its child, no cgroup
// directory is created, every child is reaped.
//
// The probes produce HostFacts (what the kernel answered); reportFromFacts()
// is a pure function from facts to verdicts, so the reasons and fixes for
// hosts this machine is not (Debian's userns switch, Ubuntu's AppArmor
// restriction, a container's seccomp filter) are testable as plain data.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "namespaces/landlock.h"
#include "runtime/policy/policy.h"
#include "runtime/policy/profile.h"

namespace stockade {

// What the profile needs. Defaults: the held-test profile's shape.
struct HostCheckRequest {
    bool memory_limit = true;  // the profile sets --memory
    bool pids_limit = true;    // --pids
    bool cpu_time_limit = true;
    bool seccomp = true;  // a filter is installed (profile seccomp != "none")
    LandlockMode landlock = LandlockMode::BestEffort;
    // Names from knownRequirements() that must hold at full strength.
    std::vector<std::string> require;
    // The worktree, when known: idmapped mounts are probed on its filesystem
    // (as root, a root-owned worktree needs one), else on the temp directory.
    std::optional<std::string> worktree;
};

HostCheckRequest hostCheckRequestFor(const Profile& profile);
HostCheckRequest hostCheckRequestFor(const Policy& policy);

// ---------------------------------------------------------------------------
// The verdicts.

enum class CheckState { Ok, Degraded, Unavailable };
const char* checkStateName(CheckState state);  // "ok", "degraded", "unavailable"

enum class CheckKind {
    Guarantee,  // G1..G10 of SPEC §3: a summary of the features that hold it
    Feature,    // one kernel facility; ids match the result's `enforced` keys
    Mechanism,  // a way to hold a limit: cgroup2.memory, cgroup1.pids, rlimit
    Limit,      // memory, pids, cpu_time: the mechanism that would hold it
};
const char* checkKindName(CheckKind kind);

struct CheckEntry {
    std::string id;     // "G1", "user_ns", "cgroup2.memory", "memory"
    std::string title;  // "network", "user namespace"
    CheckKind kind = CheckKind::Feature;
    CheckState state = CheckState::Ok;
    std::string mechanism;  // what holds it: "cgroup1", "rlimit (RLIMIT_DATA)", "abi-7"
    std::string reason;     // the cause found; empty when ok
    std::string fix;        // what to change; empty when ok
    // The profile cannot run unless this entry is ok. Set on features and
    // limits only; a guarantee's flag says whether the profile relies on it.
    bool required = false;
};

// Which sandbox this host gives this user (SPEC §10): "full" (every
// namespace), "landlock" (no user namespace, but the lower tier's pieces:
// Landlock, seccomp, no_new_privs; a run takes it only where the profile or
// --min-tier allows), or "none". `reason` says why; `fixes` names the fix for
// each missing piece.
struct TierVerdict {
    std::string tier = "none";
    std::string reason;
    std::vector<std::string> fixes;
};

struct HostReport {
    uid_t euid = 0;
    TierVerdict tier;
    std::string kernel;  // uname -r
    std::vector<CheckEntry> entries;
    // Every required feature and limit is ok. The guarantees summarize and
    // do not vote.
    bool can_run = false;
    // "user_ns: <reason>", one per failed requirement, leaving out those that
    // were not probed because an earlier one failed (unless nothing else did).
    std::vector<std::string> blockers;
    std::vector<std::pair<std::string, uint64_t>> probe_us;  // what each probe cost
    uint64_t elapsed_us = 0;
    // The sandbox's setup steps the probe ran (HostFacts::setup_steps).
    std::vector<std::pair<std::string, int>> setup_steps;

    const CheckEntry* find(std::string_view id) const;
};

// Probes the host and judges. Never fails: a probe that cannot run is itself
// a finding.
HostReport checkHost(const HostCheckRequest& request);

// Aligned lines for people:
//   G1  network        ok          own network namespace with only lo
//   memory             degraded    rlimit (RLIMIT_DATA): no writable cgroup ...; fix: ...
std::string formatReport(const HostReport& report);
// stockade.check/v1.
std::string reportJson(const HostReport& report);

// ---------------------------------------------------------------------------
// What the kernel answered. Exposed so that reportFromFacts can be tested
// with hosts this machine cannot become.

// What check's verdicts are made of: the sandbox's clone and the steps of
// its setup table (runtime/child/child_setup.h) that a verdict names, in order.
// Parent-side steps are marked; the mount kinds are the probe's mount ops.
enum class SandboxStep {
    Clone3,       // parent: clone3(CLONE_NEWUSER|NEWNS|NEWPID|NEWNET|NEWIPC|NEWUTS|PIDFD)
    PidfdSignal,  // parent: pidfd_send_signal(pidfd, 0)
    IdMaps,       // parent: setgroups deny, uid_map, gid_map
    SetIds,       // setresgid/setresuid to the sandbox's ids, keeping capabilities
    CgroupNs,     // unshare(CLONE_NEWCGROUP)
    PrivateMounts,
    RootTmpfs,     // the new root's tmpfs on the staging directory
    BindReadOnly,  // /usr bound read-only (open_tree, mount_setattr, move_mount)
    TmpTmpfs,      // a size-limited tmpfs at /tmp
    Proc,          // a fresh procfs in the new PID namespace
    SealRoot,      // the root remounted read-only
    PivotRoot,
    Hostname,
    Loopback,
    Dumpable,          // PR_SET_DUMPABLE 0
    DropCapabilities,  // securebits, bounding set, capset
    NoNewPrivs,
    PidfdWait,  // parent: waitid(P_PIDFD)
};
const char* sandboxStepName(SandboxStep step);

enum class SeccompStep { NoNewPrivs, AllowAll, Listener, DefaultFilter };

struct Cgroup2Facts {
    std::string mount;  // "" when no cgroup2 is mounted
    // Where stockade makes its subtree: the hierarchy's root as root, its
    // own cgroup otherwise (runtime/cgroups/cgroup_limits.h); "" when unknown.
    std::string path;
    std::string root_controllers;   // <mount>/cgroup.controllers
    std::string controllers;        // <path>/cgroup.controllers
    int dir_errno = 0;              // faccessat(path, W_OK|X_OK, AT_EACCESS): mkdir of a leaf
    int subtree_control_errno = 0;  // open(cgroup.subtree_control, O_WRONLY)
    int procs_errno = 0;            // open(cgroup.procs, O_WRONLY)
    std::string subtree_control;    // <path>/cgroup.subtree_control
    // Processes other than this one in <path>/cgroup.procs when stockade
    // would have to leave <path> to enable controllers below it (rootless):
    // cgroup v2 enables none below a cgroup that holds processes.
    int other_processes = 0;
};

struct Cgroup1Facts {
    bool bound = false;    // /proc/self/cgroup names the controller on a v1 hierarchy
    bool mounted = false;  // /sys/fs/cgroup/<controller>/cgroup.procs exists
    std::string path;      // our cgroup in it
    int dir_errno = 0;
    int procs_errno = 0;
};

struct HostFacts {
    uid_t euid = 0;
    std::string kernel;
    // Switches, as read; "" when the file does not exist.
    std::string unprivileged_userns_clone;  // Debian: /proc/sys/kernel/unprivileged_userns_clone
    std::string apparmor_restrict_userns;   // Ubuntu: ...apparmor_restrict_unprivileged_userns
    std::string apparmor_enabled;           // /sys/module/apparmor/parameters/enabled: "Y", "N"
    // This process's AppArmor label (/proc/self/attr/apparmor/current, else
    // /proc/self/attr/current while AppArmor is enabled): "unconfined",
    // "stockade (unconfined)"; "" unreadable.
    std::string apparmor_label;
    // The binary path the installed profile (/etc/apparmor.d/stockade)
    // attaches to; "" when there is no such file or it names none.
    std::string apparmor_installed_attachment;
    // The binary path the profile shipped with this binary
    // (appArmorShippedProfile(exe)) attaches to; "" when there is none.
    std::string apparmor_shipped_attachment;
    std::map<std::string, std::string> max_namespaces;  // "user" -> /proc/sys/user/max_user_...
    int seccomp_mode = 0;  // /proc/self/status Seccomp: 2 when a filter confines us
    int seccomp_filters = 0;
    bool chrooted = false;
    std::vector<std::string> proc_overmounts;  // mount points under /proc/
    std::string lsm;                           // /sys/kernel/security/lsm, when readable
    std::string exe;                           // /proc/self/exe
    bool dumpable = true;  // PR_GET_DUMPABLE: else /proc/PID of our children is root's
    // systemd is the init (/run/systemd/system is a directory, sd_booted(3)'s
    // test): its `systemd-run --user` can delegate a cgroup; without it root must.
    bool systemd = false;

    // The sandbox sequence: errno per step reached (0: it worked). A step
    // absent was not reached.
    std::map<SandboxStep, int> sandbox;
    // Every step of the setup table the probe reached, in the order it ran,
    // with its errno (describeStage's words; runtime/child/child_setup.h).
    std::vector<std::pair<std::string, int>> setup_steps;
    // The ids the probe mapped, as the sandbox maps them by default.
    uid_t sandbox_uid = 0;
    uid_t sandbox_host_uid = 0;
    gid_t sandbox_gid = 0;
    gid_t sandbox_host_gid = 0;
    std::string id_maps_error;  // the Error text when IdMaps failed
    std::string sandbox_death;  // how the probe child ended, when not by _exit(0)
    // Only when clone3 failed: each namespace unshared on its own in a forked
    // child ("user" first, then the others inside it), to name the one at fault.
    std::map<std::string, int> unshare;
    // Only when clone3 failed: clone3 with CLONE_PIDFD alone.
    std::optional<int> plain_clone3;

    std::map<SeccompStep, int> seccomp;
    size_t default_filter_instructions = 0;

    ns::LandlockSupport landlock;
    std::optional<int> landlock_restrict;  // errno of restricting a child; unset: not tried
    std::string landlock_error;            // building the ruleset failed

    bool idmap_probed = false;
    std::string idmap_path;
    std::string idmap_fs;
    std::string idmap_error;  // empty: the idmapped mount was made
    bool worktree_root_owned = false;

    Cgroup2Facts cgroup2;
    std::map<std::string, Cgroup1Facts> cgroup1;  // "memory", "pids"
    std::map<std::string, int> rlimits;           // "RLIMIT_DATA" -> setrlimit errno
    std::optional<int> close_range;               // close_range(2) in a plain child

    // serve --net-backend veth (root only): the nft binary found, and the
    // error of making a veth pair and the sandbox's nftables table in a
    // throwaway network namespace ("" when both worked). Probed as root only.
    bool veth_probed = false;
    std::string nft;
    std::string veth_error;

    // serve --net-backend direct: why this user cannot hand a confined host
    // socket to a server (directIngressProblem: the socket filter, then the
    // listener cgroup and its programs, made and removed), "" when it can.
    bool direct_probed = false;
    std::string direct_error;

    std::vector<std::pair<std::string, uint64_t>> probe_us;
};

// An AppArmor label as the kernel writes it: "unconfined", or "NAME (MODE)".
struct AppArmorLabel {
    std::string profile;  // "unconfined", "stockade"; "" when unknown
    std::string mode;     // "enforce", "complain", "unconfined"; "" for the unconfined label
};
AppArmorLabel parseAppArmorLabel(std::string_view label);
// The path `profile stockade PATH ...` attaches to in a profile's text ("" if none).
std::string appArmorAttachment(std::string_view profile_text);
// Where an install puts the profile for the binary at `exe`, beside its
// prefix (…/bin/stockade -> …/share/stockade/apparmor/stockade), and the
// helper that copies it into /etc/apparmor.d where the parser accepts it;
// "" when `exe` has no such prefix.
std::string appArmorShippedProfile(std::string_view exe);
std::string appArmorShippedHelper(std::string_view exe);

HostFacts probeHost(const HostCheckRequest& request);
HostReport reportFromFacts(const HostFacts& facts, const HostCheckRequest& request);
// The tier line, from the report's feature entries (reportFromFacts sets it).
TierVerdict judgeTier(const HostReport& report);

}  // namespace stockade
