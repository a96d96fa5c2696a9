// ChildPlan: everything the child side needs, allocated by the parent before
// the clone. The child reads it and makes system calls; it never allocates,
// so every string, array and scratch slot it touches lives here.
#pragma once

#include <linux/filter.h>
#include <sys/resource.h>
#include <time.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/fault_injection.h"
#include "namespaces/landlock.h"
#include "namespaces/mount_plan.h"
#include "namespaces/user.h"
#include "runtime/child/child_setup.h"
#include "runtime/child/privileges_in_child.h"
#include "runtime/child/userns_limits_in_child.h"

namespace stockade {

struct RlimitSetting {
    int resource;
    rlimit value;
};

// An OCI hook the child side runs itself (runtime/child/hooks_in_child.h):
// createContainer, by init before pivot_root; startContainer, by the
// command after `start` released it, right before its execve. The pointer
// arrays are sized here and filled by the child from the storage, so that
// nothing the parent moves after building them can leave one dangling.
struct ChildHook {
    std::string path;
    std::vector<std::string> argv_storage;  // argv[0] first; never empty
    std::vector<char*> argv;                // argv_storage.size() + 1 slots
    std::vector<std::string> env_storage;
    std::vector<char*> envp;  // env_storage.size() + 1 slots
    int timeout_s = 0;        // 0: no bound (the config gave none)
    // createContainer: the executable, opened on the host by create before
    // the clone (O_PATH), so that a path the sandbox's staging mount covers
    // cannot name the image's file instead. -1: resolved by path, in the
    // process's own root (startContainer: the container's).
    int exec_fd = -1;
};

struct ChildHookList {
    const char* name = "";  // "createContainer", as messages name it
    std::vector<ChildHook> hooks;
    // The state JSON on each hook's stdin, with kHookPidSlot spaces at
    // pid_offset where the child writes the container's init's pid as its
    // own pid namespace numbers it (runc gives its init's getpid()).
    std::string state;
    size_t pid_offset = 0;
    // createContainer: each hook is PID 1 of a pid namespace of its own
    // (inside the container's), so that nothing it starts outlives it with
    // the host's root as its own.
    bool own_pid_namespace = false;
    // createContainer: the image root's host path (root.path). init opens
    // it as the caller before the staging mount exists (root_fd), and
    // attaches a clone of the built root there for the hooks, so that
    // root.path shows them the container's root as runc's hooks see it.
    // Each hook then runs in a copy of init's mount namespace with the
    // staging mount (over `uncover`, /tmp) taken off, so that no host path
    // of theirs names the image. Empty: none of this.
    std::string root_path;
    std::string uncover;
    int root_fd = -1;
    // What `uncover` is on the host, taken by init before the staging
    // mount exists: each hook takes mounts off it until this is what it
    // finds there (a bundle mount whose target resolves to the image's
    // root stacks on the staging mount), or is not run.
    dev_t uncover_dev = 0;
    ino_t uncover_ino = 0;
};
inline constexpr size_t kHookPidSlot = 10;

struct ChildPlan {
    ns::MountPlan mounts;
    ns::IdMapping ids{};
    std::string hostname;
    // The NIS domain name set with it: a sandbox's is empty (the host's
    // never shown); an OCI container's is the spec's `domainname`, or, with
    // none, its UTS namespace's as it came, as runc leaves it.
    std::string domainname;
    bool set_domainname = true;

