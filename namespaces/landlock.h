// Landlock, parent side (SPEC G10): a second wall behind the mount namespace.
// The mounts decide what the sandbox sees; Landlock (landlock(7)) decides,
// per inode and independently of mounts, uids and capabilities, what the
// command may do with it. The ruleset mirrors the filesystem view (read-only
// where the mount is read-only, writable only where the mount is writable),
// denies or narrows TCP from ABI 4 and scopes abstract unix sockets and
// signals from ABI 6.
//
// The parent builds a LandlockPlan before the clone: it creates the ruleset
// and adds every rule whose path it can name on the host (the fd of a host
// path names the same inode the sandbox's bind mount shows). What exists only
// inside the sandbox (/tmp, /proc, /dev, the synthesized /etc) is added by
// the child after pivot_root, then the command restricts itself
// (namespaces/landlock_in_child.h).
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "namespaces/mount_plan.h"

namespace stockade::ns {

// ---------------------------------------------------------------------------
// The kernel's interface. Debian 12's linux-libc-dev (6.1) describes ABI 2
// only: its landlock_ruleset_attr lacks handled_access_net and scoped, and it
// has no TRUNCATE, IOCTL_DEV, network or scope constants. The values below
// are the kernel's uapi (include/uapi/linux/landlock.h, Linux 6.12+), under
// stockade's own names so a newer header cannot clash with them.

#ifndef SYS_landlock_create_ruleset  // same numbers on every architecture
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

inline constexpr uint32_t kLandlockCreateRulesetVersion = 1U << 0;

inline constexpr int kLandlockRulePathBeneath = 1;
inline constexpr int kLandlockRuleNetPort = 2;  // ABI 4

// Filesystem rights (landlock(7), "Filesystem actions").
inline constexpr uint64_t kLandlockFsExecute = 1ULL << 0;
inline constexpr uint64_t kLandlockFsWriteFile = 1ULL << 1;
inline constexpr uint64_t kLandlockFsReadFile = 1ULL << 2;
inline constexpr uint64_t kLandlockFsReadDir = 1ULL << 3;
inline constexpr uint64_t kLandlockFsRemoveDir = 1ULL << 4;
inline constexpr uint64_t kLandlockFsRemoveFile = 1ULL << 5;
inline constexpr uint64_t kLandlockFsMakeChar = 1ULL << 6;
inline constexpr uint64_t kLandlockFsMakeDir = 1ULL << 7;
inline constexpr uint64_t kLandlockFsMakeReg = 1ULL << 8;
inline constexpr uint64_t kLandlockFsMakeSock = 1ULL << 9;
inline constexpr uint64_t kLandlockFsMakeFifo = 1ULL << 10;
inline constexpr uint64_t kLandlockFsMakeBlock = 1ULL << 11;
inline constexpr uint64_t kLandlockFsMakeSym = 1ULL << 12;
inline constexpr uint64_t kLandlockFsRefer = 1ULL << 13;     // ABI 2
inline constexpr uint64_t kLandlockFsTruncate = 1ULL << 14;  // ABI 3
inline constexpr uint64_t kLandlockFsIoctlDev = 1ULL << 15;  // ABI 5

// The rights that apply to a file rather than a directory: a path_beneath
// rule on a non-directory may hold only these (landlock_add_rule(2), EINVAL).
inline constexpr uint64_t kLandlockFileAccess = kLandlockFsExecute | kLandlockFsWriteFile |
                                                kLandlockFsReadFile | kLandlockFsTruncate |
                                                kLandlockFsIoctlDev;

// Network rights (ABI 4): TCP only; UDP and other protocols are not handled.
inline constexpr uint64_t kLandlockNetBindTcp = 1ULL << 0;
inline constexpr uint64_t kLandlockNetConnectTcp = 1ULL << 1;

// IPC scopes (ABI 6): deny reaching what was made outside the domain.
inline constexpr uint64_t kLandlockScopeAbstractUnixSocket = 1ULL << 0;
inline constexpr uint64_t kLandlockScopeSignal = 1ULL << 1;

// The kernel's structs at their ABI 6 size. An older kernel accepts the
// larger landlock_ruleset_attr as long as the fields it does not know are
// zero (landlock_create_ruleset(2)); buildLandlockPlan keeps them so.
struct LandlockRulesetAttr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};
struct __attribute__((packed)) LandlockPathBeneathAttr {
    uint64_t allowed_access;
    int32_t parent_fd;
};
struct LandlockNetPortAttr {
    uint64_t allowed_access;
    uint64_t port;  // host byte order
};

// One syscall(2) each: async-signal-safe, usable in the child.
inline int sysLandlockCreateRuleset(const LandlockRulesetAttr* attr, size_t size,
                                    uint32_t flags) noexcept {
    return static_cast<int>(syscall(SYS_landlock_create_ruleset, attr, size, flags));
}
inline int sysLandlockAddRule(int ruleset_fd, int rule_type, const void* rule_attr,
                              uint32_t flags) noexcept {
    return static_cast<int>(
        syscall(SYS_landlock_add_rule, ruleset_fd, rule_type, rule_attr, flags));
}
inline int sysLandlockRestrictSelf(int ruleset_fd, uint32_t flags) noexcept {
    return static_cast<int>(syscall(SYS_landlock_restrict_self, ruleset_fd, flags));
}

// ---------------------------------------------------------------------------
// What the kernel offers.

struct LandlockSupport {
    int abi = 0;         // 0: unavailable
    std::string reason;  // why it is unavailable, with the fix; empty when abi > 0
};

