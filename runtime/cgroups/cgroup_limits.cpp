#include "runtime/cgroups/cgroup_limits.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>

#include "runtime/cgroups/cgroup_v1.h"

namespace stockade {

namespace {

bool writableDir(const std::string& path) {
    return access(path.c_str(), W_OK | X_OK) == 0;
}

std::string under(const std::string& mount, const std::string& rel) {
    return rel == "/" ? mount : mount + rel;
}

}  // namespace

const char* mechanismName(CgroupMechanism mechanism) {
    switch (mechanism) {
        case CgroupMechanism::V1:
            return "cgroup1";
        case CgroupMechanism::V2:
            return "cgroup2";
        case CgroupMechanism::None:
            return nullptr;
    }
    return nullptr;
}

std::string nextLeafName() {
    static std::atomic<unsigned> counter{0};
    return std::to_string(getpid()) + "-" + std::to_string(counter++);
}

CgroupLayout CgroupLayout::ofThisProcess() {
    CgroupLayout layout;
    std::string self = readCgroupFileOr("/proc/self/cgroup");
    std::string mount = findCgroup2Mount(readCgroupFileOr("/proc/self/mountinfo"));
    if (auto rel = cgroupPathOf(self, ""); rel && !mount.empty()) {
        std::string own = under(mount, *rel);
        CgroupV2Site site;
        if (geteuid() == 0) {
            // The hierarchy's root may hold processes and enable controllers
            // at once; a cgroup namespace's root may not (it has a
            // cgroup.type, the real root has none).
            site.base = mount;
            site.holds_caller = own == mount && access((mount + "/cgroup.type").c_str(), F_OK) == 0;
        } else {
            site.base = own;
            site.holds_caller = true;
        }
        if (writableDir(site.base)) layout.v2 = site;
    }
    for (const char* controller : {"memory", "pids"}) {
        std::string v1_mount = std::string("/sys/fs/cgroup/") + controller;
        auto rel = cgroupPathOf(self, controller);
        if (!rel || access((v1_mount + "/cgroup.procs").c_str(), F_OK) != 0) continue;
        std::string parent = under(v1_mount, *rel);
        if (!writableDir(parent)) continue;
        (controller == std::string("memory") ? layout.v1_memory : layout.v1_pids) = parent;
    }
    return layout;
}

Result<SandboxCgroups> SandboxCgroups::create(const CgroupRequest& request,
                                              const CgroupLayout& layout) {
    SandboxCgroups out;
    bool want_memory = request.memory_bytes.has_value();
    bool want_pids = request.pids.has_value();
    if (!want_memory && !want_pids) return out;
    std::string name = nextLeafName();

    // cgroup v2 first: one leaf for both controllers, cloned into, killed
    // with cgroup.kill, memory.peak. A subtree that cannot be prepared
    // leaves nothing behind and the controllers to v1 or rlimits.
    if (layout.v2) {
        std::string available = readCgroupFileOr(layout.v2->base + "/cgroup.controllers");
        std::vector<std::string> controllers;
        if (want_memory && hasWord(available, "memory")) controllers.push_back("memory");
        if (want_pids && hasWord(available, "pids")) controllers.push_back("pids");
        if (!controllers.empty()) {
            if (auto subtree = CgroupV2Subtree::prepare(*layout.v2, controllers)) {
                out.v2_subtree_ = std::move(*subtree);
                auto leaf = CgroupV2Leaf::create(out.v2_subtree_->dir(), name);
                if (!leaf) return leaf.error().withContext("cgroup v2 leaf");
                out.v2_leaf_ = std::move(*leaf);
                CgroupRequest held;
                for (const std::string& c : controllers) {
                    if (c == "memory") held.memory_bytes = request.memory_bytes;
                    if (c == "pids") held.pids = request.pids;
                }
                if (auto s = writeV2Limits(out.v2_leaf_->path(), held); !s) return s.error();
                if (held.memory_bytes) out.memory_ = CgroupMechanism::V2;
                if (held.pids) out.pids_ = CgroupMechanism::V2;
            }
        }
    }

    // cgroup v1 for whatever v2 could not hold, each controller on its own
    // hierarchy, under stockade's own cgroup so outer limits still apply.
    if (want_memory && out.memory_ == CgroupMechanism::None && !layout.v1_memory.empty()) {
        out.v1_memory_home_ = layout.v1_memory;
        out.v1_memory_bytes_ = request.memory_bytes;
        out.memory_ = CgroupMechanism::V1;
    }
    if (want_pids && out.pids_ == CgroupMechanism::None && !layout.v1_pids.empty()) {
        out.v1_pids_home_ = layout.v1_pids;
        out.v1_pids_ = request.pids;
        out.pids_ = CgroupMechanism::V1;
    }
    out.leaf_name_ = name;
    return out;
}

SandboxCgroups::~SandboxCgroups() {
    v2_leaf_.reset();
    v2_subtree_.reset();
    (void)removeV1Leaf(v1_memory_leaf_);
    (void)removeV1Leaf(v1_pids_leaf_);
}

Result<std::vector<UniqueFd>> SandboxCgroups::makeV1Leaves() {
    std::vector<UniqueFd> tasks;
    auto open_tasks = [&](const std::string& leaf) -> Status {
        std::string path = leaf + "/tasks";
        UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
        if (!fd.valid()) return Error::fromErrno("open(\"" + path + "\")");
        tasks.push_back(std::move(fd));
        return okStatus();
    };
    if (v1_memory_bytes_ && v1_memory_leaf_.empty()) {
        auto leaf = makeV1Leaf(v1_memory_home_, leaf_name_);
        if (!leaf) return leaf.error().withContext("cgroup v1 memory leaf");
        v1_memory_leaf_ = *leaf;
        if (auto s = writeV1MemoryLimit(*leaf, *v1_memory_bytes_); !s) return s.error();
        if (auto s = open_tasks(*leaf); !s) return s.error();
    }
    if (v1_pids_ && v1_pids_leaf_.empty()) {
        auto leaf = makeV1Leaf(v1_pids_home_, leaf_name_);
        if (!leaf) return leaf.error().withContext("cgroup v1 pids leaf");
        v1_pids_leaf_ = *leaf;
        if (auto s = writeV1PidsLimit(*leaf, *v1_pids_); !s) return s.error();
        if (auto s = open_tasks(*leaf); !s) return s.error();
    }
    return tasks;
}

uint64_t SandboxCgroups::processCount() const {
    std::string leaf = pids_ == CgroupMechanism::V2   ? v2_leaf_->path()
                       : pids_ == CgroupMechanism::V1 ? v1_pids_leaf_
                                                      : std::string();
    if (leaf.empty()) return 0;
    return numberIn(readCgroupFileOr(leaf + "/pids.current")).value_or(0);
}

CgroupEvents SandboxCgroups::events() const {
    CgroupEvents v2;
    if (v2_leaf_)
        v2 = readV2Events(v2_leaf_->path(), memory_ == CgroupMechanism::V2,
                          pids_ == CgroupMechanism::V2);
    CgroupEvents v1 = readV1Events(memory_ == CgroupMechanism::V1 ? v1_memory_leaf_ : "",
                                   pids_ == CgroupMechanism::V1 ? v1_pids_leaf_ : "");
    CgroupEvents e;
    e.oom_killed = v2.oom_killed || v1.oom_killed;
    e.pids_limit_hit = v2.pids_limit_hit || v1.pids_limit_hit;
    e.peak_memory = memory_ == CgroupMechanism::V2 ? v2.peak_memory : v1.peak_memory;
    return e;
}

void removeStaleCgroups(const CgroupLayout& layout) {
    if (layout.v2) removeStaleV2(*layout.v2);
    if (!layout.v1_memory.empty()) removeStaleV1(layout.v1_memory);
    if (!layout.v1_pids.empty()) removeStaleV1(layout.v1_pids);
}

}  // namespace stockade