    std::vector<std::string> argv_storage;
    std::vector<char*> argv;  // null-terminated, points into argv_storage
    std::vector<std::string> env_storage;
    std::vector<char*> envp;  // null-terminated, points into env_storage
    std::string search_path;  // PATH used to find argv[0]
    std::string workdir;
    bool stdin_null = true;
    // An OCI container whose /dev stockade made: 0-2 that are the null
    // device are reopened from the container's /dev/null, read and write,
    // as runc reopens them (setupStdioInChild).
    bool reopen_null_stdio = false;
    // The host's /dev/null, opened by the child before pivot_root for an
    // OCI terminal init's 0-2: the container's own /dev/null is whatever its
    // image or mounts put there (none, or a FIFO an open would block on).
    // -1 until then, and without a terminal.
    int null_fd = -1;
    // A detached clone of the host's /dev/null mount (open_tree), made by
    // init right before pivot_root for the masks of a command's own /proc
    // (command_pid_ns); -1 until then, and without one.
    int null_tree_fd = -1;
    int stdout_fd = -1;  // write ends of the capture pipes, dup'ed to 1 and 2
    int stderr_fd = -1;
    int sync_fd = -1;  // the child's end of the sync socket
    // The supervisor's end, which the clone inherits: closed by the child
    // first thing, so that the supervisor's death is a hang-up the child
    // sees while it builds (an OCI createContainer hook is ended by it).
    int supervisor_sync_fd = -1;

    int last_cap = 40;
    std::vector<RlimitSetting> rlimits;
    std::vector<sock_filter> seccomp_program;  // empty: no filter
    // The same filter with refusals sent to a listener the command hands to
    // the supervisor over `listener_socket_fd`; empty when denials are not
    // reported (then seccomp_program is installed).
    std::vector<sock_filter> seccomp_notified_program;
    int listener_socket_fd = -1;
    // A dev server's: init's end of the socket factory (service_hooks.h).
    int socket_factory_fd = -1;
    // >= 0: clone3 made no network namespace; a helper makes it beside the
    // root's set-up and leaves an fd for it at this number (held open by a
    // placeholder until then). -1: the clone made it.
    int netns_fd_slot = -1;
    ns::LandlockPlan landlock;  // inactive: no Landlock

    // Detached clones of held host paths (base/host_path.h), made by the
    // parent and attached by the child (MountKind::AttachPrepared); the
    // parent closes its copies once the child is cloned.
    std::vector<UniqueFd> prepared;

    // The supervisor's own argv and environment strings, which the clone
    // inherits in its copy of the stack: wiped so /proc/1/cmdline and
    // /proc/1/environ in the sandbox show nothing of the caller.
    struct MemoryRange {
        uintptr_t start;
        uintptr_t end;
    };
    std::vector<MemoryRange> wipe_ranges;