// Asks the kernel for its Landlock ABI (landlock_create_ruleset with
// LANDLOCK_CREATE_RULESET_VERSION). ENOSYS: built without Landlock;
// EOPNOTSUPP: built in but not enabled at boot.
LandlockSupport probeLandlock();
// The kernel's ABI, 0 when Landlock is unavailable.
int landlockAbi();

// How much a rule grants. Each is masked to what the plan's ABI knows, and
// on a non-directory to kLandlockFileAccess.
enum class LandlockAccess {
    List,       // READ_DIR: names only ("/", whose files are all mounts or links)
    Read,       // EXECUTE, READ_FILE, READ_DIR: a read-only mount
    ReadWrite,  // everything but MAKE_CHAR, MAKE_BLOCK and IOCTL_DEV: a writable mount
    Devices,    // READ_FILE, WRITE_FILE, TRUNCATE, IOCTL_DEV, READ_DIR: /dev, where
                // `> /dev/null` must work but nothing may be created
};

// Every filesystem right the ABI knows: all of them are handled, so all are
// denied but where a rule grants them (landlock(7)'s best-effort pattern).
uint64_t landlockHandledFs(int abi);
uint64_t landlockHandledNet(int abi);  // 0 below ABI 4
uint64_t landlockScopes(int abi);      // 0 below ABI 6
uint64_t landlockAllowedFs(LandlockAccess access, int abi);

// ---------------------------------------------------------------------------
// The request: a slice of the policy, in paths.

struct LandlockPath {
    std::string path;  // absolute; a host path, or a path inside the new root
    LandlockAccess access = LandlockAccess::Read;
    bool optional = false;  // a missing path is skipped, not an error
};

enum class LandlockNetwork {
    Unrestricted,  // TCP not handled: the network namespace alone decides
    // Where no network namespace holds (the lower tier, issue 18), these
    // are what is left: ports, never addresses, so both also forbid the
    // sandbox's own loopback. Sandboxes with a network namespace do not use
    // them (runtime/plan/child_plan_builder.cpp says why).
    DenyTcp,       // ABI 4: no TCP bind and no TCP connect at all
    BindPortOnly,  // ABI 4: TCP bind on `bind_port` only, no connect
};

struct LandlockRequest {
    // Opened and added by the parent before the clone: system directories,
    // bound /etc entries, a --rootfs, the worktree, extra mounts.
    std::vector<LandlockPath> host_paths;
    // Opened and added by the child after pivot_root, by their path in the
    // new root: what exists only there (/tmp, /var/tmp, /dev/shm, /proc,
    // /dev, the synthesized /etc, "/").
    std::vector<LandlockPath> sandbox_paths;
    // Read-only paths beneath a writable one (the worktree's .git). Landlock
    // rules only add rights, so these cannot be narrowed: they are recorded
    // in the plan, not turned into rules; the read-only mount holds them.
    std::vector<std::string> read_only_within_writable;
    LandlockNetwork network = LandlockNetwork::DenyTcp;
    uint16_t bind_port = 0;  // BindPortOnly
    // ABI 6: the command may reach no abstract unix socket and signal no
    // process created outside its own Landlock domain.
    bool scope_ipc = true;
    // Use at most this ABI (0: the kernel's). Tests use it to prove the
    // best-effort masks; a profile could use it to pin behaviour.
    int abi_limit = 0;
};

// A rule the child adds after pivot_root: the path is already allocated, the
// rights already masked to the plan's ABI.
struct LandlockSandboxRule {
    std::string path;
    uint64_t allowed_access = 0;
    bool optional = false;
};

// Everything the child needs, allocated before the clone. Move-only (it owns
// the ruleset). One plan serves one sandbox: the child adds its rules to the
// very ruleset the parent holds (a clone shares the open file description).
struct LandlockPlan {
    int abi = 0;                     // the ABI used; 0: Landlock not used
    std::string unavailable_reason;  // why abi is 0
    UniqueFd ruleset;                // O_CLOEXEC (landlock_create_ruleset(2))
    uint64_t handled_fs = 0;
    uint64_t handled_net = 0;
    uint64_t scoped = 0;
    std::vector<LandlockSandboxRule> sandbox_rules;
    // The request's read_only_within_writable: Landlock leaves these
    // writable; only their read-only mount keeps them so.
    std::vector<std::string> unexpressed_read_only;

    bool active() const { return abi > 0 && ruleset.valid(); }
    // For the result's `enforced.landlock`: "abi-7"; empty when not active.
    std::string enforcedName() const;
};

// Creates the ruleset and adds the host-path and network rules. A kernel
// without a usable Landlock is not an error: the plan comes back inactive
// with unavailable_reason set, and the caller decides (best-effort or
// required). An error is a host path that cannot be opened or a rule the
// kernel refuses.
Result<LandlockPlan> buildLandlockPlan(const LandlockRequest& request);

// Adds to `request` the paths that mirror `mounts`, so the two walls are
// derived from one description and cannot drift apart:
//   BindFromHost     host path, Read or ReadWrite as the mount (Devices under /dev)
//   AttachPrepared   its target inside, Read or ReadWrite as op.writable
//   Tmpfs            its target inside, ReadWrite (Devices for /dev)
//   Proc, Directory  their target inside, Read
//   File, CopyFromHost  their target inside, Read, unless beneath a Directory
//   ReadOnlyBeneath  read_only_within_writable
// and "/" as List. Masks, read-only remounts and symlinks add nothing: they
// only narrow, or resolve to a path that has its own rule.
void mirrorMountPlan(const MountPlan& mounts, LandlockRequest& request);

}  // namespace stockade::ns
