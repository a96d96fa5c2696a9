#include "oci/cgroups.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "base/proc_stat.h"
#include "oci/device_cgroup.h"
#include "oci/resource_names.h"
#include "runtime/cgroups/cgroup_fs.h"

namespace stockade::oci {

namespace {

int64_t monotonicMsNow() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return int64_t{now.tv_sec} * 1000 + now.tv_nsec / 1000000;
}

constexpr const char* kCgroupRoot = "/sys/fs/cgroup";
// The v1 hierarchies a container may get a directory in, devices first:
// where its leaf must be the container's own, no other leaf is made (and
// then removed) beside another's.
constexpr const char* kV1Hierarchies[] = {"devices", "memory", "pids",   "freezer", "cpu",
                                          "cpuacct", "blkio",  "cpuset", "hugetlb"};

// The directories one makeContainerCgroups made itself (mkdir returned 0),
// removed again, deepest first, unless it succeeds: never one that was
// there before it (another container's, or a leaf a create that failed
// would otherwise leave to refuse the next).
struct MadeHere {
    std::vector<std::string> dirs;
    bool kept = false;
    // Removes what was made since `mark` (dirs.size() then), deepest first.
    void undoSince(size_t mark) {
        for (size_t i = dirs.size(); i > mark; --i) rmdir(dirs[i - 1].c_str());
        dirs.resize(mark);
    }
    ~MadeHere() {
        if (!kept) undoSince(0);
    }
};

// mkdir, noting a directory it made; EEXIST is no error.
Status makeDir(const std::string& path, MadeHere& made) {
    if (mkdir(path.c_str(), 0755) == 0) {
        made.dirs.push_back(path);
        return okStatus();
    }
    if (errno == EEXIST) return okStatus();
    return Error::fromErrno("mkdir(\"" + path + "\")");
}

Status makeDirs(const std::string& base, const std::string& relative, MadeHere& made) {
    std::string path = base;
    for (size_t i = 0; i < relative.size();) {
        size_t end = relative.find('/', i);
        if (end == std::string::npos) end = relative.size();
        if (end > i) {
            path += "/" + relative.substr(i, end - i);
            if (auto s = makeDir(path, made); !s) return s.error();
        }
        i = end + 1;
    }
    return okStatus();
}

// The v1 cpuset hierarchy's directories for `relative`: a new cpuset
// directory starts with empty cpuset.cpus and cpuset.mems, and the kernel
// refuses a task into it (ENOSPC) until both hold something, so each level
// made empty takes its parent's (runc fills them the same way).
Status makeCpusetDirs(const std::string& base, const std::string& relative, MadeHere& made) {
    std::string parent = base;
    for (size_t i = 0; i < relative.size();) {
        size_t end = relative.find('/', i);
        if (end == std::string::npos) end = relative.size();
        if (end > i) {
            const std::string path = parent + "/" + relative.substr(i, end - i);
            if (auto s = makeDir(path, made); !s) return s.error();
            for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
                std::string own = readCgroupFileOr(path + "/" + file);
                if (own.find_first_not_of(" \n") != std::string::npos) continue;
                auto from = readCgroupFile(parent + "/" + file);
                if (!from) return from.error();
                if (auto s = writeCgroupFile(path + "/" + file, *from); !s) return s.error();
            }
            parent = path;
        }
        i = end + 1;
    }
    return okStatus();
}