    // --log-level debug: a page shared with the supervisor, where the child
    // side notes when each stage ended (CLOCK_MONOTONIC, ns), indexed by
    // ChildStage; null otherwise.
    static constexpr int kStageSlots = 64;
    static constexpr int kCommandEndedSlot = kStageSlots - 2;  // init saw it end
    static constexpr int kInitDoneSlot = kStageSlots - 1;      // stragglers killed
    uint64_t* stage_times = nullptr;
    // STOCKADE_TEST_FAIL's child-side call, if any (base/fault_injection.h).
    FaultPoint injected_fault = FaultPoint::None;
    // The sandbox's user namespace's own maxima (runtime/child/userns_limits_in_child.h).
    UserNamespaceBounds userns_bounds;
    // An OCI container (oci/): the runtime that creates it exits and its
    // caller's subreaper becomes init's parent, so init is not tied to it;
    // the command parks before its execve until `start` writes a byte to
    // the exec FIFO, whose read end and a held write end (so the read
    // blocks rather than sees EOF) it keeps. Both -1 otherwise.
    bool die_with_parent = true;
    // An OCI container in a pid namespace joined by path (a pod's): init is
    // not its PID 1, so, as in the lower tier, it is a child subreaper that
    // kills its children at the end rather than kill(-1), which would reach
    // the other containers' processes of this uid.
    bool pid_ns_joined = false;
    // An OCI container: init takes every signal it may block
    // (containerInitSignals) and passes each on to the command, as PID 1
    // only those the command would take as PID 1 (caught, blocked, waited
    // for), since runc's command is PID 1
    // (runtime/child/command_signals_in_child.h); SIGRTMIN is one of them,
    // not the supervisor's "end it now" (no supervisor outlives `create`).
    bool container_signals = false;
    // Whether init stands in for a PID 1 command: an OCI container's, in
    // a pid namespace of its own (runc's command would be its PID 1).
    bool initStandsForPid1() const {
        return container_signals && !pid_ns_joined && !lower_tier && !command_pid_ns;
    }
    // An OCI container's command is PID 1 of a pid namespace of its own,
    // beneath init's, as runc's command is its container's PID 1: init
    // unshares one before it forks the command (so what init forks after
    // lands there too, and /proc/<init>/ns/pid_for_children names it for
    // `exec`), and the command mounts each proc of the root again for it
    // (ns::remountProcsInChild), with the host's null device held in
    // null_tree_fd for the masks. The kernel then takes signals as it takes
    // them for runc's PID 1, so init passes every one on. Set only where
    // the root's procs can be made again (ns::procRemountable).
    bool command_pid_ns = false;
    int start_fifo_read_fd = -1;
    int start_fifo_write_fd = -1;
    // The command's executable is found before the command parks (so that
    // `create` fails when it is missing), into exec_path, and exec'ed from
    // there. Empty exec_path_storage: searched at execve, as `run` does.
    std::vector<char> exec_path_storage;
    // Whether the clone's own network namespace needs lo brought up: not
    // when it joined one by path (OCI linux.namespaces[].path).
    bool bring_up_loopback = true;
    // Whether every port may be bound in the sandbox's own network namespace
    // (ns::allowEveryPortInChild, SPEC §7). Not for an OCI container: its
    // spec asks for no sysctl, and runc leaves the kernel's 1024, so a
    // container without CAP_NET_BIND_SERVICE cannot bind port 80.
    bool every_port = true;
    // An OCI container's process.capabilities, kept instead of none (G4's
    // drop for every other sandbox); init keeps none but in its own pid
    // namespace, where it keeps no more than the command may hold
    // (container_signals).
    bool keep_capabilities = false;
    // An OCI container with process.terminal: a socket connected to the
    // caller's --console-socket. The command opens a pty of the container's
    // own devpts, makes it its controlling terminal and stdio, and sends
    // the master over this socket (one message, one fd). -1: none.
    int console_socket_fd = -1;
    unsigned short console_rows = 0;  // process.consoleSize; 0: the kernel's
    unsigned short console_cols = 0;
    CapabilitySets capabilities;
    // An OCI container's createContainer and startContainer hooks; empty
    // lists for everything else.
    ChildHookList create_container_hooks;
    ChildHookList start_container_hooks;
    // An OCI container's linux.personality (PER_LINUX or PER_LINUX32), set
    // by the command before its filter; -1: none, the caller's inherited.
    long personality = -1;
    // An fd init keeps for the sandbox's whole life and closes with it: the
    // lock of its leased host ids when no supervisor outlives the setup
    // (runtime/plan/identity.h). -1: none.
    int held_by_init_fd = -1;

    // How runChildInChild walks the setup table (runtime/child/child_setup.h):
    // `stockade run`'s way unless check or bench asks otherwise.
    SetupMode setup_mode = SetupMode::Run;
    // The lower tier (issue 18, runtime/plan/lower_tier_plan.h): no namespace at
    // all, so the table's namespace steps are skipped (lowerTierRuns), init
    // is a child subreaper that kills its children rather than kill(-1), and
    // the supervisor's "end it now" is told by its pid, not by si_pid 0.
    bool lower_tier = false;
    // Lower tier as root: the ids are set (and the capabilities then
    // dropped) as in the full tier. Rootless there is nothing to drop but
    // what an unprivileged process may: the ambient and inheritable sets.
    bool lower_tier_privileged = false;
    pid_t supervisor_pid = 0;
    BenchLevel bench_level = BenchLevel::FullProfile;  // SetupMode::Bench only
};

// Notes that `slot` (a ChildStage, or one of the slots above) has ended.
inline void markInChild(const ChildPlan& plan, int slot) noexcept {
    if (!plan.stage_times) return;
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    plan.stage_times[slot] =
        static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
}

// The child's entry point: walks the setup table (runtime/child/child_setup.h) in
// the plan's mode, becomes PID 1's init loop, and never returns. Defined in
// runtime/child/child_in_child.cpp.
[[noreturn]] void runChildInChild(ChildPlan& plan) noexcept;

}  // namespace stockade
