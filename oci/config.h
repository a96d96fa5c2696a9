// An OCI bundle's config.json (runtime-spec 1.0-1.2), read into plain data.
// The JSON stays in config.cpp. Reading refuses what stockade cannot honour
// yet, naming the field ("config.json: process.terminal: ..."), so nothing a
// spec asks for is silently ignored; unknown properties are ignored, as the
// spec requires of a reader.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "oci/hooks.h"
#include "seccomp/policy.h"

namespace stockade::oci {

struct Mount {
    std::string destination;  // absolute inside the container
    std::string type;         // "bind", "proc", "tmpfs", "cgroup"... ("bind" when options say so)
    std::string source;
    unsigned long flags = 0;  // MS_* from the options
    bool bind = false;        // bind or rbind
    bool recursive = false;   // rbind
    bool tmpcopyup = false;   // a tmpfs starts with the image's directory's contents
    // "slave" or "rslave" as asked (rootless podman's binds of --device
    // nodes): taken for a bind of a file, where nothing can be mounted
    // beneath it to propagate; refused for a directory (every mount is private).
    std::string slave;
    std::string data;  // the options mount(2) takes as data ("mode=755,size=65536k")
};

struct IdMap {
    uint32_t container_id = 0;
    uint32_t host_id = 0;
    uint32_t size = 0;
};

struct Rlimit {
    int resource = 0;
    uint64_t soft = 0;
    uint64_t hard = 0;
};

// linux.devices: a node the container gets at `path`. stockade makes none
// (its containers are in a user namespace, where mknod of a device is
// refused): it binds the host's node of that type and number (oci/devices.h).
struct Device {
    std::string path;  // absolute inside the container
    char type = 'c';   // 'c' (and 'u', its unbuffered name) or 'b'
    uint32_t major = 0;
    uint32_t minor = 0;
    std::optional<mode_t> file_mode;
    std::optional<uint32_t> uid, gid;
};

// linux.namespaces: each type once; a path means join, no path means new.
struct Namespace {
    std::string type;  // pid, network, mount, ipc, uts, user, cgroup
    std::string path;
};

// One of linux.resources.devices: the cgroup's rule for matching devices.
struct DeviceRule {
    bool allow = false;
    char type = 'a';               // 'a' (every type), 'c' or 'b'
    std::optional<int64_t> major;  // none or -1: any
    std::optional<int64_t> minor;
    std::string access = "rwm";
};

// linux.resources as stockade applies them to a container's cgroup
// (oci/cgroups.h), at create and by `update`. Unset: left as it is.
struct Resources {
    std::optional<int64_t> memory_limit;  // memory.limit (<0: none)
    std::optional<int64_t> swap_limit;    // memory.swap: memory+swap (<0: none)
    std::optional<int64_t> pids_limit;    // pids.limit (<=0: none)
    // memory.reservation: a soft limit in bytes (<0: none); v1's
    // memory.soft_limit_in_bytes, v2's memory.low, as runc writes them.
    std::optional<int64_t> memory_reservation;
    // memory.swappiness (0..100) and memory.disableOOMKiller (true; false
    // asks nothing): cgroup v1's memory.swappiness and memory.oom_control,
    // which v2 does not have per cgroup.
    std::optional<uint64_t> swappiness;
    bool disable_oom_killer = false;
    std::optional<uint64_t> cpu_shares;  // cpu.shares (runc's 0, unset, is left out)
    std::optional<int64_t> cpu_quota;    // cpu.quota in microseconds (<0: none)
    std::optional<uint64_t> cpu_period;  // cpu.period in microseconds
    // cpu.cpus and cpu.mems: a list ("0-1,3") of CPUs and memory nodes this
    // host has online, judged by the reader; written to the cpuset as given.
    std::optional<std::string> cpuset_cpus;
    std::optional<std::string> cpuset_mems;
    // hugepageLimits: each page size as the kernel names its files ("2MB",
    // "1GB": one this host has, judged by the reader) and its limit in
    // bytes. Kubernetes' kubelet sends one of 0 for every size the node
    // has, so every pod's container asks for them.
    std::vector<std::pair<std::string, uint64_t>> hugepage_limits;
    // unified: cgroup v2 files of the container's directory and what is
    // written to them, after every other field (runc's order); each name a
    // controller's file ("memory.oom.group", which kubelet sends on v2) or
    // cgroup.max.depth and cgroup.max.descendants, judged by the reader.
    std::map<std::string, std::string> unified;
    // Judged against linux.devices by create (oci/devices.h), never written:
    // not counted by any().
    std::vector<DeviceRule> device_rules;

