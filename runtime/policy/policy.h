// Policy: everything one sandbox is, validated and immutable. It is built from
// a profile plus command-line overrides (runtime/policy/policy_builder.cpp) and read
// by the sandbox builder; nothing downstream parses or guesses again.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/host_path.h"

namespace stockade {

struct ExtraMount {
    std::string source;  // host path, resolved (no symlinks)
    std::string target;  // absolute path inside the sandbox, normalized
    bool writable = false;
    HeldPath held;  // `source` as opened once; what gets mounted (host_path.h)
};

enum class StdinMode { Null, Inherit };
enum class LandlockMode { Off, BestEffort, Required };
enum class NetworkMode { None, Loopback };
// The lowest sandbox a run accepts (SPEC §10, issue 18). Full: every
// namespace (G1-G10). Landlock: where no user namespace can be had, a
// sandbox built without namespaces (runtime/plan/lower_tier_plan.h); taken only
// when the full tier's clone is refused and this allows it.
enum class Tier { Full, Landlock };
const char* tierName(Tier tier);  // "full", "landlock"

struct Limits {
    std::optional<uint64_t> memory_bytes;
    std::optional<uint64_t> pids;
    std::optional<uint64_t> cpu_time_ms;
    std::optional<uint64_t> timeout_ms;
    std::optional<uint64_t> output_bytes;
    uint64_t tmp_bytes = 256ull << 20;
    std::optional<uint64_t> file_size_bytes;
    std::optional<uint64_t> open_files;
    // The host-wide and per-user kernel counters a sandbox is bounded on by
    // default (docs/threat-model.md, "Host-wide counters"); a profile may
    // loosen (or tighten) each by name. Unset: the default bound.
    std::optional<uint64_t> pending_signals;      // RLIMIT_SIGPENDING (and POSIX timers)
    std::optional<uint64_t> message_queue_bytes;  // RLIMIT_MSGQUEUE
    std::optional<uint64_t> inotify_instances;    // the sandbox's user namespace's maximum
    std::optional<uint64_t> inotify_watches;      // the same, for watches

    bool operator==(const Limits&) const = default;
};

// Names inside the worktree to hide or keep read-only (runtime/plan/worktree_masks.h):
// glob patterns matched by path component at any depth, a pattern with a
// leading "/repo/" only from the worktree's top.
// A place the sandbox reaches besides the worktree (a --mount): a hidden
// or read-only link that leads there is refused (runtime/plan/worktree_links.h).
struct MountedPlace {
    std::string target;  // inside the sandbox
    std::string source;  // on the host
    bool writable = false;

    bool operator==(const MountedPlace&) const = default;
};

struct WorktreeMaskRules {
    std::vector<std::string> hide;
    std::vector<std::string> read_only;
    std::vector<std::string> show;      // exempt from `hide`
    std::vector<std::string> writable;  // exempt from `read_only`
    uint32_t max_depth = 64;            // a tree deeper than this is refused
    uint64_t max_entries = 1000000;     // a tree with more entries is refused
    // Filled by the plan (addWorktreeMasks) from the policy's mounts, not
    // by a profile: where a link may lead that the sandbox also reaches.
    std::vector<MountedPlace> mounted;

    bool operator==(const WorktreeMaskRules&) const = default;
};

struct FilesystemView {
    std::string rootfs = "/";              // where system directories come from
    std::vector<std::string> system_dirs;  // absolute, e.g. "/usr", "/bin"
    std::vector<std::string> etc_entries;  // names under /etc to expose read-only
    bool mount_sys = false;                // read-only /sys
    std::optional<std::string> worktree;   // host path, resolved
    HeldPath worktree_held;                // the worktree as opened once (host_path.h)
    HeldPath rootfs_held;                  // --rootfs as opened once
    std::vector<ExtraMount> mounts;
    WorktreeMaskRules worktree_masks;
    // The caller's state directory, held (runtime/record/state_dir.h), where
    // the worktree walk is kept between runs (runtime/plan/walk_cache.h);
    // without it every walk is whole.
    std::shared_ptr<UniqueFd> state_dir;
};

struct Policy {
    std::string name;
    std::string profile_name;
    std::vector<std::string> command;
    FilesystemView fs;
    std::vector<std::string> environment;  // final KEY=VALUE list for the command
    std::string workdir;
    std::optional<uid_t> uid;  // --user; else derived (G3)
    std::optional<gid_t> gid;
    // Rootless: map the caller's subordinate ids too (--map-subids).
    bool map_subids = false;
    std::string hostname = "stockade";
    NetworkMode network = NetworkMode::None;
    // serve: the port published on the host's loopback and forwarded into
    // the sandbox's (inside, its processes bind and connect freely).
    std::optional<uint16_t> publish_port;
    // serve --net-backend direct: the filter sends every listen(2) to the
    // supervisor, which hands the published one a host socket
    // (runtime/net/direct_ingress.h). Needs a seccomp filter.
    bool listen_to_supervisor = false;
    StdinMode stdin_mode = StdinMode::Null;
    bool quiet = false;
    Limits limits;
    std::vector<std::string> require;  // guarantees that must hold
    std::string seccomp = "default";   // "default", "none", or a file path
    LandlockMode landlock = LandlockMode::BestEffort;
    Tier min_tier = Tier::Full;  // --min-tier, the profile's "min_tier"
};

}  // namespace stockade
