#include "namespaces/user.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "namespaces/syscalls.h"
#include "namespaces/user_in_child.h"

namespace stockade::ns {

namespace {

Status writeProcFile(pid_t pid, const char* name, const std::string& content) {
    std::string path = "/proc/" + std::to_string(pid) + "/" + name;
    UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return Error::fromErrno("open(\"" + path + "\")");
    if (write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size()))
        return Error::fromErrno("write(\"" + path + "\", \"" +
                                content.substr(0, content.size() - 1) + "\")");
    return okStatus();
}

// The ids 0..count-1 of the caller's own namespace, each to itself, a line
// for each range of its `/proc/self/<file>`, in order (IdMapping::
// callers_ranges); empty where it cannot be read.
std::string callersRangeLines(const char* file, uint32_t count) {
    std::string out;
    for (const auto& [start, length] : ownMapRanges(file)) {
        if (start >= count) break;
        const uint64_t take = std::min<uint64_t>(length, count - start);
        out +=
            std::to_string(start) + " " + std::to_string(start) + " " + std::to_string(take) + "\n";
    }
    return out;
}

}  // namespace

std::vector<std::pair<uint64_t, uint64_t>> ownMapRanges(const char* file) {
    std::ifstream map(std::string("/proc/self/") + file);
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    uint64_t inside = 0, outside = 0, n = 0;
    while (map >> inside >> outside >> n) ranges.emplace_back(inside, n);
    std::sort(ranges.begin(), ranges.end());
    return ranges;
}