bool isCgroup2(const std::string& path) {
    struct statfs fs {};
    return statfs(path.c_str(), &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

bool exists(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0;
}

// The container's directory that holds `controller`: the one v2 directory
// (when the controller is enabled in it), or the v1 directory under that
// controller's hierarchy; "" when it has none.
std::string dirOf(const std::vector<std::string>& dirs, const std::string& controller) {
    if (dirs.size() == 1 && isCgroup2(dirs[0]))
        return hasWord(readCgroupFileOr(dirs[0] + "/cgroup.controllers"), controller) ? dirs[0]
                                                                                      : "";
    const std::string prefix = std::string(kCgroupRoot) + "/" + controller + "/";
    for (const std::string& dir : dirs)
        if (dir.starts_with(prefix)) return dir;
    return "";
}

// Enables `controller` in cgroup.subtree_control of each v2 ancestor of
// `dir` that lacks it, from the top down (a child can enable only what its
// parent gives it), unless `dir` has it already.
Status enableDownTo(const std::string& dir, const std::string& controller) {
    if (hasWord(readCgroupFileOr(dir + "/cgroup.controllers"), controller)) return okStatus();
    std::vector<std::string> parents;
    for (std::string parent = dir.substr(0, dir.rfind('/')); parent.size() > 1 && isCgroup2(parent);
         parent = parent.substr(0, parent.rfind('/')))
        parents.push_back(parent);
    for (auto parent = parents.rbegin(); parent != parents.rend(); ++parent)
        if (auto s = writeCgroupFile(*parent + "/cgroup.subtree_control", "+" + controller); !s)
            return s;
    return okStatus();
}

// A limit as the file wants it: no limit is "max" (v2, and pids in v1) or
// -1 (v1's memory files and cfs quota).
Status writeLimit(const std::string& dir, const std::string& file, int64_t value) {
    const bool v1_minus_one = file == "memory.limit_in_bytes" ||
                              file == "memory.memsw.limit_in_bytes" ||
                              file == "memory.soft_limit_in_bytes" || file == "cpu.cfs_quota_us";
    const bool none = file == "pids.max" ? value <= 0 : value < 0;
    return writeCgroupFile(dir + "/" + file,
                           none ? (v1_minus_one ? "-1" : "max") : std::to_string(value));
}

void sleepMs(long ms) {
    timespec ts{0, ms * 1000000L};
    nanosleep(&ts, nullptr);
}

// How long pause and resume wait for the kernel to report the whole cgroup
// frozen or thawed: a task in an uninterruptible sleep holds FREEZING.
constexpr int kFreezeWaitMs = 5000;

Status freezeV1(const std::string& dir, bool frozen) {
    const std::string file = dir + "/freezer.state";
    const char* want = frozen ? "FROZEN" : "THAWED";
    std::string seen;
    for (int waited = 0; waited <= kFreezeWaitMs; ++waited) {
        // Written again each round: a task forked while the cgroup was
        // FREEZING may otherwise escape being frozen (runc does the same).
        if (auto s = writeCgroupFile(file, want); !s) return s.error();
        auto now = readCgroupFile(file);
        if (!now) return now.error();
        std::istringstream(*now) >> seen;
        if (seen == want) return okStatus();
        sleepMs(1);
    }
    if (frozen) (void)writeCgroupFile(file, "THAWED");
    return Error::message(file + ": still " + seen + " after " + std::to_string(kFreezeWaitMs) +
                          " ms, not " + want);
}

Status freezeV2(const std::string& dir, bool frozen) {
    if (auto s = writeCgroupFile(dir + "/cgroup.freeze", frozen ? "1" : "0"); !s) return s.error();
    // cgroup.freeze is the wish; cgroup.events' "frozen" is the kernel's
    // word that every task of the subtree has stopped (cgroup-v2.rst).
    const std::string events = dir + "/cgroup.events";
    for (int waited = 0; waited <= kFreezeWaitMs; ++waited) {
        auto text = readCgroupFile(events);
        if (!text) return text.error();
        std::istringstream in(*text);
        std::string key, value;
        while (in >> key >> value)
            if (key == "frozen" && value == (frozen ? "1" : "0")) return okStatus();
        sleepMs(1);
    }
    if (frozen) (void)writeCgroupFile(dir + "/cgroup.freeze", "0");
    return Error::message(events + ": not " + (frozen ? "frozen" : "thawed") + " after " +
                          std::to_string(kFreezeWaitMs) + " ms");
}

}  // namespace

namespace {

// systemd writes a slice's ancestry into its name with '-': a-b-c.slice is
// /a.slice/a-b.slice/a-b-c.slice, and -.slice the root (runc's ExpandSlice).
Result<std::string> expandSlice(const std::string& slice) {
    const std::string suffix = ".slice";
    if (slice.size() <= suffix.size() || !slice.ends_with(suffix) ||
        slice.find('/') != std::string::npos)
        return Error::message("invalid slice name: " + slice);
    const std::string name = slice.substr(0, slice.size() - suffix.size());
    if (name == "-") return std::string();
    std::string path, prefix;
    for (size_t i = 0; i <= name.size();) {
        size_t end = name.find('-', i);
        if (end == std::string::npos) end = name.size();
        if (end == i) return Error::message("invalid slice name: " + slice);
        const std::string component = name.substr(i, end - i);
        path += "/" + prefix + component + suffix;
        prefix += component + "-";
        i = end + 1;
    }
    return path;
}

bool hasControlOrSlash(const std::string& s) {
    for (char c : s)
        if (c == '/' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
    return false;
}

// Whether the cgroup at `dir` is frozen (v1's freezer.state not THAWED,
// v2's cgroup.events "frozen 1", which a child of a frozen parent reads
// too while its own cgroup.freeze is 0): a process moved in would stop
// there, and create with it, until someone thaws it.
bool frozen(const std::string& dir, bool v2) {
    if (v2) {
        std::istringstream events(readCgroupFileOr(dir + "/cgroup.events"));
        for (std::string line; std::getline(events, line);)
            if (line == "frozen 1") return true;
        return false;
    }
    const std::string state = readCgroupFileOr(dir + "/freezer.state");
    return !state.empty() && !state.starts_with("THAWED");
}

constexpr const char* kDefaultParent = "/stockade-oci";

// Whether `leaf` was made by this create (in `made`).
bool madeHere(const MadeHere& made, const std::string& leaf) {
    return std::find(made.dirs.begin(), made.dirs.end(), leaf) != made.dirs.end();
}

Error existsAlready(const CgroupAsk& ask, const std::string& leaf) {
    return Error::message("linux.cgroupsPath: \"" + ask.path + "\": " + leaf + " exists already; " +
                          ask.must_be_new_why + ", so stockade makes that cgroup itself");
}

Error heldByAnother(const std::string& dir) {
    return Error::message("linux.cgroupsPath: " + dir +
                          " exists already: a container that may remount (CAP_SYS_ADMIN) needs "
                          "device rules in a cgroup of its own, and writing them there could "
                          "replace another container's");
}

}  // namespace

bool hasDotDotComponent(const std::string& path) {
    for (size_t i = 0; i <= path.size();) {
        size_t end = path.find('/', i);
        if (end == std::string::npos) end = path.size();
        if (end - i == 2 && path.compare(i, 2, "..") == 0) return true;
        i = end + 1;
    }
    return false;
}

std::string rootTag(const std::string& root_dir) {
    uint64_t hash = 14695981039346656037ull;
    for (unsigned char c : root_dir) {
        hash ^= c;
        hash *= 1099511628211ull;
    }
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(hash));
    return out;
}

Result<std::string> cgroupfsPath(const std::string& cgroups_path, const std::string& id,
                                 bool systemd, const std::string& root_dir) {
    const std::string field = "linux.cgroupsPath: \"" + cgroups_path + "\"";
    if (!systemd) {
        if (cgroups_path.empty()) return kDefaultParent + ("/" + id) + "-" + rootTag(root_dir);
        if (std::count(cgroups_path.begin(), cgroups_path.end(), ':') == 2)
            return Error::message(field +
                                  ": systemd's slice:prefix:name form needs --systemd-cgroup "
                                  "(containerd's SystemdCgroup = true)");
        if (cgroups_path[0] != '/' || hasDotDotComponent(cgroups_path) ||
            cgroups_path.find(':') != std::string::npos)
            return Error::message(field +
                                  ": only an absolute cgroupfs path is supported (no "
                                  "\"..\", no ':')");
        // Every component a name of its own: "/", "/." or "/a/./b" would
        // name the root or another path than written.
        // Written back without empty components ("/a/", "//a"): the
        // leaf is the last name, whichever way the path was spelt.
        std::string clean;
        for (size_t i = 1; i <= cgroups_path.size();) {
            size_t end = cgroups_path.find('/', i);
            if (end == std::string::npos) end = cgroups_path.size();
            const std::string part = cgroups_path.substr(i, end - i);
            if (part == ".")
                return Error::message(field + ": a \".\" component names another path");
            if (!part.empty()) clean += "/" + part;
            i = end + 1;
        }
        if (clean.empty()) return Error::message(field + ": names the root cgroup");
        // The default cgroups are each one container's alone: no path given
        // may name one (it would join, and set limits on, another's).
        if (clean == kDefaultParent || clean.starts_with(std::string(kDefaultParent) + "/"))
            return Error::message(field + ": " + kDefaultParent +
                                  " holds stockade's default cgroups, one container's each, "
                                  "for containers given no cgroupsPath: name another path");
        return clean;
    }
    // The default unit names the state root too, as the cgroupfs default.
    std::string slice = "system.slice", prefix = "stockade", name = id + "-" + rootTag(root_dir);
    if (!cgroups_path.empty()) {
        const size_t first = cgroups_path.find(':');
        const size_t second =
            first == std::string::npos ? first : cgroups_path.find(':', first + 1);
        if (second == std::string::npos || cgroups_path.find(':', second + 1) != std::string::npos)
            return Error::message(
                "expected cgroupsPath to be of format \"slice:prefix:name\" for systemd "
                "cgroups, got \"" +
                cgroups_path + "\" instead");
        slice = cgroups_path.substr(0, first);
        prefix = cgroups_path.substr(first + 1, second - first - 1);
        name = cgroups_path.substr(second + 1);
        if (slice.empty()) slice = "system.slice";
    }
    if (name.empty() || hasControlOrSlash(prefix) || hasControlOrSlash(name) || name == "." ||
        name == "..")
        return Error::message(field +
                              ": the unit's prefix and name may hold no '/' and the "
                              "name may not be empty");
    auto parent = expandSlice(slice);
    if (!parent) return parent.error().withContext(field);
    const std::string unit = name.ends_with(".slice") ? name : prefix + "-" + name + ".scope";
    return *parent + "/" + unit;
}

namespace {

// makeContainerCgroups' work; `refused` set where the error refuses what is
// there (a leaf that exists already, another's, a frozen one) rather than
// a failure to make or write one.
Result<ContainerCgroups> makeOrRefuse(const CgroupAsk& ask, const std::string& mount_root,
                                      bool& refused) {
    auto refuse = [&refused](Error e) {
        refused = true;
        return e;
    };
    // Checked again (cgroupfsPath made it): these files are the host's.
    if (ask.path.empty() || ask.path[0] != '/' || hasDotDotComponent(ask.path))
        return Error::message("linux.cgroupsPath: \"" + ask.path +
                              "\": only an absolute cgroupfs path is supported (no \"..\")");
    // A cgroup that is killed whole (a container in a joined pid
    // namespace) is the container's alone: one that exists already may
    // hold anything (another container's processes, a service's).
    if (ask.must_be_new) {
        std::vector<std::string> leaves;
        if (isCgroup2(mount_root))
            leaves.push_back(mount_root + ask.path);
        else
            for (const char* controller : kV1Hierarchies)
                leaves.push_back(mount_root + "/" + controller + ask.path);
        for (const std::string& leaf : leaves)
            if (exists(leaf)) return refuse(existsAlready(ask, leaf));
    }
    ContainerCgroups out;
    MadeHere made;
    // Where device rules go: a leaf this create made itself, never one that
    // was there (another container's, whose rules these would replace).
    bool own_devices_leaf = false;
    const bool wants_cpu = ask.resources.wants_cpu();
    const bool wants_cpuset = ask.resources.wants_cpuset();
    if (isCgroup2(mount_root)) {
        // Each ancestor gives its children the controllers the leaf needs:
        // memory and pids always, cpu where the tree has it (required only
        // when the config asks for a cpu limit), so that update can set one.
        std::string dir = mount_root;
        for (size_t i = 1; i < ask.path.size();) {
            size_t end = ask.path.find('/', i);
            if (end == std::string::npos) end = ask.path.size();
            if (auto s = writeCgroupFile(dir + "/cgroup.subtree_control", "+memory +pids"); !s)
                return s.error().withContext("linux.resources");
            if (wants_cpu || hasWord(readCgroupFileOr(dir + "/cgroup.controllers"), "cpu"))
                if (auto s = writeCgroupFile(dir + "/cgroup.subtree_control", "+cpu");
                    !s && wants_cpu)
                    return s.error().withContext("linux.resources.cpu");
            // cpuset only when asked: its directories cost a fill each on v1,
            // and an empty v2 cpuset.cpus already means the parent's.
            if (wants_cpuset)
                if (auto s = writeCgroupFile(dir + "/cgroup.subtree_control", "+cpuset"); !s)
                    return s.error().withContext(ask.resources.cpuset_cpus
                                                     ? "linux.resources.cpu.cpus"
                                                     : "linux.resources.cpu.mems");
            dir += "/" + ask.path.substr(i, end - i);
            const size_t before = made.dirs.size();
            if (auto s = makeDir(dir, made); !s) return s.error();
            own_devices_leaf = made.dirs.size() > before;  // the last one's counts
            i = end + 1;
        }
        if (ask.must_be_new && !own_devices_leaf) return refuse(existsAlready(ask, dir));
        if (ask.devices_required && !own_devices_leaf) return refuse(heldByAnother(dir));
        out.dirs.push_back(dir);
    } else {
        // memory and pids hold create's limits and are required; freezer
        // (pause), cpu (a cpu limit, now or by update), and cpuacct and
        // blkio (the usage a shim, podman stats or events reads from the
        // container's own cgroup, not the host's root) where mounted;
        // cpuset only when asked, and then required.
        // Each hierarchy taken (its directory's device and inode), so that
        // two names of one (cpu and cpuacct are often mounted together as
        // cpu,cpuacct, each name a link to it) give one directory, made by
        // the first name, where a second mkdir would find it and refuse it.
        std::vector<std::pair<dev_t, ino_t>> taken;
        for (const char* controller : kV1Hierarchies) {
            const std::string base = mount_root + "/" + controller;
            const std::string name = controller;
            // cpuset and hugetlb where mounted, as runc makes them, so that
            // update can set them later; required only when asked.
            if (name == "devices" && !ask.devices) continue;
            const bool wants_hugetlb = !ask.resources.hugepage_limits.empty();
            const bool required =
                name == "memory" || name == "pids" || (name == "cpuset" && wants_cpuset) ||
                (name == "cpu" && wants_cpu) || (name == "devices" && ask.devices_required) ||
                (name == "hugetlb" && wants_hugetlb);
            if (!exists(base)) {
                if (!required) continue;
                return Error::message(std::string(name == "hugetlb"
                                                      ? "linux.resources.hugepageLimits"
                                                      : "linux.resources") +
                                      ": no cgroup v1 " + controller + " hierarchy at " + base);
            }
            struct stat hierarchy_st {};
            if (stat(base.c_str(), &hierarchy_st) < 0)
                return Error::fromErrno("stat(\"" + base + "\")");
            const std::pair<dev_t, ino_t> hierarchy{hierarchy_st.st_dev, hierarchy_st.st_ino};
            if (std::find(taken.begin(), taken.end(), hierarchy) != taken.end()) {
                out.dirs.push_back(base + ask.path);  // the same directory, by this name
                continue;
            }
            // cpuacct and blkio only count (what stats read): where one is
            // no cgroup hierarchy (a bare directory of the tmpfs) or takes no
            // directory, the container goes without it.
            const bool counts_only = name == "cpuacct" || name == "blkio";
            if (counts_only) {
                struct statfs fs {};
                if (statfs(base.c_str(), &fs) < 0 || fs.f_type != CGROUP_SUPER_MAGIC) continue;
            }
            if (name == "cpuset") {
                const size_t before = made.dirs.size();
                if (auto s = makeCpusetDirs(base, ask.path, made); !s) {
                    if (!wants_cpuset) {  // none asked: the container goes without
                        made.undoSince(before);
                        continue;
                    }
                    return s.error().withContext(ask.resources.cpuset_cpus
                                                     ? "linux.resources.cpu.cpus"
                                                     : "linux.resources.cpu.mems");
                }
                if (ask.must_be_new && !madeHere(made, base + ask.path))
                    return refuse(existsAlready(ask, base + ask.path));
                out.dirs.push_back(base + ask.path);
                taken.push_back(hierarchy);
                continue;
            }
            if (name == "devices") {
                // Joined only where made here: a leaf that exists already
                // may be another container's, whose rules these would
                // replace (one that may remount is refused instead).
                const size_t slash = ask.path.rfind('/');
                if (auto s = makeDirs(base, ask.path.substr(0, slash), made); !s) return s.error();
                const std::string leaf = base + ask.path;
                const size_t before = made.dirs.size();
                if (auto s = makeDir(leaf, made); !s) return s.error();
                own_devices_leaf = made.dirs.size() > before;
                if (!own_devices_leaf && ask.must_be_new) return refuse(existsAlready(ask, leaf));
                if (!own_devices_leaf) {
                    if (ask.devices_required) return refuse(heldByAnother(leaf));
                    continue;
                }
                out.dirs.push_back(leaf);
                taken.push_back(hierarchy);
                continue;
            }
            // A hierarchy that holds cpuset too (mounted together with it)
            // gets its directories filled as cpuset's are.
            const size_t before = made.dirs.size();
            if (auto s = exists(base + "/cpuset.cpus") ? makeCpusetDirs(base, ask.path, made)
                                                       : makeDirs(base, ask.path, made);
                !s) {
                if (!counts_only) return s.error();
                made.undoSince(before);
                continue;
            }
            if (ask.must_be_new && !madeHere(made, base + ask.path))
                return refuse(existsAlready(ask, base + ask.path));
            out.dirs.push_back(base + ask.path);
            taken.push_back(hierarchy);
        }
    }
    // A frozen cgroup (one that was there, or under a frozen parent) would
    // stop init on its move in, and create with it: refused, as runc does.
    for (const std::string& dir : out.dirs)
        if (frozen(dir, isCgroup2(mount_root)))  // v1: only the freezer's has the file
            return refuse(Error::message("linux.cgroupsPath: \"" + ask.path + "\": " + dir +
                                         " is frozen; thaw it, or give the container another"));
    if (auto s = applyResources(out.dirs, ask.resources); !s) return s.error();
    if (ask.devices && own_devices_leaf) {
        Status held = okStatus();
        if (isCgroup2(mount_root)) {
            held = attachDeviceProgram(out.dirs.front(), ask.device_rules);
            out.devices_held = static_cast<bool>(held);
            // A kernel without CONFIG_CGROUP_BPF: none where none is
            // required; any other refusal is an error.
            if (!held && !ask.devices_required && !deviceProgramsSupported()) held = okStatus();
        } else if (std::string dir = dirOf(out.dirs, "devices"); !dir.empty()) {
            const std::string beyond = deviceRulesBeyondV1(ask.device_rules);
            if (!beyond.empty() && ask.devices_required) {
                held = Error::message(
                    "linux.resources.devices: cgroup v1's devices files cannot hold these rules "
                    "(v1 takes a deny away only from an allow of the same device): they would "
                    "let the container open " +
                    beyond +
                    ", which the rules refuse, and a container that may remount (CAP_SYS_ADMIN) "
                    "must have them held");
            } else {
                held = applyDeviceRulesV1(dir, ask.device_rules);
                out.devices_held = held && beyond.empty();
            }
        }
        if (!held) return held.error();
    }
    for (const std::string& dir : out.dirs)
        if (madeHere(made, dir)) out.made_here.push_back(dir);
    made.kept = true;
    return out;
}

}  // namespace

bool unifiedCgroups(const std::string& mount_root) {
    return isCgroup2(mount_root);
}

Result<ContainerCgroups> makeContainerCgroups(const CgroupAsk& ask, const std::string& mount_root) {
    bool refused = false;
    auto made = makeOrRefuse(ask, mount_root, refused);
    if (made || refused || !ask.best_effort) return made;
    ContainerCgroups none;
    none.unavailable = made.error().describe();
    return none;
}

Status applyResources(const std::vector<std::string>& dirs, const Resources& r) {
    if (dirs.empty() && r.any())
        return Error::message(
            "linux.resources: the container has no cgroup of its own (stockade makes one only "
            "as root)");
    const bool v2 = dirs.size() == 1 && isCgroup2(dirs[0]);
    auto need = [&](const char* controller, const char* field) -> Result<std::string> {
        std::string dir = dirOf(dirs, controller);
        if (dir.empty())
            return Error::message(std::string(field) + ": the container's cgroup has no " +
                                  controller + " controller" +
                                  (v2 ? " (not in " + dirs[0] + "/cgroup.controllers)" : ""));
        return dir;
    };
    // v2: the cpuset and hugetlb controllers, and those unified's files
    // belong to, are enabled down to the container's directory when first
    // asked (create enables only memory, pids and cpu); v1's directories
    // are made by create wherever the hierarchy is mounted.
    if (v2) {
        if (r.wants_cpuset())
            if (auto s = enableDownTo(dirs[0], "cpuset"); !s)
                return s.error().withContext(r.cpuset_cpus ? "linux.resources.cpu.cpus"
                                                           : "linux.resources.cpu.mems");
        if (!r.hugepage_limits.empty())
            if (auto s = enableDownTo(dirs[0], "hugetlb"); !s)
                return s.error().withContext("linux.resources.hugepageLimits");
        for (const auto& [key, value] : r.unified)
            if (std::string controller = unifiedKeyController(key); !controller.empty())
                if (auto s = enableDownTo(dirs[0], controller); !s)
                    return s.error().withContext("linux.resources.unified (" + key + ")");
    } else if (!r.unified.empty()) {
        // runc refuses them on v1 too: there is no file of those names.
        return Error::message(
            "linux.resources.unified: cgroup v2 files, and the container's "
            "cgroups are v1 (" +
            dirs[0] + ")");
    }
    // A container with no directory for a cpuset (a v1 host without the
    // hierarchy): said before any other field is written.
    Result<std::string> cpuset_dir = std::string();
    if (r.wants_cpuset()) {
        cpuset_dir =
            need("cpuset", r.cpuset_cpus ? "linux.resources.cpu.cpus" : "linux.resources.cpu.mems");
        if (!cpuset_dir) return cpuset_dir.error();
    }
    if (r.memory_limit || r.swap_limit) {
        auto dir = need("memory", "linux.resources.memory");
        if (!dir) return dir.error();
        if (v2) {
            if (r.memory_limit)
                if (auto s = writeLimit(*dir, "memory.max", *r.memory_limit); !s) return s.error();
            // v2 limits swap alone: the spec's memory+swap less the memory
            // (the reader refuses a swap limit without a memory one).
            if (r.swap_limit)
                if (auto s = writeLimit(*dir, "memory.swap.max",
                                        *r.swap_limit < 0 ? -1 : *r.swap_limit - *r.memory_limit);
                    !s)
                    return s.error().withContext("linux.resources.memory.swap");
        } else {
            // The kernel keeps memory <= memsw: raising both, memsw goes
            // first; lowering both, memory does.
            const bool memsw_first =
                r.swap_limit && r.memory_limit &&
                (*r.swap_limit < 0 ||
                 static_cast<uint64_t>(*r.swap_limit) >
                     numberIn(readCgroupFileOr(*dir + "/memory.memsw.limit_in_bytes"))
                         .value_or(UINT64_MAX));
            auto memsw = [&]() -> Status {
                if (!r.swap_limit) return okStatus();
                if (auto s = writeLimit(*dir, "memory.memsw.limit_in_bytes", *r.swap_limit); !s)
                    return s.error().withContext("linux.resources.memory.swap");
                return okStatus();
            };
            if (memsw_first)
                if (auto s = memsw(); !s) return s;
            if (r.memory_limit)
                if (auto s = writeLimit(*dir, "memory.limit_in_bytes", *r.memory_limit); !s)
                    return s.error().withContext("linux.resources.memory.limit");
            if (!memsw_first)
                if (auto s = memsw(); !s) return s;
        }
    }
    if (r.wants_memory_tuning()) {
        auto dir = need("memory", r.memory_reservation ? "linux.resources.memory.reservation"
                                  : r.swappiness       ? "linux.resources.memory.swappiness"
                                                       : "linux.resources.memory.disableOOMKiller");
        if (!dir) return dir.error();
        // v2 keeps swappiness for the whole host and has no switch for the
        // OOM killer: refused there rather than dropped.
        if (v2 && (r.swappiness || r.disable_oom_killer))
            return Error::message(std::string(r.swappiness
                                                  ? "linux.resources.memory.swappiness"
                                                  : "linux.resources.memory.disableOOMKiller") +
                                  ": cgroup v2 has no such file for a cgroup (" + dirs[0] + ")");
        if (r.memory_reservation)
            if (auto s = writeLimit(*dir, v2 ? "memory.low" : "memory.soft_limit_in_bytes",
                                    *r.memory_reservation);
                !s)
                return s.error().withContext("linux.resources.memory.reservation");
        if (r.swappiness)
            if (auto s =
                    writeCgroupFile(*dir + "/memory.swappiness", std::to_string(*r.swappiness));
                !s)
                return s.error().withContext("linux.resources.memory.swappiness");
        if (r.disable_oom_killer)
            if (auto s = writeCgroupFile(*dir + "/memory.oom_control", "1"); !s)
                return s.error().withContext("linux.resources.memory.disableOOMKiller");
    }
    if (r.pids_limit) {
        auto dir = need("pids", "linux.resources.pids.limit");
        if (!dir) return dir.error();
        if (auto s = writeLimit(*dir, "pids.max", *r.pids_limit); !s) return s.error();
    }
    if (r.cpu_shares) {
        auto dir = need("cpu", "linux.resources.cpu.shares");
        if (!dir) return dir.error();
        // v2's weight (1..10000) from v1's shares (2..262144), linearly,
        // as runc and crun convert it.
        const uint64_t value = v2 ? 1 + ((*r.cpu_shares - 2) * 9999) / 262142 : *r.cpu_shares;
        if (auto s =
                writeCgroupFile(*dir + (v2 ? "/cpu.weight" : "/cpu.shares"), std::to_string(value));
            !s)
            return s.error().withContext("linux.resources.cpu.shares");
    }
    if (r.cpu_quota || r.cpu_period) {
        auto dir =
            need("cpu", r.cpu_quota ? "linux.resources.cpu.quota" : "linux.resources.cpu.period");
        if (!dir) return dir.error();
        if (v2) {
            // cpu.max is "QUOTA PERIOD": what is not given stays as it is.
            std::istringstream now(readCgroupFileOr(*dir + "/cpu.max"));
            std::string quota = "max", period = "100000";
            now >> quota >> period;
            if (r.cpu_quota) quota = *r.cpu_quota < 0 ? "max" : std::to_string(*r.cpu_quota);
            if (r.cpu_period) period = std::to_string(*r.cpu_period);
            if (auto s = writeCgroupFile(*dir + "/cpu.max", quota + " " + period); !s)
                return s.error().withContext("linux.resources.cpu");
        } else {
            // The period first: the kernel judges a quota against it.
            if (r.cpu_period)
                if (auto s =
                        writeCgroupFile(*dir + "/cpu.cfs_period_us", std::to_string(*r.cpu_period));
                    !s)
                    return s.error().withContext("linux.resources.cpu.period");
            if (r.cpu_quota)
                if (auto s = writeLimit(*dir, "cpu.cfs_quota_us", *r.cpu_quota); !s)
                    return s.error().withContext("linux.resources.cpu.quota");
        }
    }
    if (!r.hugepage_limits.empty()) {
        auto dir = need("hugetlb", "linux.resources.hugepageLimits");
        if (!dir) return dir.error();
        // Each size the reader judged; its reservation limit too where the
        // kernel has one (5.7), as runc writes both, so that a reservation
        // made now and faulted later is held as well.
        for (const auto& [size, limit] : r.hugepage_limits) {
            const std::string base = *dir + "/hugetlb." + size;
            const std::string value = std::to_string(limit);
            if (auto s = writeCgroupFile(base + (v2 ? ".max" : ".limit_in_bytes"), value); !s)
                return s.error().withContext("linux.resources.hugepageLimits (" + size + ")");
            const std::string rsvd = base + (v2 ? ".rsvd.max" : ".rsvd.limit_in_bytes");
            if (exists(rsvd))
                if (auto s = writeCgroupFile(rsvd, value); !s)
                    return s.error().withContext("linux.resources.hugepageLimits (" + size + ")");
        }
    }
    if (r.wants_cpuset()) {
        // The same files on v1 and v2; each a list the reader judged.
        if (r.cpuset_cpus)
            if (auto s = writeCgroupFile(*cpuset_dir + "/cpuset.cpus", *r.cpuset_cpus); !s)
                return s.error().withContext("linux.resources.cpu.cpus");
        if (r.cpuset_mems)
            if (auto s = writeCgroupFile(*cpuset_dir + "/cpuset.mems", *r.cpuset_mems); !s)
                return s.error().withContext("linux.resources.cpu.mems");
    }
    // Last, as runc writes them: a unified file may refine what a field
    // above set (memory.high below memory.max).
    for (const auto& [key, value] : r.unified) {
        const std::string controller = unifiedKeyController(key);
        if (!controller.empty() && dirOf(dirs, controller).empty())
            return Error::message("linux.resources.unified (" + key +
                                  "): the container's cgroup has no " + controller +
                                  " controller (not in " + dirs[0] + "/cgroup.controllers)");
        if (auto s = writeCgroupFile(dirs[0] + "/" + key, value); !s)
            return s.error().withContext("linux.resources.unified (" + key + ")");
    }
    return okStatus();
}

Status joinContainerCgroups(const ContainerCgroups& cgroups, const std::vector<pid_t>& pids) {
    for (const std::string& dir : cgroups.dirs)
        for (pid_t pid : pids)
            if (auto s = writeCgroupFile(dir + "/cgroup.procs", std::to_string(pid)); !s)
                return s.error();
    return okStatus();
}

Status freezeContainerCgroups(const std::vector<std::string>& dirs, bool frozen) {
    if (dirs.empty())
        return Error::message(
            "the container has no cgroup to freeze (stockade makes one only as root, and "
            "create said where it could not)");
    if (dirs.size() == 1 && isCgroup2(dirs[0])) return freezeV2(dirs[0], frozen);
    const std::string dir = dirOf(dirs, "freezer");
    if (dir.empty())
        return Error::message(std::string("the container has no freezer cgroup (no cgroup v1 "
                                          "freezer hierarchy at ") +
                              kCgroupRoot + "/freezer when it was created)");
    return freezeV1(dir, frozen);
}

bool containerCgroupsFrozen(const std::vector<std::string>& dirs) {
    if (dirs.empty()) return false;
    if (dirs.size() == 1 && isCgroup2(dirs[0]))
        return keyedValue(readCgroupFileOr(dirs[0] + "/cgroup.events"), "frozen") == 1;
    const std::string dir = dirOf(dirs, "freezer");
    if (dir.empty()) return false;
    // FREEZING counts: the container is on its way to paused, not running.
    std::string state;
    std::istringstream(readCgroupFileOr(dir + "/freezer.state")) >> state;
    return state == "FROZEN" || state == "FREEZING";
}

CgroupCounters readCgroupCounters(const std::vector<std::string>& dirs) {
    CgroupCounters out;
    auto add = [](std::optional<uint64_t>& to, const Result<std::string>& text, const char* key) {
        if (text) to = to.value_or(0) + keyedValue(*text, key);
    };
    for (const std::string& dir : dirs) {
        add(out.oom_kills, readCgroupFile(dir + "/memory.events"), "oom_kill");
        add(out.oom_kills, readCgroupFile(dir + "/memory.oom_control"), "oom_kill");
        add(out.pids_max, readCgroupFile(dir + "/pids.events"), "max");
    }
    return out;
}

std::vector<pid_t> processesInContainerCgroups(const std::vector<std::string>& dirs) {
    if (dirs.empty()) return {};
    std::string dir = dirOf(dirs, "freezer");
    if (dir.empty()) dir = dirs[0];
    return pidsIn(readCgroupFileOr(dir + "/cgroup.procs"));
}

Status killContainerCgroups(const std::vector<std::string>& dirs) {
    if (dirs.empty()) return okStatus();
    const bool v2 = dirs.size() == 1 && isCgroup2(dirs[0]);
    const std::string freezer = v2 ? "" : dirOf(dirs, "freezer");
    const std::string listed = (v2 || freezer.empty() ? dirs[0] : freezer) + "/cgroup.procs";
    // cgroup.kill (Linux 5.14) kills the whole subtree at once, forks in
    // flight included; older v2 kernels take the rounds below.
    // Written every round: a process an `exec` moved in after the first
    // write dies with the next.
    std::vector<pid_t> left;
    const int64_t deadline = monotonicMsNow() + kFreezeWaitMs;
    while (monotonicMsNow() <= deadline) {
        auto text = readCgroupFile(listed);
        if (!text && text.error().errnum() == ENOENT) return okStatus();
        if (!text) return text.error();
        left = pidsIn(*text);
        if (left.empty()) return okStatus();
        const bool killed_at_once = v2 && writeCgroupFile(dirs[0] + "/cgroup.kill", "1").ok();
        if (!killed_at_once) {
            const bool frozen = !freezer.empty() && freezeV1(freezer, true).ok();
            for (pid_t pid : pidsIn(readCgroupFileOr(listed))) kill(pid, SIGKILL);
            if (frozen) (void)freezeV1(freezer, false);
        }
        sleepMs(1);
    }
    return Error::message(listed + ": " + std::to_string(left.size()) +
                          " processes still there after " + std::to_string(kFreezeWaitMs) +
                          " ms of SIGKILL");
}

Status killChildrenInContainerCgroups(const std::vector<std::string>& dirs, pid_t parent) {
    if (auto s = freezeContainerCgroups(dirs, true); !s) return s.error();
    for (pid_t pid : processesInContainerCgroups(dirs))
        if (auto stat = ProcStat::read(pid); pid != parent && stat && stat->parent() == parent)
            kill(pid, SIGKILL);
    return freezeContainerCgroups(dirs, false);
}

bool canKillWhole(const std::vector<std::string>& dirs) {
    if (dirs.empty()) return false;
    if (dirs.size() == 1 && isCgroup2(dirs[0])) return exists(dirs[0] + "/cgroup.kill");
    return !dirOf(dirs, "freezer").empty();
}

Status removeContainerCgroups(const std::vector<std::string>& dirs, int busy_ms) {
    // Each tried: one that cannot go (a process of another's in it) keeps
    // none of the others.
    Status first = okStatus();
    for (const std::string& dir : dirs)
        if (auto s = removeCgroupDir(dir, busy_ms); !s && s.error().errnum() != ENOENT && first)
            first = s.error();
    return first;
}

}  // namespace stockade::oci