    bool any() const {
        return memory_limit || swap_limit || pids_limit || wants_memory_tuning() || cpu_shares ||
               cpu_quota || cpu_period || cpuset_cpus || cpuset_mems || !hugepage_limits.empty() ||
               !unified.empty();
    }
    bool wants_cpuset() const { return cpuset_cpus || cpuset_mems; }
    bool wants_memory_tuning() const {
        return memory_reservation || swappiness || disable_oom_killer;
    }
    bool wants_cpu() const { return cpu_shares || cpu_quota || cpu_period; }
};

struct Config {
    std::string oci_version;
    std::vector<std::string> args;
    std::vector<std::string> env;
    std::string cwd = "/";
    uid_t uid = 0;
    gid_t gid = 0;
    // process.user.additionalGids, as listed: the supplementary groups, set
    // as host root before the clone (hostGroupsFor, oci/container_plan.h).
    std::vector<gid_t> additional_gids;
    std::optional<mode_t> umask;       // process.user.umask; none: the caller's
    std::optional<int> oom_score_adj;  // process.oomScoreAdj, -1000..1000; none: the caller's
    std::vector<Rlimit> rlimits;
    bool no_new_privileges = false;
    bool terminal = false;  // process.terminal: a pty sent to --console-socket
    unsigned short console_rows = 0;
    unsigned short console_cols = 0;
    // process.capabilities, by capability number; absent: none.
    struct CapabilityMasks {
        uint64_t bounding = 0, effective = 0, inheritable = 0, permitted = 0, ambient = 0;
        uint64_t ambient_dropped = 0;  // asked ambient, not both permitted and inheritable
    } capabilities;
    std::vector<std::string> bounding_names;  // for the seccomp importer's `includes.caps`
    std::string root_path;                    // as written: relative to the bundle, or absolute
    bool root_readonly = false;
    std::string hostname;  // empty: none asked
    std::optional<std::string> domainname;
    std::vector<Mount> mounts;
    std::vector<Namespace> namespaces;
    std::vector<IdMap> uid_mappings;
    std::vector<IdMap> gid_mappings;
    std::vector<std::string> masked_paths;
    std::vector<std::string> readonly_paths;
    std::vector<Device> devices;
    // linux.rootfsPropagation "slave" or "rslave" (rootless podman asks it
    // with a --device): stockade's mounts stay private, so a mount the host
    // makes later beneath the root does not reach the container; the
    // container can affect the host no more than under slave. Said by create.
    std::string rootfs_slave;
    std::map<std::string, std::string> sysctl;      // namespaced ones only, judged by the reader
    std::optional<seccomp::SeccompPolicy> seccomp;  // none: no filter, as runc
    // Calls a later unconditional rule gave a second action, dropped as
    // libseccomp drops it for runc and crun (the first rule holds).
    std::vector<std::string> seccomp_dropped;
    std::map<std::string, std::string> annotations;
    std::string cgroups_path;  // linux.cgroupsPath, as written
    Resources resources;       // linux.resources
    // linux.personality: the execution domain (personality(2)'s PER_LINUX or
    // PER_LINUX32) the command and exec's processes take; none: the caller's
    // is inherited. Flags are refused by the reader.
    std::optional<unsigned long> personality;
    Hooks hooks;  // run by oci/hooks.h

    const Namespace* findNamespace(std::string_view type) const;
    // Whether the container's init is born in a pid namespace that is not
    // its own: one joined by path, or none listed (the caller's, as
    // `--pid host` and a Kubernetes hostPID pod ask). Init is then not
    // PID 1, and what PID 1 gave is replaced (oci/pid_join.h).
    bool sharesPidNamespace() const;
    // Whether none is listed: the caller's pid namespace.
    bool callersPidNamespace() const { return findNamespace("pid") == nullptr; }
};

// Bounds on what is read from a bundle.
inline constexpr size_t kMaxConfigBytes = 4 << 20;

// Parses and judges config.json's text; errors start with "config.json: "
// and name the field.
Result<Config> parseConfig(std::string_view json_text);

// An `exec` process (runc's --process file): the process object alone,
// judged as config.json's; errors start with "process.json: ".
Result<Config> parseProcess(std::string_view json_text);

// `update --resources`: a linux.resources object alone, judged as
// config.json's (what cannot be applied is refused by name); errors start
// with "linux.resources".
Result<Resources> parseResources(std::string_view json_text);

// A capability's number by its name ("CAP_KILL"), or -1.
int capabilityNumber(std::string_view name);
// Every capability name this reader knows, by number.
std::vector<std::string> capabilityNames();

// The signal a `kill` names, by number ("9") or name ("KILL", "SIGKILL");
// an error for anything else or out of range.
Result<int> parseSignal(std::string_view text);

// A default config.json, as `spec` writes it: busybox-friendly, no
// capabilities, every namespace of its own.
std::string defaultConfigJson(bool rootless);

}  // namespace stockade::oci
