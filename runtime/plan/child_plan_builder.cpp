#include "runtime/plan/child_plan_builder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

#include "base/host_path.h"
#include "base/text_safety.h"
#include "base/unique_fd.h"
#include "namespaces/syscalls.h"
#include "runtime/plan/git_link.h"
#include "runtime/plan/walk_cache.h"
#include "runtime/plan/worktree_listing.h"
#include "runtime/plan/worktree_masks.h"
#include "runtime/policy/policy_builder.h"
#include "runtime/policy/sandbox_path.h"

namespace stockade {

namespace {

using ns::MountKind;
using ns::MountOp;

constexpr uid_t kNobody = 65534;
// The tty group's id on Debian, Fedora, Arch and Alpine: the group of every
// pty slave, as on those hosts, where the sandbox's ids include it.
constexpr gid_t kTtyGid = 5;
constexpr size_t kMaxCopiedEtcFile = 256 * 1024;
// A tenth or less of what a Debian host gives each user: 96,363 pending
// signals on 24 GiB here, 819,200 bytes of POSIX message queues.
constexpr uint64_t kSandboxPendingSignals = 8192;
constexpr uint64_t kSandboxMessageQueueBytes = 204800;

// Docker's masked and read-only /proc paths (moby oci/defaults.go).
constexpr const char* kMaskedProc[] = {"asound",      "acpi",          "interrupts", "kcore",
                                       "keys",        "latency_stats", "timer_list", "timer_stats",
                                       "sched_debug", "scsi"};
constexpr const char* kReadOnlyProc[] = {"bus", "fs", "irq", "sys", "sysrq-trigger"};

std::string relative(const std::string& absolute) {
    size_t start = absolute.find_first_not_of('/');
    return start == std::string::npos ? "" : absolute.substr(start);
}

Result<std::string> readLink(const std::string& path) {
    char buf[PATH_MAX];
    ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
    if (n < 0) return Error::fromErrno("readlink(\"" + path + "\")");
    return std::string(buf, static_cast<size_t>(n));
}

std::string joinRoot(const std::string& rootfs, const std::string& path) {
    return rootfs == "/" ? path : rootfs + path;
}

// System directories keep the host's shape: a merged-/usr host's /bin is a
// symlink, and so it is in the sandbox (no mount at all).
Status addSystemDirsFromRootfs(const Policy& policy, ChildPlan& plan);

Status addSystemDirs(const Policy& policy, ChildPlan& child) {
    if (policy.fs.rootfs != "/" && policy.fs.rootfs_held)
        return addSystemDirsFromRootfs(policy, child);
    ns::MountPlan& plan = child.mounts;
    for (const std::string& dir : policy.fs.system_dirs) {
        std::string host = joinRoot(policy.fs.rootfs, dir);
        struct stat st;
        if (lstat(host.c_str(), &st) < 0) continue;  // /lib32 and kin are often absent
        if (S_ISLNK(st.st_mode)) {
            auto target = readLink(host);
            if (!target) return target.error();
            ns::addOp(plan, {.kind = MountKind::Symlink,
                             .target = relative(dir),
                             .data = *target,
                             .description = "link " + dir});
        } else if (S_ISDIR(st.st_mode)) {
            ns::addOp(plan, {.kind = MountKind::BindFromHost,
                             .source = host,
                             .target = relative(dir),
                             .description = "mount " + dir + " read-only"});
        }
    }
    return okStatus();
}

// The synthesized passwd and group name the ids the sandbox has and no
// other: what `ls -l` shows and what chown or setuid can take (root and tty
// only under a block map, rootless neither). 65534 is always listed: it is
// also the overflow id, which every unmapped owner shows as.
std::string passwdFor(const ns::IdMapping& ids) {
    std::ostringstream out;
    if (ns::mapsInsideUid(ids, 0)) out << "root:x:0:0:root:/root:/usr/sbin/nologin\n";
    if (ids.inside_uid != 0 && ids.inside_uid != kNobody)
        out << "sandbox:x:" << ids.inside_uid << ":" << ids.inside_gid
            << ":stockade sandbox:/tmp:/bin/sh\n";
    out << "nobody:x:65534:65534:nobody:/tmp:/usr/sbin/nologin\n";
    return out.str();
}

std::string groupFor(const ns::IdMapping& ids) {
    std::ostringstream out;
    if (ns::mapsInsideGid(ids, 0)) out << "root:x:0:\n";
    if (ns::mapsInsideGid(ids, kTtyGid)) out << "tty:x:" << kTtyGid << ":\n";
    if (ids.inside_gid != 0 && ids.inside_gid != kTtyGid && ids.inside_gid != kNobody)
        out << "sandbox:x:" << ids.inside_gid << ":\n";
    out << "nogroup:x:65534:\n";
    return out.str();
}

// A curated /etc: small files are copied by the child, in the kernel (a copy
// costs less than a mount to set up and to tear down), directories are bound
// read-only, links kept as links; passwd, group, hosts and hostname are
// written by stockade.
Status addEtcFromRootfs(const Policy& policy, ChildPlan& plan);

Status addEtc(const Policy& policy, const ns::IdMapping& ids, ChildPlan& child) {
    ns::MountPlan& plan = child.mounts;
    ns::addOp(plan, {.kind = MountKind::Directory, .target = "etc", .description = "create /etc"});
    // A --rootfs's entries are found beneath its held fd (addEtcFromRootfs).
    const bool beneath_rootfs = policy.fs.rootfs != "/" && policy.fs.rootfs_held;
    if (beneath_rootfs)
        if (Status s = addEtcFromRootfs(policy, child); !s) return s;
    static const std::vector<std::string> kNone;
    for (const std::string& name : beneath_rootfs ? kNone : policy.fs.etc_entries) {
        std::string host = joinRoot(policy.fs.rootfs, "/etc/" + name);
        std::string target = "etc/" + name;
        struct stat st;
        if (lstat(host.c_str(), &st) < 0) continue;
        if (S_ISLNK(st.st_mode)) {
            auto link = readLink(host);
            if (!link) return link.error();
            ns::addOp(plan, {.kind = MountKind::Symlink,
                             .target = target,
                             .data = *link,
                             .description = "link /etc/" + name});
        } else if (S_ISREG(st.st_mode) && static_cast<size_t>(st.st_size) <= kMaxCopiedEtcFile) {
            if (access(host.c_str(), R_OK) < 0) continue;  // unreadable to this user: left out
            ns::addOp(plan, {.kind = MountKind::CopyFromHost,
                             .source = host,
                             .target = target,
                             .target_is_dir = false,
                             .description = "copy /etc/" + name});
        } else if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
            ns::addOp(plan, {.kind = MountKind::BindFromHost,
                             .source = host,
                             .target = target,
                             .target_is_dir = S_ISDIR(st.st_mode),
                             .description = "mount /etc/" + name + " read-only"});
        }
    }
    auto file = [&](const char* name, std::string content) {
        ns::addOp(plan, {.kind = MountKind::File,
                         .target = std::string("etc/") + name,
                         .data = std::move(content),
                         .description = std::string("write /etc/") + name});
    };
    file("passwd", passwdFor(ids));
    file("group", groupFor(ids));
    file("hostname", policy.hostname + "\n");
    file("hosts", "127.0.0.1\tlocalhost " + policy.hostname +
                      "\n::1\tlocalhost ip6-localhost ip6-loopback\n");
    return okStatus();
}

}  // namespace

