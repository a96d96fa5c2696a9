#include "runtime/cgroup_limits.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <sstream>

namespace stockade {

namespace {

Result<std::string> readText(const std::string& path) {
    UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return Error::fromErrno("open(\"" + path + "\")");
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd.get(), buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
    if (n < 0) return Error::fromErrno("read(\"" + path + "\")");
    return out;
}

Status writeText(const std::string& path, const std::string& value) {
    UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return Error::fromErrno("open(\"" + path + "\")");
    if (write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size()))
        return Error::fromErrno("write(\"" + path + "\", \"" + value + "\")");
    return okStatus();
}

bool exists(const std::string& path) {
    return access(path.c_str(), F_OK) == 0;
}
bool writableDir(const std::string& path) {
    return access(path.c_str(), W_OK | X_OK) == 0;
}

bool hasWord(const std::string& text, const std::string& word) {
    std::istringstream in(text);
    std::string w;
    while (in >> w)
        if (w == word) return true;
    return false;
}

std::string leafName() {
    static std::atomic<unsigned> counter{0};
    return std::to_string(getpid()) + "-" + std::to_string(counter++);
}

// rmdir of a cgroup whose last process just died can see EBUSY for a moment,
// while the kernel finishes releasing it.
void removeLeaf(const std::string& path) {
    if (path.empty()) return;
    for (int attempt = 0; attempt < 100; ++attempt) {
        if (rmdir(path.c_str()) == 0 || errno == ENOENT) return;
        if (errno != EBUSY) return;
        usleep(1000);
    }
}

Result<std::string> makeLeaf(const std::string& parent) {
    std::string dir = parent + "/stockade";
    if (mkdir(dir.c_str(), 0755) < 0 && errno != EEXIST)
        return Error::fromErrno("mkdir(\"" + dir + "\")");
    std::string leaf = dir + "/" + leafName();
    if (mkdir(leaf.c_str(), 0755) < 0) return Error::fromErrno("mkdir(\"" + leaf + "\")");
    return leaf;
}

std::string readOr(const std::string& path) {
    auto text = readText(path);
    return text ? *text : std::string();
}

// Where the unified hierarchy lets this process create a leaf with the
// controllers it needs, or "".
struct V2Base {
    std::string mount;
    std::string path;  // our cgroup, absolute in the filesystem
};

std::optional<V2Base> findV2Base() {
    std::string mount = findCgroup2Mount(readOr("/proc/self/mountinfo"));
    if (mount.empty()) return std::nullopt;
    auto rel = cgroupPathOf(readOr("/proc/self/cgroup"), "");
    if (!rel) return std::nullopt;
    std::string path = *rel == "/" ? mount : mount + *rel;
    return V2Base{mount, path};
}

// v2 forbids controllers in a cgroup's subtree while that cgroup holds
// processes (the "no internal processes" rule), except at the root. A
// delegated scope holds stockade itself, so stockade first moves into a
// leaf of its own, as crun and podman do for rootless containers.
Status prepareV2Parent(const V2Base& base, bool memory, bool pids) {
    std::string enable = std::string(memory ? " +memory" : "") + (pids ? " +pids" : "");
    enable.erase(0, 1);
    if (base.path != base.mount) {
        std::string procs = readOr(base.path + "/cgroup.procs");
        if (!procs.empty()) {
            std::string self_leaf = base.path + "/stockade-supervisor-" + std::to_string(getpid());
            if (mkdir(self_leaf.c_str(), 0755) < 0 && errno != EEXIST)
                return Error::fromErrno("mkdir(\"" + self_leaf + "\")");
            if (auto s = writeText(self_leaf + "/cgroup.procs", "0"); !s) return s;
        }
    }
    if (auto s = writeText(base.path + "/cgroup.subtree_control", enable); !s) return s;
    std::string dir = base.path + "/stockade";
    if (mkdir(dir.c_str(), 0755) < 0 && errno != EEXIST)
        return Error::fromErrno("mkdir(\"" + dir + "\")");
    return writeText(dir + "/cgroup.subtree_control", enable);
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

std::string findCgroup2Mount(const std::string& mountinfo) {
    std::istringstream lines(mountinfo);
    std::string line;
    while (std::getline(lines, line)) {
        auto dash = line.find(" - ");
        if (dash == std::string::npos) continue;
        std::istringstream tail(line.substr(dash + 3));
        std::string fstype;
        tail >> fstype;
        if (fstype != "cgroup2") continue;
        std::istringstream head(line.substr(0, dash));
        std::string id, parent, devno, root, mount_point;
        head >> id >> parent >> devno >> root >> mount_point;
        return mount_point;
    }
    return "";
}

std::optional<std::string> cgroupPathOf(const std::string& proc_cgroup,
                                        const std::string& controller) {
    // Each line is "hierarchy-id:controller,list:path"; the v2 line is "0::path".
    std::istringstream lines(proc_cgroup);
    std::string line;
    while (std::getline(lines, line)) {
        auto first = line.find(':');
        auto second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) continue;
        std::string controllers = line.substr(first + 1, second - first - 1);
        std::string path = line.substr(second + 1);
        if (controller.empty()) {
            if (line.compare(0, first, "0") == 0 && controllers.empty()) return path;
            continue;
        }
        for (char& c : controllers)
            if (c == ',') c = ' ';
        if (hasWord(controllers, controller)) return path;
    }
    return std::nullopt;
}

uint64_t keyedValue(const std::string& text, const std::string& key) {
    std::istringstream lines(text);
    std::string k;
    uint64_t v;
    while (lines >> k >> v)
        if (k == key) return v;
    return 0;
}

Result<SandboxCgroups> SandboxCgroups::create(const CgroupRequest& request) {
    SandboxCgroups out;
    bool want_memory = request.memory_bytes.has_value();
    bool want_pids = request.pids.has_value();
    if (!want_memory && !want_pids) return out;

    // cgroup v2 first: one leaf for both controllers, cgroup.kill, memory.peak.
    if (auto base = findV2Base(); base && writableDir(base->path)) {
        std::string controllers = readOr(base->path + "/cgroup.controllers");
        bool v2_memory = want_memory && hasWord(controllers, "memory");
        bool v2_pids = want_pids && hasWord(controllers, "pids");
        if ((v2_memory || v2_pids) && prepareV2Parent(*base, v2_memory, v2_pids)) {
            auto leaf = makeLeaf(base->path);
            if (!leaf) return leaf.error().withContext("cgroup v2 leaf");
            out.v2_leaf_ = *leaf;
            if (v2_memory) {
                if (auto s =
                        writeText(*leaf + "/memory.max", std::to_string(*request.memory_bytes));
                    !s)
                    return s.error().withContext("cgroup v2 memory limit");
                if (exists(*leaf + "/memory.swap.max"))
                    (void)writeText(*leaf + "/memory.swap.max", "0");
                out.memory_ = CgroupMechanism::V2;
            }
            if (v2_pids) {
                if (auto s = writeText(*leaf + "/pids.max", std::to_string(*request.pids)); !s)
                    return s.error().withContext("cgroup v2 pids limit");
                out.pids_ = CgroupMechanism::V2;
            }
            out.v2_leaf_fd_.reset(open(leaf->c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
            if (!out.v2_leaf_fd_) return Error::fromErrno("open(\"" + *leaf + "\")");
        }
    }

    // cgroup v1 for whatever v2 could not hold, each controller on its own
    // hierarchy, under stockade's own cgroup so outer limits still apply.
    std::string self = readOr("/proc/self/cgroup");
    auto v1Leaf = [&](const std::string& controller) -> Result<std::string> {
        std::string mount = "/sys/fs/cgroup/" + controller;
        auto rel = cgroupPathOf(self, controller);
        if (!rel || !exists(mount + "/cgroup.procs")) return std::string();
        std::string parent = *rel == "/" ? mount : mount + *rel;
        if (!writableDir(parent)) return std::string();
        return makeLeaf(parent);
    };
    if (want_memory && out.memory_ == CgroupMechanism::None) {
        auto leaf = v1Leaf("memory");
        if (!leaf) return leaf.error().withContext("cgroup v1 memory leaf");
        if (!leaf->empty()) {
            out.v1_memory_leaf_ = *leaf;
            std::string limit = std::to_string(*request.memory_bytes);
            if (auto s = writeText(*leaf + "/memory.limit_in_bytes", limit); !s)
                return s.error().withContext("cgroup v1 memory limit");
            // With swap accounting, memory+swap gets the same bound, so swap
            // cannot stretch it.
            if (exists(*leaf + "/memory.memsw.limit_in_bytes"))
                (void)writeText(*leaf + "/memory.memsw.limit_in_bytes", limit);
            out.memory_ = CgroupMechanism::V1;
        }
    }
    if (want_pids && out.pids_ == CgroupMechanism::None) {
        auto leaf = v1Leaf("pids");
        if (!leaf) return leaf.error().withContext("cgroup v1 pids leaf");
        if (!leaf->empty()) {
            out.v1_pids_leaf_ = *leaf;
            if (auto s = writeText(*leaf + "/pids.max", std::to_string(*request.pids)); !s)
                return s.error().withContext("cgroup v1 pids limit");
            out.pids_ = CgroupMechanism::V1;
        }
    }
    return out;
}

SandboxCgroups::~SandboxCgroups() {
    if (!v2_leaf_.empty()) {
        // Everything in it is dead already (the PID namespace is gone);
        // cgroup.kill covers a process that escaped it some other way.
        (void)writeText(v2_leaf_ + "/cgroup.kill", "1");
        v2_leaf_fd_.reset();
        removeLeaf(v2_leaf_);
    }
    removeLeaf(v1_memory_leaf_);
    removeLeaf(v1_pids_leaf_);
}

Status SandboxCgroups::attach(pid_t pid) const {
    for (const std::string* leaf : {&v1_memory_leaf_, &v1_pids_leaf_})
        if (!leaf->empty())
            if (auto s = writeText(*leaf + "/cgroup.procs", std::to_string(pid)); !s) return s;
    return okStatus();
}

uint64_t SandboxCgroups::processCount() const {
    std::string leaf = pids_ == CgroupMechanism::V2   ? v2_leaf_
                       : pids_ == CgroupMechanism::V1 ? v1_pids_leaf_
                                                      : std::string();
    if (leaf.empty()) return 0;
    std::string text = readOr(leaf + "/pids.current");
    return text.empty() ? 0 : std::stoull(text);
}

CgroupEvents SandboxCgroups::events() const {
    CgroupEvents e;
    if (memory_ == CgroupMechanism::V2) {
        e.oom_killed = keyedValue(readOr(v2_leaf_ + "/memory.events"), "oom_kill") > 0;
        std::string peak = readOr(v2_leaf_ + "/memory.peak");
        if (!peak.empty()) e.peak_memory = std::stoull(peak);
    } else if (memory_ == CgroupMechanism::V1) {
        e.oom_killed = keyedValue(readOr(v1_memory_leaf_ + "/memory.oom_control"), "oom_kill") > 0;
        std::string peak = readOr(v1_memory_leaf_ + "/memory.max_usage_in_bytes");
        if (!peak.empty()) e.peak_memory = std::stoull(peak);
    }
    std::string pids_leaf = pids_ == CgroupMechanism::V2   ? v2_leaf_
                            : pids_ == CgroupMechanism::V1 ? v1_pids_leaf_
                                                           : std::string();
    if (!pids_leaf.empty())
        e.pids_limit_hit = keyedValue(readOr(pids_leaf + "/pids.events"), "max") > 0;
    return e;
}

void removeStaleCgroups() {
    std::vector<std::string> parents;
    std::string self = readOr("/proc/self/cgroup");
    if (auto base = findV2Base()) parents.push_back(base->path + "/stockade");
    for (const char* controller : {"memory", "pids"}) {
        auto rel = cgroupPathOf(self, controller);
        if (!rel) continue;
        std::string mount = std::string("/sys/fs/cgroup/") + controller;
        parents.push_back((*rel == "/" ? mount : mount + *rel) + "/stockade");
    }
    for (const std::string& parent : parents) {
        DIR* dir = opendir(parent.c_str());
        if (!dir) continue;
        while (dirent* entry = readdir(dir)) {
            std::string name = entry->d_name;
            auto dash = name.find('-');
            if (dash == std::string::npos || dash == 0) continue;
            pid_t owner =
                static_cast<pid_t>(std::strtol(name.substr(0, dash).c_str(), nullptr, 10));
            if (owner <= 0 || owner == getpid()) continue;
            if (kill(owner, 0) == 0 || errno == EPERM) continue;  // its stockade still runs
            std::string leaf = parent + "/" + name;
            (void)writeText(leaf + "/cgroup.kill", "1");
            rmdir(leaf.c_str());
        }
        closedir(dir);
    }
}

}  // namespace stockade
