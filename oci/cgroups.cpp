#include "oci/cgroups.h"

#include <errno.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "runtime/cgroups/cgroup_fs.h"

namespace stockade::oci {

namespace {

Status makeDirs(const std::string& base, const std::string& relative) {
    std::string path = base;
    for (size_t i = 0; i < relative.size();) {
        size_t end = relative.find('/', i);
        if (end == std::string::npos) end = relative.size();
        if (end > i) {
            path += "/" + relative.substr(i, end - i);
            if (mkdir(path.c_str(), 0755) < 0 && errno != EEXIST)
                return Error::fromErrno("mkdir(\"" + path + "\")");
        }
        i = end + 1;
    }
    return okStatus();
}

bool isCgroup2(const std::string& path) {
    struct statfs fs {};
    return statfs(path.c_str(), &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

}  // namespace

Result<ContainerCgroups> makeContainerCgroups(const CgroupAsk& ask, const std::string& mount_root) {
    if (ask.path.empty() || ask.path[0] != '/' || ask.path.find("/..") != std::string::npos ||
        ask.path.find(':') != std::string::npos)
        return Error::message("linux.cgroupsPath: \"" + ask.path +
                              "\": only an absolute cgroupfs path is supported yet (no \"..\", "
                              "no systemd slice form)");
    ContainerCgroups out;
    // No limit: "max" (v2, and pids in v1), -1 (v1's memory).
    auto write = [&](const std::string& dir, const char* file, int64_t value) -> Status {
        const bool v1_memory = std::string(file) == "memory.limit_in_bytes" ||
                               std::string(file) == "memory.memsw.limit_in_bytes";
        const bool none =
            v1_memory || std::string(file) == "memory.max" || std::string(file) == "memory.swap.max"
                ? value < 0
                : value <= 0;
        return writeCgroupFile(dir + "/" + file,
                               none ? (v1_memory ? "-1" : "max") : std::to_string(value));
    };
    if (isCgroup2(mount_root)) {
        // Each ancestor gives its children the controllers the leaf needs.
        std::string dir = mount_root;
        for (size_t i = 1; i < ask.path.size();) {
            size_t end = ask.path.find('/', i);
            if (end == std::string::npos) end = ask.path.size();
            if (auto s = writeCgroupFile(dir + "/cgroup.subtree_control", "+memory +pids"); !s)
                return s.error().withContext("linux.resources");
            dir += "/" + ask.path.substr(i, end - i);
            if (mkdir(dir.c_str(), 0755) < 0 && errno != EEXIST)
                return Error::fromErrno("mkdir(\"" + dir + "\")");
            i = end + 1;
        }
        out.dirs.push_back(dir);
        if (ask.memory_limit)
            if (auto s = write(dir, "memory.max", *ask.memory_limit); !s) return s.error();
        // v2 limits swap alone: the spec's memory+swap less the memory.
        if (ask.swap_limit)
            if (auto s = write(dir, "memory.swap.max",
                               *ask.swap_limit < 0 ? -1 : *ask.swap_limit - *ask.memory_limit);
                !s)
                return s.error();
        if (ask.pids_limit)
            if (auto s = write(dir, "pids.max", *ask.pids_limit); !s) return s.error();
        return out;
    }
    for (const char* controller : {"memory", "pids"}) {
        const std::string base = mount_root + "/" + controller;
        struct stat st {};
        if (stat(base.c_str(), &st) < 0)
            return Error::message(std::string("linux.resources: no cgroup v1 ") + controller +
                                  " hierarchy at " + base);
        if (auto s = makeDirs(base, ask.path); !s) return s.error();
        out.dirs.push_back(base + ask.path);
    }
    if (ask.memory_limit)
        if (auto s = write(out.dirs[0], "memory.limit_in_bytes", *ask.memory_limit); !s)
            return s.error();
    // After the memory limit: the kernel refuses memsw below it.
    if (ask.swap_limit)
        if (auto s = write(out.dirs[0], "memory.memsw.limit_in_bytes", *ask.swap_limit); !s)
            return s.error();
    if (ask.pids_limit)
        if (auto s = write(out.dirs[1], "pids.max", *ask.pids_limit); !s) return s.error();
    return out;
}

Status joinContainerCgroups(const ContainerCgroups& cgroups, const std::vector<pid_t>& pids) {
    for (const std::string& dir : cgroups.dirs)
        for (pid_t pid : pids)
            if (auto s = writeCgroupFile(dir + "/cgroup.procs", std::to_string(pid)); !s)
                return s.error();
    return okStatus();
}

Status removeContainerCgroups(const std::vector<std::string>& dirs) {
    for (const std::string& dir : dirs)
        if (auto s = removeCgroupDir(dir); !s && s.error().errnum() != ENOENT) return s.error();
    return okStatus();
}

}  // namespace stockade::oci