// A host path the parent holds (host_path.h) bound at op.target. As root the
// mount is cloned here, from the fd, and the child only attaches it; rootless,
// the parent cannot clone a mount (open_tree(OPEN_TREE_CLONE) needs
// CAP_SYS_ADMIN over its mount namespace) and the child cannot clone one of
// the parent's namespace, so the child re-opens the canonical path without
// following symlinks and refuses anything but the held file. Either way a
// path swapped after the check cannot redirect the mount.
Status addHeldBind(ChildPlan& plan, const HeldPath& held, ns::MountOp op) {
    if (geteuid() == 0) {
        unsigned rec = op.recursive ? AT_RECURSIVE : 0;
        UniqueFd tree(ns::sysOpenTree(held.get(), "",
                                      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | rec));
        if (!tree) return Error::fromErrno("open_tree(\"" + held.path + "\", OPEN_TREE_CLONE)");
        mount_attr attr{};
        attr.attr_set = MOUNT_ATTR_NOSUID | (op.writable ? 0 : MOUNT_ATTR_RDONLY);
        if (op.flags & MS_NODEV) attr.attr_set |= MOUNT_ATTR_NODEV;
        if (op.flags & MS_NOEXEC) attr.attr_set |= MOUNT_ATTR_NOEXEC;
        if (op.flags & MS_NOSYMFOLLOW) attr.attr_set |= MOUNT_ATTR_NOSYMFOLLOW;
        // A clone of a shared mount joins its peer group: what the sandbox
        // mounts beneath it must not propagate back to the host.
        attr.propagation = MS_PRIVATE;
        if (ns::sysMountSetattr(tree.get(), "", AT_EMPTY_PATH | rec, &attr) < 0)
            return Error::fromErrno("mount_setattr(\"" + held.path + "\")");
        op.kind = MountKind::AttachPrepared;
        op.prepared_fd = tree.get();
        plan.prepared.push_back(std::move(tree));
    } else {
        op.kind = MountKind::BindFromHost;
        op.source = held.path;
        op.verify_identity = true;
        op.expect_dev = held.st.st_dev;
        op.expect_ino = held.st.st_ino;
    }
    ns::addOp(plan.mounts, std::move(op));
    return okStatus();
}

