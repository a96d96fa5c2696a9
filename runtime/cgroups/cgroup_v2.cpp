#include "runtime/cgroups/cgroup_v2.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

namespace stockade {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kSupervisorPrefix = "stockade-supervisor-";

// Held while stockade changes `base` itself (its subtree_control, who is in
// it), so two stockades sharing one base never undo each other's setup.
// flock on the cgroup's own directory: cgroupfs has no regular files to lock.
class BaseLock {
  public:
    explicit BaseLock(const std::string& base)
        : fd_(open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
        if (fd_) flock(fd_.get(), LOCK_EX);
    }

  private:
    UniqueFd fd_;  // closing it drops the lock
};

std::vector<std::string> subdirectories(const std::string& path) {
    std::vector<std::string> names;
    DIR* dir = opendir(path.c_str());
    if (!dir) return names;
    while (dirent* entry = readdir(dir)) {
        std::string name = entry->d_name;
        if (entry->d_type == DT_DIR && name != "." && name != "..")
            names.push_back(std::move(name));
    }
    closedir(dir);
    return names;
}

std::string controlLine(const std::vector<std::string>& controllers, char sign) {
    std::string line;
    for (const std::string& c : controllers) line += (line.empty() ? "" : " ") + (sign + c);
    return line;
}

std::vector<std::string> notEnabledIn(const std::string& dir,
                                      const std::vector<std::string>& controllers) {
    std::string enabled = readCgroupFileOr(dir + "/cgroup.subtree_control");
    std::vector<std::string> missing;
    for (const std::string& c : controllers)
        if (!hasWord(enabled, c)) missing.push_back(c);
    return missing;
}

// Puts base back as a stockade that had to leave it found it: no stockade
// subtree, no controllers enabled (it held processes, so it had none), and,
// when `self_relocation` is set, the caller back in it. Only when nothing
// else lives below base: another stockade's live relocation dir or leaf, or
// a cgroup stockade did not make, still needs the controllers. Dead
// stockades' relocation dirs are removed on the way. Call with the lock held.
void restoreBase(const std::string& base, const std::string& self_relocation) {
    std::string self_name =
        self_relocation.empty() ? "" : self_relocation.substr(self_relocation.rfind('/') + 1);
    bool in_use = false;
    for (const std::string& name : subdirectories(base)) {
        if (name == "stockade" || name == self_name) continue;
        pid_t owner = ownerOf(name, kSupervisorPrefix);
        if (owner > 0 && !processExists(owner)) {
            std::string dir = base + "/" + name;
            (void)killCgroupV2(dir);
            if (removeCgroupDir(dir)) continue;
        }
        in_use = true;
    }
    std::string subtree = base + "/stockade";
    if (in_use || !subdirectories(subtree).empty()) return;
    if (!removeCgroupDir(subtree)) return;
    std::istringstream enabled(readCgroupFileOr(base + "/cgroup.subtree_control"));
    std::vector<std::string> controllers;
    for (std::string c; enabled >> c;) controllers.push_back(c);
    if (!controllers.empty() &&
        !writeCgroupFile(base + "/cgroup.subtree_control", controlLine(controllers, '-')))
        return;
    if (self_relocation.empty()) return;
    if (writeCgroupFile(base + "/cgroup.procs", "0")) (void)removeCgroupDir(self_relocation);
}

// Dead stockades' leaves under base/stockade, killed and removed; `dead`, a
// pid known to be gone (perhaps still a zombie, which processExists counts
// as alive), is one of them.
void removeDeadLeaves(const std::string& subtree, pid_t dead = -1) {
    for (const std::string& name : subdirectories(subtree)) {
        pid_t owner = ownerOf(name);
        if (owner <= 0 || owner == getpid() || (owner != dead && processExists(owner))) continue;
        std::string leaf = subtree + "/" + name;
        (void)killCgroupV2(leaf);
        (void)removeCgroupDir(leaf);
    }
}

// Forks the guardian (see CgroupV2Subtree) into the caller's cgroup, the
// relocation dir. Returns the pipe's write end and sets `pid`; an invalid
// fd when it could not (then a killed caller leaves its state, as before).
UniqueFd startGuardian(const std::string& base, const std::string& relocation, pid_t& pid) {
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) < 0) return UniqueFd();
    UniqueFd read_end(ends[0]), write_end(ends[1]);
    pid_t caller = getpid();
    pid = fork();
    if (pid < 0) return UniqueFd();
    if (pid > 0) return write_end;
    // The guardian: no terminal, no signal from the caller's process group,
    // no fd of the caller's but its end of the pipe (its copy of the write
    // end first of all: held here, it would keep EOF from ever coming).
    write_end.reset();
    setsid();
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2})
        signal(sig, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    int fd = read_end.release();
    if (dup2(fd, 3) < 0) _exit(1);
    syscall(SYS_close_range, 0U, 2U, 0U);
    syscall(SYS_close_range, 4U, ~0U, 0U);
    char byte;
    ssize_t n;
    while ((n = read(3, &byte, 1)) < 0 && errno == EINTR) {
    }
    if (n == 1) _exit(0);  // dismissed: the caller puts base back itself
    // EOF without the byte: the caller died without releasing (every copy
    // of the write end is gone, and only dismissGuardian closes it alive).
    // Its sandbox went with it (PR_SET_PDEATHSIG); undo its work.
    removeDeadLeaves(base + "/stockade", caller);
    {
        BaseLock lock(base);
        restoreBase(base, relocation);
    }
    _exit(0);
}

}  // namespace