namespace {

std::string mapLine(unsigned inside, unsigned host, uint32_t count) {
    if (count <= 1) return std::to_string(inside) + " " + std::to_string(host) + " 1\n";
    return "0 " + std::to_string(host - inside) + " " + std::to_string(count) + "\n";
}

// "INSIDE HOST COUNT" triples for newuidmap/newgidmap: the block's ids below
// `inside` from the subordinate base, `inside` itself as the caller's own
// id, the rest from the base onward.
std::vector<std::string> subordinateExtents(unsigned inside, unsigned host, uint32_t base,
                                            uint32_t count) {
    std::vector<std::string> out;
    auto extent = [&](uint64_t in, uint64_t out_id, uint64_t n) {
        if (n == 0) return;
        for (uint64_t v : {in, out_id, n}) out.push_back(std::to_string(v));
    };
    extent(0, base, inside);
    extent(inside, host, 1);
    extent(uint64_t{inside} + 1, uint64_t{base} + inside, count - uint64_t{inside} - 1);
    return out;
}

// Runs a map helper on `pid` and waits for it; its stderr is the error.
Status runMapHelper(const char* helper, pid_t pid, const std::vector<std::string>& extents) {
    std::vector<std::string> args = {helper, std::to_string(pid)};
    args.insert(args.end(), extents.begin(), extents.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::string shown;
    for (const std::string& a : args) shown += (shown.empty() ? "" : " ") + a;

    int err_pipe[2];
    if (pipe2(err_pipe, O_CLOEXEC) < 0) return Error::fromErrno("pipe2()");
    UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, err_w.get(), STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_w.get(), STDERR_FILENO);
    // The supervisor blocks the signals it reads from a signalfd; the
    // helper starts with none blocked and default dispositions.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char* no_env[] = {nullptr};
    pid_t child = -1;
    int spawned = posix_spawn(&child, helper, &actions, &attr, argv.data(), no_env);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    err_w.reset();
    if (spawned != 0) return Error::fromErrno("posix_spawn(" + shown + ")", spawned);
    std::string output;
    char buf[512];
    ssize_t n;
    // Read to EOF, keeping the first 4 KiB: a helper that writes more must
    // not block on a full pipe while it is waited for.
    while ((n = read(err_r.get(), buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
        if (n > 0 && output.size() < 4096) output.append(buf, static_cast<size_t>(n));
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return okStatus();
    while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
    std::string how = WIFEXITED(status) ? "exited " + std::to_string(WEXITSTATUS(status))
                                        : "died of signal " + std::to_string(WTERMSIG(status));
    return Error::message(shown + " " + how + (output.empty() ? "" : ": " + output));
}

}  // namespace

std::optional<uint32_t> outsideIdOf(const std::vector<IdRange>& ranges, uint32_t inside) {
    for (const IdRange& r : ranges)
        if (inside >= r.inside && inside - r.inside < r.count)
            return r.outside + (inside - r.inside);
    return std::nullopt;
}

bool mapsInsideUid(const IdMapping& m, uid_t id) {
    if (!m.uid_ranges.empty()) return outsideIdOf(m.uid_ranges, id).has_value();
    return m.count > 1 ? id < m.count : id == m.inside_uid;
}

bool mapsInsideGid(const IdMapping& m, gid_t id) {
    if (!m.gid_ranges.empty()) return outsideIdOf(m.gid_ranges, id).has_value();
    return m.count > 1 ? id < m.count : id == m.inside_gid;
}

Result<std::string> hostRootMapLine(const IdMapping& m) {
    if (!m.host_root_inside) return std::string();
    const bool block = m.count > 1;
    const uint64_t uid_first = block ? m.host_uid - m.inside_uid : m.host_uid;
    const uint64_t gid_first = block ? m.host_gid - m.inside_gid : m.host_gid;
    const bool inside_taken =
        block ? m.host_root_inside < m.count
              : m.host_root_inside == m.inside_uid || m.host_root_inside == m.inside_gid;
    if (inside_taken || uid_first == 0 || gid_first == 0)
        return Error::message("an id map giving host root's ids at " +
                              std::to_string(m.host_root_inside) + " overlaps its own block");
    return std::to_string(m.host_root_inside) + " 0 1\n";
}

Status writeIdMaps(pid_t pid, const IdMapping& m) {
    if (!m.setgroups_allowed || m.subordinate)
        if (auto s = writeProcFile(pid, "setgroups", "deny\n"); !s) return s;
    if (m.subordinate) {
        if (auto s =
                runMapHelper(kNewUidMap, pid,
                             subordinateExtents(m.inside_uid, m.host_uid, m.subuid_base, m.count));
            !s)
            return s;
        return runMapHelper(kNewGidMap, pid,
                            subordinateExtents(m.inside_gid, m.host_gid, m.subgid_base, m.count));
    }
    if (!m.uid_ranges.empty()) {
        auto lines = [](const std::vector<IdRange>& ranges) {
            std::string out;
            for (const IdRange& r : ranges)
                out += std::to_string(r.inside) + " " + std::to_string(r.outside) + " " +
                       std::to_string(r.count) + "\n";
            return out;
        };
        if (auto s = writeProcFile(pid, "uid_map", lines(m.uid_ranges)); !s) return s;
        return writeProcFile(pid, "gid_map", lines(m.gid_ranges));
    }
    if (m.callers_ranges) {
        const std::string uids = callersRangeLines("uid_map", m.count);
        const std::string gids = callersRangeLines("gid_map", m.count);
        if (uids.empty() || gids.empty())
            return Error::message("read this process's own /proc/self/uid_map and gid_map");
        if (auto s = writeProcFile(pid, "uid_map", uids); !s) return s;
        return writeProcFile(pid, "gid_map", gids);
    }
    auto root_line = hostRootMapLine(m);
    if (!root_line) return root_line.error();
    if (auto s =
            writeProcFile(pid, "uid_map", mapLine(m.inside_uid, m.host_uid, m.count) + *root_line);
        !s)
        return s;
    return writeProcFile(pid, "gid_map", mapLine(m.inside_gid, m.host_gid, m.count) + *root_line);
}

IdmappedTree::~IdmappedTree() {
    if (!helper) return;
    siginfo_t info;
    syscall(SYS_waitid, P_PIDFD, helper.get(), &info, WEXITED, nullptr);
}

IdmappedTree& IdmappedTree::operator=(IdmappedTree&& other) {
    if (this == &other) return *this;
    if (helper) {
        siginfo_t info;
        syscall(SYS_waitid, P_PIDFD, helper.get(), &info, WEXITED, nullptr);
    }
    tree = std::move(other.tree);
    more = std::move(other.more);
    helper = std::move(other.helper);
    helper_stack = std::move(other.helper_stack);
    return *this;
}

Result<IdmappedTree> makeIdmappedTree(const std::string& path, uid_t disk_uid, gid_t disk_gid,
                                      uid_t host_uid, gid_t host_gid) {
    UniqueFd dir(open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return Error::fromErrno("open(\"" + path + "\", O_PATH)");
    return makeIdmappedTree(dir.get(), path, disk_uid, disk_gid, host_uid, host_gid);
}

Result<IdmappedTree> makeIdmappedTree(int dir_fd, const std::string& path, uid_t disk_uid,
                                      gid_t disk_gid, uid_t host_uid, gid_t host_gid) {
    if (dir_fd < 0) return makeIdmappedTree(path, disk_uid, disk_gid, host_uid, host_gid);
    return makeIdmappedTree(dir_fd, path, IdMapping{disk_uid, host_uid, disk_gid, host_gid});
}

namespace {
Result<IdmappedTree> makeIdmappedTreesOf(const int* dir_fds, const std::string* paths, size_t n,
                                         const IdMapping& mapping, bool recursive);
}  // namespace

Result<IdmappedTree> makeIdmappedTree(int dir_fd, const std::string& path, const IdMapping& mapping,
                                      bool recursive) {
    return makeIdmappedTreesOf(&dir_fd, &path, 1, mapping, recursive);
}

Result<IdmappedTree> makeIdmappedTrees(const std::vector<int>& dir_fds,
                                       const std::vector<std::string>& paths,
                                       const IdMapping& mapping) {
    if (dir_fds.empty() || dir_fds.size() != paths.size())
        return Error::message("makeIdmappedTrees: one path for each directory");
    return makeIdmappedTreesOf(dir_fds.data(), paths.data(), dir_fds.size(), mapping, false);
}

namespace {

Result<IdmappedTree> makeIdmappedTreesOf(const int* dir_fds, const std::string* paths, size_t n,
                                         const IdMapping& mapping, bool recursive) {
    // A throwaway process, born in a new user namespace, holds it just long
    // enough for its maps to be written and a handle on it taken; the mount
    // keeps a reference to the namespace after the process is gone. It
    // shares our memory (CLONE_VM) on a small stack of its own, so starting
    // it copies no page tables and leaves no copy-on-write faults behind
    // (a fork of the supervisor did both). No CLONE_VFORK: we must run while
    // it lives. Its code is async-signal-safe and sets no errno (which it
    // would share): it starts with every signal blocked, so its read returns
    // only at EOF.
    int hold[2];
    if (pipe2(hold, O_CLOEXEC) < 0) return Error::fromErrno("pipe2()");
    UniqueFd hold_r(hold[0]), hold_w(hold[1]);
    constexpr std::size_t kStackSize = 16 * 1024;
    IdmappedTree out;
    out.helper_stack.reset(new char[kStackSize]);
    // Its argument lives at the foot of its stack, not in our frame, which
    // may be gone before it first runs.
    int* helper_fds = reinterpret_cast<int*>(out.helper_stack.get());
    helper_fds[0] = hold[0];
    helper_fds[1] = hold[1];
    sigset_t all, old_mask;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old_mask);
    int pidfd = -1;
    const int child = clone(holdUserNamespaceInChild, out.helper_stack.get() + kStackSize,
                            CLONE_VM | CLONE_NEWUSER | CLONE_PIDFD | SIGCHLD, helper_fds, &pidfd);
    const int clone_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    if (child < 0)
        return Error::fromErrno("clone(CLONE_NEWUSER|CLONE_VM) for the idmap", clone_errno);
    // The helper is reaped when the tree is dropped, long after it exited:
    // waiting for its exit here would cost a context switch or two.
    out.helper.reset(pidfd);
    hold_r.reset();
    auto reap = [&] { hold_w.reset(); };
    if (auto s = writeIdMaps(static_cast<pid_t>(child), mapping); !s) {
        reap();
        return s.error().withContext("idmap user namespace");
    }
    std::string ns_path = "/proc/" + std::to_string(child) + "/ns/user";
    UniqueFd userns(open(ns_path.c_str(), O_RDONLY | O_CLOEXEC));
    int open_errno = errno;
    reap();
    if (!userns) return Error::fromErrno("open(\"" + ns_path + "\")", open_errno);

    // With what is mounted beneath it, as the host (and the worktree's walk
    // for hidden names, which goes through the host's fd) sees it: a clone
    // of the top mount alone showed the sandbox the directories under those
    // mounts, which no walk judged. A mount beneath whose filesystem cannot
    // be idmapped fails the whole, named, rather than being left out.
    const unsigned rec = recursive ? AT_RECURSIVE : 0;
    for (size_t i = 0; i < n; ++i) {
        const std::string& path = paths[i];
        UniqueFd tree(
            sysOpenTree(dir_fds[i], "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | rec));
        if (!tree)
            return Error::fromErrno("open_tree(\"" + path + "\", OPEN_TREE_CLONE|AT_RECURSIVE)");
        mount_attr attr{};
        attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        attr.userns_fd = static_cast<__u64>(userns.get());
        // A clone of a shared mount joins its peer group: nothing mounted
        // beneath it in the sandbox may propagate back to the host.
        attr.propagation = MS_PRIVATE;
        if (sysMountSetattr(tree.get(), "", AT_EMPTY_PATH | rec, &attr) < 0)
            return Error::fromErrno("mount_setattr(\"" + path +
                                    "\", MOUNT_ATTR_IDMAP, AT_RECURSIVE): its filesystem, or one "
                                    "mounted beneath it, cannot be idmapped (overlayfs cannot)");
        if (i == 0)
            out.tree = std::move(tree);
        else
            out.more.push_back(std::move(tree));
    }
    return out;
}

}  // namespace

}  // namespace stockade::ns