namespace {

// A --rootfs is the operator's but may sit where a sandbox wrote (an
// unpacked image in a worktree): its system directories are found beneath
// the held rootfs without following a symlink on the way, and bound from
// the fds found.
Status addSystemDirsFromRootfs(const Policy& policy, ChildPlan& plan) {
    for (const std::string& dir : policy.fs.system_dirs) {
        open_how how{};
        how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
        UniqueFd fd(ns::sysOpenat2(policy.fs.rootfs_held.get(), relative(dir).c_str(), &how));
        if (!fd) {
            if (errno == ENOENT) continue;  // /lib32 and kin are often absent
            return Error::fromErrno("openat2(\"" + policy.fs.rootfs + dir +
                                    "\", RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)");
        }
        HeldPath held;
        if (fstat(fd.get(), &held.st) < 0)
            return Error::fromErrno("fstat(\"" + policy.fs.rootfs + dir + "\")");
        if (S_ISLNK(held.st.st_mode)) {
            char buf[PATH_MAX];
            ssize_t n = readlinkat(fd.get(), "", buf, sizeof(buf) - 1);
            if (n < 0) return Error::fromErrno("readlinkat(\"" + policy.fs.rootfs + dir + "\")");
            ns::addOp(plan.mounts, {.kind = MountKind::Symlink,
                                    .target = relative(dir),
                                    .data = std::string(buf, static_cast<size_t>(n)),
                                    .description = "link " + dir});
            continue;
        }
        if (!S_ISDIR(held.st.st_mode)) continue;
        held.path = policy.fs.rootfs + dir;
        held.fd = std::make_shared<UniqueFd>(std::move(fd));
        if (auto s = addHeldBind(
                plan, held,
                {.target = relative(dir), .description = "mount " + dir + " read-only"});
            !s)
            return s.error();
    }
    return okStatus();
}

// A --rootfs's /etc entries, found as its system directories are: beneath
// the held rootfs, no symlink followed on the way (one at the entry itself is
// copied as a link). A small file is read here, through the fd found, and
// written by the child; anything else is bound from that fd. Nothing is
// named by a path a sandbox that wrote into the rootfs could redirect.
Status addEtcFromRootfs(const Policy& policy, ChildPlan& plan) {
    for (const std::string& name : policy.fs.etc_entries) {
        const std::string shown = policy.fs.rootfs + "/etc/" + name;
        const std::string target = "etc/" + name;
        open_how how{};
        how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
        UniqueFd fd(ns::sysOpenat2(policy.fs.rootfs_held.get(), target.c_str(), &how));
        if (!fd) {
            if (errno == ENOENT || errno == EACCES) continue;  // as the host's own: left out
            return Error::fromErrno("openat2(\"" + shown +
                                    "\", RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)");
        }
        HeldPath held;
        if (fstat(fd.get(), &held.st) < 0) return Error::fromErrno("fstat(\"" + shown + "\")");
        if (S_ISLNK(held.st.st_mode)) {
            char buf[PATH_MAX];
            ssize_t n = readlinkat(fd.get(), "", buf, sizeof(buf) - 1);
            if (n < 0) return Error::fromErrno("readlinkat(\"" + shown + "\")");
            ns::addOp(plan.mounts, {.kind = MountKind::Symlink,
                                    .target = target,
                                    .data = std::string(buf, static_cast<size_t>(n)),
                                    .description = "link /etc/" + name});
            continue;
        }
        if (S_ISREG(held.st.st_mode) && static_cast<size_t>(held.st.st_size) <= kMaxCopiedEtcFile) {
            // Opened again for reading the same way, and read only if it is
            // the file found (a FIFO or a swap in between is not read).
            how.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
            UniqueFd in(ns::sysOpenat2(policy.fs.rootfs_held.get(), target.c_str(), &how));
            if (!in) {
                if (errno == EACCES) continue;  // unreadable to this user: left out
                return Error::fromErrno("openat2(\"" + shown + "\", O_RDONLY)");
            }
            struct stat st;
            if (fstat(in.get(), &st) < 0 || st.st_dev != held.st.st_dev ||
                st.st_ino != held.st.st_ino || !S_ISREG(st.st_mode))
                return Error::message(shown + ": replaced while it was read");
            std::string content;
            char buf[4096];
            ssize_t n = 0;
            while (content.size() <= kMaxCopiedEtcFile &&
                   ((n = read(in.get(), buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
                if (n > 0) content.append(buf, static_cast<size_t>(n));
            if (n < 0) return Error::fromErrno("read(\"" + shown + "\")");
            ns::addOp(plan.mounts, {.kind = MountKind::File,
                                    .target = target,
                                    .data = std::move(content),
                                    .target_is_dir = false,
                                    .description = "copy /etc/" + name});
            continue;
        }
        if (!S_ISDIR(held.st.st_mode) && !S_ISREG(held.st.st_mode)) continue;
        held.path = shown;
        held.fd = std::make_shared<UniqueFd>(std::move(fd));
        if (auto s = addHeldBind(plan, held,
                                 {.target = target,
                                  .target_is_dir = S_ISDIR(held.st.st_mode),
                                  .description = "mount /etc/" + name + " read-only"});
            !s)
            return s.error();
    }
    return okStatus();
}

// Each directory above `relative` (below the worktree's top, a mount
// already) made a mount point, as the directory the host sees there now:
// rename(2) refuses a mount point, so the sandbox cannot move aside the
// directories that hold a read-only gitdir and make a writable one at its
// path, for the host's git to run its hooks and config (worktree_masks.cpp
// holds the directories above hidden and read-only names in place alike).
Status pinDirectoriesAbove(int worktree_fd, const std::string& relative, ChildPlan& plan) {
    for (size_t slash = relative.find('/'); slash != std::string::npos;
         slash = relative.find('/', slash + 1)) {
        const std::string above = relative.substr(0, slash);
        UniqueFd fd = openBeneathWorktree(worktree_fd, above, O_PATH | O_DIRECTORY | O_NOFOLLOW,
                                          RESOLVE_NO_SYMLINKS);
        struct stat st;
        if (!fd || fstat(fd.get(), &st) < 0)
            return Error::fromErrno("open /repo/" + escapeForTerminal(above) +
                                    " to hold it in place");
        ns::addOp(plan.mounts,
                  {.kind = MountKind::PinBeneath,
                   .target = "repo/" + above,
                   .anchor = "repo",
                   .verify_identity = true,
                   .expect_dev = static_cast<unsigned long>(st.st_dev),
                   .expect_ino = static_cast<unsigned long>(st.st_ino),
                   .description = "hold /repo/" + escapeForTerminal(above) + " in place"});
    }
    return okStatus();
}

// Why the common dir `common` of a linked worktree may not be exposed: it
// holds a name the run hides, or its walk for them stopped short; none when
// it may. git_link.h judges the link by git's own files, not by what the
// directory holds, and a run on another worktree that could write a `.git`
// there (one it made) could have moved that worktree's secrets into it with
// their covers: bound here, they would be bare. The walk is kept between
// runs as the worktree's is (walk_cache.h, keyed by the common dir), so a
// repository's unchanged .git costs a statx a directory, not a listing.
std::optional<std::string> hiddenNameInCommonDir(const Policy& policy, const HeldPath& common) {
    if (policy.fs.worktree_masks.hide.empty()) return std::nullopt;
    WorktreeMaskRules hide_only = policy.fs.worktree_masks;
    hide_only.read_only.clear();  // the whole directory is bound read-only
    hide_only.writable.clear();   // (exemptions from read_only: none left)
    const WalkCacheKey key{policy.fs.state_dir ? policy.fs.state_dir->get() : -1, common.get(),
                           &hide_only};
    const int64_t clock_offset_ns = walkClockOffsetNs();
    std::shared_ptr<const WalkedDirs> kept = loadWalkCache(key);
    WalkedDirs walked;
    auto scan = scanWorktree(common.get(), hide_only, kept.get(), &walked);
    if (!scan) return "could not be walked for hidden names: " + scan.error().describe();
    if (!scan->truncated_by.empty())
        return "was not walked whole for hidden names (" + scan->truncated_by + ")";
    if (scan->vanished > 0)
        return "changed while it was walked for hidden names (a name or directory vanished)";
    if (scan->hidden.empty()) {
        if (policy.fs.state_dir && scan->visited_whole && scan->listed_settled > 0)
            saveWalkCache(key, walked, std::max(clock_offset_ns, scan->clock_offset_ns));
        return std::nullopt;
    }
    std::string reason = "holds " + common.path + "/" + scan->hidden.front().relative;
    if (scan->hidden.size() > 1)
        reason += " and " + std::to_string(scan->hidden.size() - 1) + " more";
    return reason + ", a name this run hides";
}

// /repo/.git is read-only (G2), and so is the gitdir a `.git` file names,
// but only where that widens nothing (git_link.h): a gitdir inside the
// worktree is made read-only in place; one outside is exposed (its common
// dir, read-only, at its own path) only for a genuine linked worktree. Any
// other `.git` file is an ordinary file of the worktree, and the result
// says why it was not honoured.
Status addGitProtection(const Policy& policy, const HeldPath& worktree_held, ChildPlan& plan,
                        std::optional<GitLinkReport>& report, bool& top_git_read_only) {
    const std::string& worktree = *policy.fs.worktree;
    const std::string dotgit = worktree + "/.git";
    struct stat st;
    top_git_read_only = false;
    if (fstatat(worktree_held.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) < 0) return okStatus();
    auto refused = [&](const std::string& reason) {
        report = GitLinkReport{dotgit, "refused", "", reason};
        // The reason quotes what the .git file holds: the sandbox's text,
        // shown, never sent, to the terminal.
        std::fprintf(stderr,
                     "stockade: %s: the gitdir it names is not exposed (%s); .git is an "
                     "ordinary file of the worktree\n",
                     escapeForTerminal(dotgit).c_str(), escapeForTerminal(reason).c_str());
        return okStatus();
    };
    if (S_ISLNK(st.st_mode)) return refused("a symlink, never followed out of the worktree");
    ns::addOp(plan.mounts, {.kind = MountKind::ReadOnlyBeneath,
                            .target = "repo/.git",
                            .anchor = "repo",
                            .target_is_dir = S_ISDIR(st.st_mode),
                            .description = "mount /repo/.git read-only"});
    top_git_read_only = true;
    if (!S_ISREG(st.st_mode)) return okStatus();

    auto link = judgeGitLink(worktree_held.get(), worktree, writableHostDirs(policy.fs));
    if (!link) return refused(link.error().describe());
    if (link->kind == GitLink::Kind::InsideWorktree) {
        for (const std::string& dir : {link->git_dir_relative, link->common_dir_relative}) {
            if (dir.empty()) continue;
            if (auto s = pinDirectoriesAbove(worktree_held.get(), dir, plan); !s) return s.error();
            ns::addOp(
                plan.mounts,
                {.kind = MountKind::ReadOnlyBeneath,
                 .target = "repo/" + dir,
                 .anchor = "repo",
                 .description = "mount the gitdir's " +
                                std::string(dir == link->git_dir_relative ? "own directory"
                                                                          : "common directory") +
                                " /repo/" + escapeForTerminal(dir) + " read-only"});
        }
        report = GitLinkReport{dotgit, "inside_worktree", link->git_dir.path, ""};
        return okStatus();
    }
    const std::string& exposed = link->common_dir.path;
    for (const char* reserved : {"/proc", "/dev", "/sys", "/repo", "/etc"})
        if (isUnder(exposed, reserved) || exposed == "/")
            return refused("the common dir " + exposed +
                           " cannot be exposed at its own path in the sandbox");
    if (auto held = hiddenNameInCommonDir(policy, link->common_dir))
        return refused("the common dir " + exposed + " " + *held);
    if (auto s = addHeldBind(plan, link->common_dir,
                             {.target = relative(exposed),
                              .description = "mount the git common dir " + exposed + " read-only"});
        !s)
        return s.error();
    report = GitLinkReport{dotgit, "honoured", exposed, ""};
    return okStatus();
}

// How many ptys one sandbox may hold (devpts max=): a test suite or a REPL
// needs a handful.
constexpr int kPtysPerSandbox = 64;

// A devpts instance of the sandbox's own, as Docker gives each container:
// ptys for test suites, REPLs and `script`, numbered from 0 and listed in no
// other instance. Slaves are 0620 and group tty where tty is mapped; else
// (rootless, one id) the kernel gives each slave its opener's gid, which is
// the sandbox's own. At most kPtysPerSandbox ptys: all instances but the
// host's share kernel.pty.max minus kernel.pty.reserve (3072 by default), so
// that 48 sandboxes, not 12, would be needed to take them all.
std::string devptsOptions(const ns::IdMapping& ids) {
    std::string options =
        "newinstance,ptmxmode=0666,mode=0620,max=" + std::to_string(kPtysPerSandbox);
    if (ns::mapsInsideGid(ids, kTtyGid)) options += ",gid=" + std::to_string(kTtyGid);
    return options;
}

void addProcAndDev(ns::MountPlan& plan, const ns::IdMapping& ids) {
    const std::string empty_dir = plan.staging + "/.stockade-empty";
    ns::addOp(plan, {.kind = MountKind::Directory,
                     .target = ".stockade-empty",
                     .description = "create the directory that masks /proc paths"});
    ns::addOp(plan, {.kind = MountKind::Proc, .target = "proc", .description = "mount /proc"});
    for (const char* name : kMaskedProc) {
        std::string host = std::string("/proc/") + name;
        struct stat st;
        if (stat(host.c_str(), &st) < 0) continue;
        bool dir = S_ISDIR(st.st_mode);
        ns::addOp(plan, {.kind = dir ? MountKind::MaskWithEmptyDir : MountKind::MaskWithNull,
                         .target = std::string("proc/") + name,
                         .data = dir ? empty_dir : std::string(),
                         .optional = true,
                         .description = "mask " + host});
    }
    for (const char* name : kReadOnlyProc)
        ns::addOp(plan, {.kind = MountKind::ReadOnlyInPlace,
                         .target = std::string("proc/") + name,
                         .optional = true,
                         .description = std::string("make /proc/") + name + " read-only"});

    ns::addOp(plan, {.kind = MountKind::Tmpfs,
                     .target = "dev",
                     .data = "mode=0755,size=64k",
                     .description = "mount /dev"});
    ns::addDefaultDevices(plan, /*resolve_in_root=*/false);
    ns::addOp(plan, {.kind = MountKind::Devpts,
                     .target = "dev/pts",
                     .data = devptsOptions(ids),
                     .description = "mount /dev/pts"});
    // A link to the instance's own ptmx node, the setup the kernel's
    // devpts.rst describes: no device node of the host's is needed for it.
    const std::pair<const char*, const char*> links[] = {{"dev/ptmx", "pts/ptmx"},
                                                         {"dev/fd", "/proc/self/fd"},
                                                         {"dev/stdin", "/proc/self/fd/0"},
                                                         {"dev/stdout", "/proc/self/fd/1"},
                                                         {"dev/stderr", "/proc/self/fd/2"}};
    for (const auto& [target, to] : links)
        ns::addOp(plan, {.kind = MountKind::Symlink,
                         .target = target,
                         .data = to,
                         .description = std::string("link /") + target});
}

void fillArgv(const std::vector<std::string>& in, std::vector<std::string>& storage,
              std::vector<char*>& pointers) {
    storage = in;
    pointers.clear();
    for (std::string& s : storage) pointers.push_back(s.data());
    pointers.push_back(nullptr);
}

int lastCapability() {
    std::ifstream in("/proc/sys/kernel/cap_last_cap");
    int value = 40;
    if (!(in >> value)) value = 63;  // dropping a cap the kernel lacks is EINVAL, ignored
    return value;
}

}  // namespace

void addCommandRlimits(const Policy& policy, ChildPlan& plan) {
    auto hard = [&](int resource, uint64_t value) {
        plan.rlimits.push_back({resource, {value, value}});
    };
    hard(RLIMIT_CORE, 0);
    // Per-user kernel quotas are charged up the user namespaces to the host
    // uid that made them (user_namespaces(7), ucounts): rootless, that is the
    // caller, whose other processes got EAGAIN from sigqueue and
    // timer_create while a sandbox held 96,364 pending signals (issue 15).
    // The sandbox's own rlimit caps what it can take at its level; the
    // caller keeps the rest. POSIX timers take their signal from the same
    // count.
    // Never above the caller's own hard limit, which no one here may raise.
    auto at_most_own = [&](int resource, uint64_t value) {
        rlimit own{};
        if (getrlimit(resource, &own) == 0 && own.rlim_max != RLIM_INFINITY)
            value = std::min<uint64_t>(value, own.rlim_max);
        hard(resource, value);
    };
    // A profile may set either by name (policy.h, Limits).
    at_most_own(RLIMIT_SIGPENDING, policy.limits.pending_signals.value_or(kSandboxPendingSignals));
    at_most_own(RLIMIT_MSGQUEUE,
                policy.limits.message_queue_bytes.value_or(kSandboxMessageQueueBytes));
    if (policy.limits.open_files) {
        // A profile's open-file count is a ceiling: no higher than the
        // caller's own hard limit, which the sandbox could not raise either.
        rlimit own{};
        uint64_t files = *policy.limits.open_files;
        if (getrlimit(RLIMIT_NOFILE, &own) == 0 && own.rlim_max != RLIM_INFINITY)
            files = std::min<uint64_t>(files, own.rlim_max);
        hard(RLIMIT_NOFILE, files);
    }
    if (policy.limits.file_size_bytes) hard(RLIMIT_FSIZE, *policy.limits.file_size_bytes);
    if (policy.limits.cpu_time_ms) {
        // SIGXCPU at the soft limit names the cause; the hard limit one second
        // later is the kernel's SIGKILL for a command that ignores it.
        uint64_t seconds = (*policy.limits.cpu_time_ms + 999) / 1000;
        plan.rlimits.push_back({RLIMIT_CPU, {seconds, seconds + 1}});
    }
}

void addLimitFallbacks(const Limits& limits, const SandboxCgroups& cgroups, ChildPlan& plan) {
    // RLIMIT_DATA, not RLIMIT_AS: it counts private writable mappings (heap,
    // malloc's arenas, anonymous memory), not address space merely reserved.
    // A WebAssembly instance reserves 10 GiB of PROT_NONE guard space, V8 a
    // 4 GiB cage, Go and the JVM their arenas: under RLIMIT_AS they fail at
    // any useful limit, and a dev server such as Vite cannot start
    // (docs/threat-model.md).
    if (limits.memory_bytes && cgroups.memory() == CgroupMechanism::None)
        plan.rlimits.push_back({RLIMIT_DATA, {*limits.memory_bytes, *limits.memory_bytes}});
    if (limits.pids && cgroups.pids() == CgroupMechanism::None)
        plan.rlimits.push_back({RLIMIT_NPROC, {*limits.pids, *limits.pids}});
}

Result<ChildPlan> buildChildPlan(const Policy& policy, const Identity& identity,
                                 const UniqueFd& idmapped_worktree, PlanFindings& findings) {
    ChildPlan plan;
    plan.ids = identity.ids;
    plan.hostname = policy.hostname;
    ns::MountPlan& mounts = plan.mounts;
    mounts.staging = "/tmp";
    mounts.root_options = "mode=0755,size=16m";
    struct stat st;
    if (stat(mounts.staging.c_str(), &st) < 0 || !S_ISDIR(st.st_mode))
        return Error::message("the host has no /tmp directory to assemble the sandbox's root on");

    if (auto s = addSystemDirs(policy, plan); !s) return s.error();
    if (auto s = addEtc(policy, identity.ids, plan); !s) return s.error();
    // /tmp and /var/tmp before the worktree's gitdir and the extra mounts, so
    // that one of those placed under /tmp lands on the tmpfs, not beneath it.
    std::string tmp_options = "mode=1777,size=" + std::to_string(policy.limits.tmp_bytes);
    ns::addOp(mounts, {.kind = MountKind::Tmpfs,
                       .target = "tmp",
                       .data = tmp_options,
                       .description = "mount /tmp"});
    ns::addOp(mounts, {.kind = MountKind::Tmpfs,
                       .target = "var/tmp",
                       .data = tmp_options,
                       .description = "mount /var/tmp"});
    if (policy.fs.worktree) {
        // A Policy built by buildPolicy holds the worktree already; one made
        // another way is held here, symlinks refused.
        HeldPath worktree_held = policy.fs.worktree_held;
        if (!worktree_held) {
            auto held = holdHostPath("--worktree", *policy.fs.worktree, false);
            if (!held) return held.error();
            worktree_held = std::move(*held);
        }
        // The identity was chosen from the worktree's owner; an idmap made
        // for another directory's owner (the path swapped since it was
        // held) would map the wrong files.
        if (identity.idmap_worktree && (identity.worktree_uid != worktree_held.st.st_uid ||
                                        identity.worktree_gid != worktree_held.st.st_gid))
            return Error::message("--worktree " + *policy.fs.worktree +
                                  ": its owner changed while stockade set up the sandbox");
        if (idmapped_worktree) {
            ns::addOp(mounts, {.kind = MountKind::AttachPrepared,
                               .target = "repo",
                               .writable = true,
                               .prepared_fd = idmapped_worktree.get(),
                               .description = "mount the worktree at /repo (idmapped)"});
        } else if (auto s = addHeldBind(plan, worktree_held,
                                        {.target = "repo",
                                         .writable = true,
                                         .description = "mount the worktree at /repo"});
                   !s) {
            return s.error();
        }
        bool top_git_read_only = false;
        if (auto s = addGitProtection(policy, worktree_held, plan, findings.git, top_git_read_only);
            !s)
            return s.error();
        if (auto s = addWorktreeMasks(policy, worktree_held.get(), top_git_read_only, plan,
                                      findings.masks);
            !s)
            return s.error();
    }
    // Extra mounts, shallowest first, so a mount never hides a deeper one.
    std::vector<ExtraMount> extra = policy.fs.mounts;
    std::stable_sort(extra.begin(), extra.end(), [](const ExtraMount& a, const ExtraMount& b) {
        return std::count(a.target.begin(), a.target.end(), '/') <
               std::count(b.target.begin(), b.target.end(), '/');
    });
    for (const ExtraMount& m : extra) {
        HeldPath held = m.held;
        if (!held) {
            auto opened = holdHostPath("--mount", m.source, false);
            if (!opened) return opened.error();
            held = std::move(*opened);
        }
        bool in_repo = isUnder(m.target, "/repo");
        if (auto s = addHeldBind(plan, held,
                                 {.target = relative(m.target),
                                  .anchor = in_repo ? "repo" : "",
                                  .target_is_dir = S_ISDIR(held.st.st_mode),
                                  .writable = m.writable,
                                  .description = "mount " + m.source + " at " + m.target +
                                                 (m.writable ? "" : " read-only")});
            !s)
            return s.error();
    }
    addProcAndDev(mounts, identity.ids);
    ns::addOp(mounts, {.kind = MountKind::Tmpfs,
                       .target = "dev/shm",
                       .data = tmp_options,
                       .description = "mount /dev/shm"});
    if (policy.fs.mount_sys)
        ns::addOp(mounts, {.kind = MountKind::BindFromHost,
                           .source = "/sys",
                           .target = "sys",
                           .description = "mount /sys read-only"});

    fillArgv(policy.command, plan.argv_storage, plan.argv);
    fillArgv(policy.environment, plan.env_storage, plan.envp);
    plan.search_path = "/usr/local/bin:/usr/bin:/bin";
    for (const std::string& e : policy.environment)
        if (e.starts_with("PATH=")) plan.search_path = e.substr(5);
    plan.workdir = policy.workdir;
    plan.stdin_null = policy.stdin_mode == StdinMode::Null;
    plan.last_cap = lastCapability();

    // Landlock mirrors the mount plan just built (G10): a second wall with
    // the same shape, raised by the command itself before exec. TCP is left
    // to the network namespace, for dev servers too: Landlock's TCP rules
    // name ports, not addresses, so they cannot tell the sandbox's own
    // loopback from anywhere else, and a server that proxies to an API it
    // started on another port (or a test suite with servers of its own)
    // must be able to bind and connect there. What keeps a dev server's
    // traffic in is the namespace and, with the veth backend, the rules on
    // both ends of the pair (docs/dev-servers.md, "which layer holds what").
    if (policy.landlock != LandlockMode::Off) {
        ns::LandlockRequest request;
        ns::mirrorMountPlan(plan.mounts, request);
        request.network = ns::LandlockNetwork::Unrestricted;
        auto landlock = ns::buildLandlockPlan(request);
        if (!landlock) return landlock.error().withContext("plan the Landlock ruleset");
        plan.landlock = std::move(*landlock);
    }

    addCommandRlimits(policy, plan);
    // inotify: a quarter of the host's per-user maxima, no more than 32
    // instances (the host gives each user 128).
    auto quarterOf = [](const char* path, uint32_t cap) -> uint32_t {
        std::ifstream in(path);
        uint64_t host = 0;
        if (!(in >> host) || host == 0) return cap;
        return static_cast<uint32_t>(std::min<uint64_t>(cap, std::max<uint64_t>(1, host / 4)));
    };
    // A profile's own value by name instead (policy.h, Limits); the host's
    // per-user maximum still holds above the sandbox's namespace.
    auto named = [](const std::optional<uint64_t>& v, uint32_t otherwise) {
        return v ? static_cast<uint32_t>(std::min<uint64_t>(*v, UINT32_MAX)) : otherwise;
    };
    plan.userns_bounds.inotify_instances = named(
        policy.limits.inotify_instances, quarterOf("/proc/sys/fs/inotify/max_user_instances", 32));
    plan.userns_bounds.inotify_watches =
        named(policy.limits.inotify_watches,
              quarterOf("/proc/sys/fs/inotify/max_user_watches", 1u << 20));
    return plan;
}

}  // namespace stockade
