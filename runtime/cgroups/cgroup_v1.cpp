#include "runtime/cgroups/cgroup_v1.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace stockade {

Result<std::string> makeV1Leaf(const std::string& parent, const std::string& name) {
    std::string dir = parent + "/stockade";
    if (mkdir(dir.c_str(), 0755) < 0 && errno != EEXIST)
        return Error::fromErrno("mkdir(\"" + dir + "\")");
    std::string leaf = dir + "/" + name;
    if (mkdir(leaf.c_str(), 0755) < 0) return Error::fromErrno("mkdir(\"" + leaf + "\")");
    return leaf;
}

Status writeV1MemoryLimit(const std::string& leaf, uint64_t bytes) {
    std::string limit = std::to_string(bytes);
    if (auto s = writeCgroupFile(leaf + "/memory.limit_in_bytes", limit); !s)
        return s.error().withContext("cgroup v1 memory limit");
    // Absent without swap accounting (swapaccount=0): then no swap can
    // stretch the bound either.
    if (access((leaf + "/memory.memsw.limit_in_bytes").c_str(), F_OK) == 0)
        if (auto s = writeCgroupFile(leaf + "/memory.memsw.limit_in_bytes", limit); !s)
            return s.error().withContext("cgroup v1 memory+swap limit");
    // Socket buffers: v1 charges TCP memory to the cgroup only once its own
    // TCP limit is set (cgroup-v1/memory.rst, "kmem.tcp"); until then they
    // count only toward the host-wide tcp_mem, which a sandbox holding many
    // connections could fill for every socket on the host (issue 15: 76 MiB
    // of buffers under --memory 128m). Set before the command joins the
    // leaf, so every socket it makes is charged. cgroup v2 charges socket
    // memory to memory.max without being asked.
    if (access((leaf + "/memory.kmem.tcp.limit_in_bytes").c_str(), F_OK) == 0)
        if (auto s = writeCgroupFile(leaf + "/memory.kmem.tcp.limit_in_bytes", limit); !s)
            return s.error().withContext("cgroup v1 TCP buffer limit");
    return okStatus();
}

Status writeV1PidsLimit(const std::string& leaf, uint64_t pids) {
    if (auto s = writeCgroupFile(leaf + "/pids.max", std::to_string(pids)); !s)
        return s.error().withContext("cgroup v1 pids limit");
    return okStatus();
}

CgroupEvents readV1Events(const std::string& memory_leaf, const std::string& pids_leaf) {
    CgroupEvents e;
    if (!memory_leaf.empty()) {
        e.oom_killed =
            keyedValue(readCgroupFileOr(memory_leaf + "/memory.oom_control"), "oom_kill") > 0;
        e.peak_memory =
            numberIn(readCgroupFileOr(memory_leaf + "/memory.max_usage_in_bytes")).value_or(0);
    }
    if (!pids_leaf.empty())
        e.pids_limit_hit = keyedValue(readCgroupFileOr(pids_leaf + "/pids.events"), "max") > 0;
    return e;
}

Status removeV1Leaf(const std::string& leaf) {
    if (leaf.empty()) return okStatus();
    // In a run that ended normally it is empty already (the PID namespace
    // died with its init), and one rmdir is all it costs.
    if (rmdir(leaf.c_str()) == 0 || errno == ENOENT) return okStatus();
    // v1 has no cgroup.kill; a process that forks while this runs is caught
    // on the next pass.
    for (int pass = 0; pass < 100; ++pass) {
        std::vector<pid_t> pids = pidsIn(readCgroupFileOr(leaf + "/cgroup.procs"));
        if (pids.empty()) break;
        for (pid_t pid : pids) kill(pid, SIGKILL);
        usleep(1000);
    }
    return removeCgroupDir(leaf);
}

void removeStaleV1(const std::string& parent) {
    std::string dir = parent + "/stockade";
    for (const std::string& name : directoryEntries(dir)) {
        pid_t owner = ownerOf(name);
        if (owner <= 0 || owner == getpid() || processExists(owner)) continue;
        (void)removeV1Leaf(dir + "/" + name);
    }
}

}  // namespace stockade