std::string supervisorDirName(pid_t pid) {
    return kSupervisorPrefix + std::to_string(pid);
}

// --- the subtree ---------------------------------------------------------------

Result<CgroupV2Subtree> CgroupV2Subtree::prepare(const CgroupV2Site& site,
                                                 const std::vector<std::string>& controllers) {
    CgroupV2Subtree out;
    out.base_ = site.base;
    out.dir_ = site.base + "/stockade";
    std::vector<std::string> missing = notEnabledIn(site.base, controllers);
    if (!missing.empty()) {
        if (site.holds_caller) {
            std::vector<pid_t> procs = pidsIn(readCgroupFileOr(site.base + "/cgroup.procs"));
            std::string others;
            for (pid_t pid : procs)
                if (pid != getpid()) others += (others.empty() ? "" : " ") + std::to_string(pid);
            if (!others.empty())
                return Error::message(
                    site.base + " holds processes other than stockade (" + others +
                    "), so no controller can be enabled below it (cgroup v2's no internal "
                    "processes rule); run stockade alone in a delegated cgroup");
            if (!procs.empty()) {
                std::string dir = site.base + "/" + supervisorDirName(getpid());
                if (mkdir(dir.c_str(), 0755) < 0 && errno != EEXIST)
                    return Error::fromErrno("mkdir(\"" + dir + "\")");
                if (auto s = writeCgroupFile(dir + "/cgroup.procs", "0"); !s) {
                    (void)removeCgroupDir(dir, 1);
                    return s.error().withContext("move stockade out of " + site.base);
                }
                out.relocation_ = dir;
                out.guardian_ = startGuardian(site.base, dir, out.guardian_pid_);
            }
        }
        BaseLock lock(site.base);
        if (auto s =
                writeCgroupFile(site.base + "/cgroup.subtree_control", controlLine(missing, '+'));
            !s) {
            out.dismissGuardian();
            if (!out.relocation_.empty()) restoreBase(site.base, out.relocation_);
            out.relocation_.clear();
            out.base_.clear();
            return s.error().withContext("enable controllers below " + site.base);
        }
    }
    // From here a failure returns with `out` going, which undoes any relocation.
    if (mkdir(out.dir_.c_str(), 0755) < 0 && errno != EEXIST)
        return Error::fromErrno("mkdir(\"" + out.dir_ + "\")");
    if (std::vector<std::string> below = notEnabledIn(out.dir_, controllers); !below.empty())
        if (auto s = writeCgroupFile(out.dir_ + "/cgroup.subtree_control", controlLine(below, '+'));
            !s)
            return s.error().withContext("enable controllers below " + out.dir_);
    return out;
}

CgroupV2Subtree::CgroupV2Subtree(CgroupV2Subtree&& other) noexcept
    : base_(std::move(other.base_)),
      dir_(std::move(other.dir_)),
      relocation_(std::move(other.relocation_)),
      guardian_(std::move(other.guardian_)),
      guardian_pid_(std::exchange(other.guardian_pid_, -1)) {
    other.base_.clear();
    other.dir_.clear();
    other.relocation_.clear();
}

CgroupV2Subtree& CgroupV2Subtree::operator=(CgroupV2Subtree&& other) noexcept {
    if (this != &other) {
        release();
        base_ = std::exchange(other.base_, {});
        dir_ = std::exchange(other.dir_, {});
        relocation_ = std::exchange(other.relocation_, {});
        guardian_ = std::move(other.guardian_);
        guardian_pid_ = std::exchange(other.guardian_pid_, -1);
    }
    return *this;
}

// One byte, then the pipe closed: the guardian exits without touching
// anything, and is reaped here, so the relocation dir holds only the caller.
void CgroupV2Subtree::dismissGuardian() {
    if (guardian_pid_ < 0) return;
    char byte = 1;
    if (guardian_) (void)!write(guardian_.get(), &byte, 1);
    guardian_.reset();
    while (waitpid(guardian_pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    guardian_pid_ = -1;
}

void CgroupV2Subtree::release() {
    // A base the caller never left is stockade's for good (the hierarchy's
    // root when stockade runs as root): its `stockade` dir stays, like v1's.
    dismissGuardian();
    if (!relocation_.empty()) {
        BaseLock lock(base_);
        restoreBase(base_, relocation_);
    }
    relocation_.clear();
    base_.clear();
    dir_.clear();
}

// --- the leaf --------------------------------------------------------------------

Result<CgroupV2Leaf> CgroupV2Leaf::create(const std::string& subtree_dir, const std::string& name) {
    CgroupV2Leaf leaf;
    std::string path = subtree_dir + "/" + name;
    if (mkdir(path.c_str(), 0755) < 0) return Error::fromErrno("mkdir(\"" + path + "\")");
    leaf.path_ = path;
    leaf.fd_.reset(open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!leaf.fd_) return Error::fromErrno("open(\"" + path + "\", O_PATH)");
    return leaf;
}

CgroupV2Leaf::CgroupV2Leaf(CgroupV2Leaf&& other) noexcept
    : path_(std::exchange(other.path_, {})), fd_(std::move(other.fd_)) {}

CgroupV2Leaf& CgroupV2Leaf::operator=(CgroupV2Leaf&& other) noexcept {
    if (this != &other) {
        (void)remove();
        path_ = std::exchange(other.path_, {});
        fd_ = std::move(other.fd_);
    }
    return *this;
}

Status CgroupV2Leaf::remove() {
    if (path_.empty()) return okStatus();
    fd_.reset();
    std::string path = std::exchange(path_, {});
    // In a run that ended normally the leaf is empty already (the PID
    // namespace died with its init), and one rmdir is all it costs.
    if (rmdir(path.c_str()) == 0 || errno == ENOENT) return okStatus();
    Status killed = killCgroupV2(path);
    Status removed = removeCgroupDir(path);
    return removed ? killed : removed;
}

// --- killing and waiting --------------------------------------------------------

bool cgroupV2Populated(const std::string& dir) {
    return keyedValue(readCgroupFileOr(dir + "/cgroup.events"), "populated") != 0;
}

Status killCgroupV2(const std::string& dir, std::chrono::milliseconds timeout) {
    // cgroup.events is pollable: the kernel raises POLLPRI when "populated"
    // changes (cgroup-v2.rst, "Un-populated Notification").
    UniqueFd events(open((dir + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC));
    if (!events) return errno == ENOENT ? okStatus() : Error::fromErrno("open(cgroup.events)");
    auto populated = [&] {
        char buf[256];
        ssize_t n = pread(events.get(), buf, sizeof(buf) - 1, 0);
        if (n <= 0) return false;
        return keyedValue(std::string(buf, static_cast<size_t>(n)), "populated") != 0;
    };
    if (!populated()) return okStatus();
    bool has_kill = writeCgroupFile(dir + "/cgroup.kill", "1").ok();
    auto deadline = Clock::now() + timeout;
    while (populated()) {
        if (!has_kill)
            for (pid_t pid : pidsIn(readCgroupFileOr(dir + "/cgroup.procs"))) kill(pid, SIGKILL);
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0)
            return Error::message("processes still in " + dir + " " +
                                  std::to_string(timeout.count()) + " ms after cgroup.kill");
        pollfd p{events.get(), POLLPRI, 0};
        poll(&p, 1, static_cast<int>(std::min<long>(left.count(), has_kill ? 100 : 10)));
    }
    return okStatus();
}

// --- limits and accounting ---------------------------------------------------------

Status writeV2Limits(const std::string& leaf, const CgroupRequest& request) {
    if (request.memory_bytes) {
        if (auto s = writeCgroupFile(leaf + "/memory.max", std::to_string(*request.memory_bytes));
            !s)
            return s.error().withContext("cgroup v2 memory limit");
        // Absent where swap is not accounted (no CONFIG_MEMCG_SWAP, or
        // swapaccount=0): then there is no swap to stretch the bound with.
        if (access((leaf + "/memory.swap.max").c_str(), F_OK) == 0)
            if (auto s = writeCgroupFile(leaf + "/memory.swap.max", "0"); !s)
                return s.error().withContext("cgroup v2 swap limit");
    }
    if (request.pids)
        if (auto s = writeCgroupFile(leaf + "/pids.max", std::to_string(*request.pids)); !s)
            return s.error().withContext("cgroup v2 pids limit");
    return okStatus();
}

CgroupEvents readV2Events(const std::string& leaf, bool memory, bool pids) {
    CgroupEvents e;
    if (memory) {
        e.oom_killed = keyedValue(readCgroupFileOr(leaf + "/memory.events"), "oom_kill") > 0;
        e.peak_memory = numberIn(readCgroupFileOr(leaf + "/memory.peak")).value_or(0);
    }
    if (pids) e.pids_limit_hit = keyedValue(readCgroupFileOr(leaf + "/pids.events"), "max") > 0;
    return e;
}

// --- what dead stockades left ------------------------------------------------------

void removeStaleV2(const CgroupV2Site& site) {
    removeDeadLeaves(site.base + "/stockade");
    bool relocated = false;
    for (const std::string& name : subdirectories(site.base)) {
        pid_t owner = ownerOf(name, kSupervisorPrefix);
        if (owner > 0 && owner != getpid() && !processExists(owner)) relocated = true;
    }
    // A dead stockade's relocation dir is proof that base held it and so had
    // no controllers enabled before it came: restoring undoes only its work.
    if (relocated) {
        BaseLock lock(site.base);
        restoreBase(site.base, "");
    }
}

}  // namespace stockade
