#include "oci/container_plan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "base/host_path.h"
#include "namespaces/syscalls.h"
#include "oci/devices.h"
#include "oci/groups.h"
#include "oci/idmapped_root.h"
#include "oci/passwd.h"
#include "oci/profile.h"
#include "oci/state.h"
#include "runtime/plan/child_plan_builder.h"
#include "seccomp/default_program.h"
#include "seccomp/filter.h"

namespace stockade::oci {

namespace {

using ns::MountKind;
using ns::MountOp;

std::string relative(const std::string& absolute) {
    size_t start = absolute.find_first_not_of('/');
    return start == std::string::npos ? "" : absolute.substr(start);
}

void fill(const std::vector<std::string>& in, std::vector<std::string>& storage,
          std::vector<char*>& pointers) {
    storage = in;
    pointers.clear();
    for (std::string& s : storage) pointers.push_back(s.data());
    pointers.push_back(nullptr);
}

Result<std::string> resolved(const std::string& path, const std::string& field) {
    char buf[PATH_MAX];
    if (!realpath(path.c_str(), buf))
        return Error::fromErrno(field + ": realpath(\"" + path + "\")");
    return std::string(buf);
}

int cloneFlagOf(const std::string& type) {
    if (type == "network") return CLONE_NEWNET;
    if (type == "ipc") return CLONE_NEWIPC;
    if (type == "uts") return CLONE_NEWUTS;
    return 0;
}

// A cgroup mount shows the container its own cgroup and nothing else of
// the host's tree: a small tmpfs at the destination with each of the
// container's v1 cgroup directories bound beneath it by controller
// ("memory", "pids"), or on a unified v2 tree that one directory bound at
// the destination itself; with no cgroup of its own (no limits, no
// cgroupsPath), the empty tmpfs. The binds are read-only whatever the
// options say, and the container's ids own none of the files; `ro` makes
// the tmpfs read-only too (the op left in `sealed_later`), once everything
// is in it: the bundle's later mounts beneath it too (podman's systemd mode
// binds /sys/fs/cgroup/systemd there, its target made in the tmpfs).
Status addCgroupMount(ChildPlan& plan, const Mount& m, const std::vector<std::string>& cgroup_dirs,
                      const std::string& where, std::vector<MountOp>& sealed_later) {
    struct statfs fs {};
    const bool unified = statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
    const std::string target = relative(m.destination);
    // The host's own cgroupfs, which no container can write: its links
    // (cpu and cpuacct, each a link to cpu,cpuacct where mounted together)
    // are followed.
    auto bind = [&](const std::string& dir, const std::string& at) -> Status {
        auto held = holdHostPath(where, dir, true);
        if (!held) return held.error();
        return addHeldBind(plan, *held,
                           {.target = at,
                            .target_is_dir = true,
                            .writable = false,
                            .recursive = false,
                            .flags = MS_NODEV | MS_NOEXEC,
                            .resolve_in_root = true,
                            .description = "mount the cgroup " + dir + " at /" + at});
    };
    if (unified && cgroup_dirs.size() == 1) return bind(cgroup_dirs[0], target);
    ns::addOp(plan.mounts, {.kind = MountKind::Filesystem,
                            .source = "cgroup",
                            .target = target,
                            .data = "mode=755,size=4k,nr_inodes=64",
                            .fstype = "tmpfs",
                            .flags = MS_NOSUID | MS_NODEV | MS_NOEXEC,
                            .resolve_in_root = true,
                            .description = "mount a tmpfs for the cgroups at " + m.destination});
    const std::string prefix = "/sys/fs/cgroup/";
    for (const std::string& dir : cgroup_dirs) {
        if (!dir.starts_with(prefix))
            return Error::message(where + ": cgroup " + dir + " is not under " + prefix);
        std::string controller =
            dir.substr(prefix.size(), dir.find('/', prefix.size()) - prefix.size());
        if (auto s = bind(dir, target + "/" + controller); !s) return s.error();
    }
    if (m.flags & MS_RDONLY)
        sealed_later.push_back({.kind = MountKind::ReadOnlyInPlace,
                                .target = target,
                                .resolve_in_root = true,
                                .description = "make " + m.destination + " read-only"});
    return okStatus();
}

// As root, the container's uid is a leased id that owns nothing of a
// root-owned image, so a missing mount target (podman's /etc/resolv.conf,
// /run/.containerenv) is made here, in the image, as runc makes it: each
// component resolved in the root (openat2 RESOLVE_IN_ROOT, so no symlink of
// the image leads out), directories 0755 and files empty 0644. A target
// beneath an earlier bind of a host directory (podman's --secret in its
// secrets directory, a volume inside a volume) is made the same way in that
// directory, `in` naming it, with RESOLVE_IN_ROOT at the directory: runc
// makes it there as host root, and the container's ids may not write it. A
// target beneath another earlier mount (/dev/shm on a /dev tmpfs) is the
// container's own to make, in that mount.
Status makeMountTargetInImage(int root_fd, const std::string& target, bool is_dir,
                              const std::string& where, const std::string& in = "the image") {
    std::string done;
    size_t i = 0;
    while (i < target.size()) {
        size_t end = target.find('/', i);
        if (end == std::string::npos) end = target.size();
        const std::string name = target.substr(i, end - i);
        const bool last = end == target.size();
        i = end + 1;
        if (name.empty()) continue;
        open_how how{};
        how.flags = O_PATH | O_CLOEXEC;
        how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
        const std::string path = done.empty() ? name : done + "/" + name;
        UniqueFd existing(ns::sysOpenat2(root_fd, path.c_str(), &how));
        if (existing) {
            done = path;
            continue;
        }
        if (errno != ENOENT) return Error::fromErrno(where + ": open(\"/" + path + "\") in " + in);
        how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
        UniqueFd parent(ns::sysOpenat2(root_fd, done.empty() ? "." : done.c_str(), &how));
        if (!parent) return Error::fromErrno(where + ": open(\"/" + done + "\") in " + in);
        int made = 0;
        if (!last || is_dir) {
            made = mkdirat(parent.get(), name.c_str(), 0755);
        } else {
            UniqueFd file(openat(parent.get(), name.c_str(),
                                 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
            made = file ? 0 : -1;
        }
        if (made < 0 && errno != EEXIST)
            return Error::fromErrno(where + ": make \"/" + path + "\" in " + in);
        done = path;
    }
    return okStatus();
}

// tmpcopyup: the tmpfs starts with what the image holds at its
// destination. The image's directory, held, when it holds anything; none
// when it is empty or missing (the child then mounts the tmpfs itself).
Result<UniqueFd> tmpcopyupSource(int root_fd, const std::string& target, const std::string& where) {
    open_how how{};
    how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    UniqueFd dir(ns::sysOpenat2(root_fd, target.c_str(), &how));
    if (!dir) {
        if (errno == ENOENT) return UniqueFd();
        return Error::fromErrno(where + ".options: tmpcopyup: open(\"/" + target +
                                "\") in the image");
    }
    DIR* d = fdopendir(dup(dir.get()));
    if (!d) return Error::fromErrno(where + ".options: tmpcopyup: fdopendir()");
    bool empty = true;
    while (dirent* e = readdir(d))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) empty = false;
    closedir(d);
    if (empty) return UniqueFd();
    return dir;
}

// Whether the mount options `data` hold an option starting with `key`
// ("mode=").
bool namesOption(const std::string& data, const char* key) {
    for (size_t at = 0; (at = data.find(key, at)) != std::string::npos; ++at)
        if (at == 0 || data[at - 1] == ',') return true;
    return false;
}

// A tmpfs's options with the container's root as its owner, as runc's (which
// mounts as that root) are: the child mounts with the process's ids already
// taken, so a tmpfs would otherwise be the process user's (`--user 1000`
// could then replace /dev/ptmx). The ids are the container's own; an owner
// the options name, or an id 0 the container does not have, is left alone.
std::string rootOwnedTmpfs(const std::string& data, const ns::IdMapping& ids) {
    std::string out = data;
    if (ns::mapsInsideUid(ids, 0) && !namesOption(data, "uid="))
        out += std::string(out.empty() ? "" : ",") + "uid=0";
    if (ns::mapsInsideGid(ids, 0) && !namesOption(data, "gid="))
        out += std::string(out.empty() ? "" : ",") + "gid=0";
    return out;
}

// A devpts's options without an owner the container's user namespace does
// not map (`gid=5` from rootless podman, whose own namespace maps the tty
// group where stockade's, giving the container the caller's id alone, does
// not): the kernel refuses the mount (EINVAL), and runc drops the option
// rootless the same way. What was dropped is said in `dropped`.
std::string devptsOwnersMapped(const std::string& data, const ns::IdMapping& ids,
                               std::string& dropped) {
    std::string out;
    size_t start = 0;
    while (start <= data.size()) {
        size_t comma = data.find(',', start);
        if (comma == std::string::npos) comma = data.size();
        const std::string option = data.substr(start, comma - start);
        start = comma + 1;
        if (option.empty()) continue;
        bool keep = true;
        for (const char* key : {"uid=", "gid="}) {
            if (!option.starts_with(key)) continue;
            const std::string digits = option.substr(4);
            char* end = nullptr;
            errno = 0;
            const unsigned long id = std::strtoul(digits.c_str(), &end, 10);
            const bool number = !digits.empty() && end && *end == '\0' && errno == 0 &&
                                digits.find_first_not_of("0123456789") == std::string::npos &&
                                id <= UINT32_MAX;
            if (number && !(key[0] == 'u' ? ns::mapsInsideUid(ids, static_cast<uid_t>(id))
                                          : ns::mapsInsideGid(ids, static_cast<gid_t>(id))))
                keep = false;
        }
        if (!keep) {
            dropped += (dropped.empty() ? "" : ",") + option;
            continue;
        }
        out += (out.empty() ? "" : ",") + option;
    }
    return out;
}

// Whether `target` is a directory in the image (resolved in its root).
bool directoryInImage(int root_fd, const std::string& target) {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    UniqueFd fd(ns::sysOpenat2(root_fd, target.c_str(), &how));
    struct stat st;
    return fd && fstat(fd.get(), &st) == 0 && S_ISDIR(st.st_mode);
}

// An image file's owner (its uid, or with `uid` false its gid) as the tmpfs
// copy's: the image's ids taken as the container's (its root's files its
// root's), as an idmapped root would show them; an id outside the
// container's range is kept (it shows as nobody inside). With the caller's
// own namespace's ids (rootless podman's, run as its uid 0) the image is
// not shifted: the copy keeps the file's owner, seen inside as the file is.
// Rootless otherwise, every file is the caller's already.
uint32_t copyOwner(uint32_t image_id, const ns::IdMapping& ids, bool uid) {
    if (ids.callersIds()) return image_id;
    const uint32_t inside = uid ? ids.inside_uid : ids.inside_gid;
    const uint32_t host = uid ? ids.host_uid : ids.host_gid;
    if (ids.count > 1) return image_id < ids.count ? host - inside + image_id : image_id;
    return image_id == inside ? host : image_id;
}

// The data of a regular file, its holes left holes (a sparse file the
// image holds costs its data in the tmpfs, not its length), then its
// length.
Status copyData(int from, int to, off_t size, const std::string& what) {
    char buf[65536];
    for (off_t at = 0;;) {
        off_t data = lseek(from, at, SEEK_DATA);
        if (data < 0 && errno == ENXIO) break;  // no data past `at`
        if (data < 0) return Error::fromErrno(what + ": lseek(SEEK_DATA)");
        off_t hole = lseek(from, data, SEEK_HOLE);
        if (hole < 0) return Error::fromErrno(what + ": lseek(SEEK_HOLE)");
        for (off_t off = data; off < hole;) {
            const size_t want = static_cast<size_t>(std::min<off_t>(hole - off, sizeof(buf)));
            ssize_t got = pread(from, buf, want, off);
            if (got < 0) return Error::fromErrno(what + ": read()");
            if (got == 0) break;  // shorter than its extents said
            for (ssize_t done = 0; done < got;) {
                ssize_t put = pwrite(to, buf + done, static_cast<size_t>(got - done), off + done);
                if (put < 0) return Error::fromErrno(what + ": write()");
                done += put;
            }
            off += got;
        }
        at = hole;
    }
    if (ftruncate(to, size) < 0) return Error::fromErrno(what + ": ftruncate()");
    return okStatus();
}

// Copies the tree under `from` into `to`: directories, regular files and
// symlinks, never following one; modes without setuid and setgid (the
// tmpfs is the container's scratch, not a place to carry them); a device,
// fifo or socket refused. `depth` bounds a hostile image's nesting.
Status copyTree(int from, int to, const ns::IdMapping& ids, bool as_root, const std::string& where,
                int depth) {
    if (depth > 64) return Error::message(where + ": tmpcopyup: nested deeper than 64");
    DIR* d = fdopendir(dup(from));
    if (!d) return Error::fromErrno(where + ": tmpcopyup: fdopendir()");
    rewinddir(d);  // the dup shares the offset of any read before
    std::vector<std::string> names;
    while (dirent* e = readdir(d))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            names.emplace_back(e->d_name);
    closedir(d);
    auto owned = [&](int dirfd, const char* name, const struct stat& st, int flags) -> Status {
        if (!as_root) return okStatus();
        if (fchownat(dirfd, name, copyOwner(st.st_uid, ids, true), copyOwner(st.st_gid, ids, false),
                     flags) < 0)
            return Error::fromErrno(where + ": tmpcopyup: chown(\"" + std::string(name) + "\")");
        return okStatus();
    };
    for (const std::string& name : names) {
        const char* n = name.c_str();
        struct stat st {};
        if (fstatat(from, n, &st, AT_SYMLINK_NOFOLLOW) < 0)
            return Error::fromErrno(where + ": tmpcopyup: stat(\"" + name + "\")");
        const mode_t mode = st.st_mode & 01777;
        if (S_ISDIR(st.st_mode)) {
            if (mkdirat(to, n, 0700) < 0)
                return Error::fromErrno(where + ": tmpcopyup: mkdir(\"" + name + "\")");
            UniqueFd src(openat(from, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            UniqueFd dst(openat(to, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            if (!src || !dst)
                return Error::fromErrno(where + ": tmpcopyup: open(\"" + name + "\")");
            if (auto s = copyTree(src.get(), dst.get(), ids, as_root, where, depth + 1); !s)
                return s;
            if (auto s = owned(to, n, st, AT_SYMLINK_NOFOLLOW); !s) return s;
            if (fchmod(dst.get(), mode) < 0)
                return Error::fromErrno(where + ": tmpcopyup: chmod(\"" + name + "\")");
        } else if (S_ISREG(st.st_mode)) {
            // A second name of a file could be any file of that filesystem
            // (a host secret linked in by whoever writes the image), whose
            // copy the container would then own.
            if (st.st_nlink > 1)
                return Error::message(where + ": tmpcopyup: \"" + name +
                                      "\" has more than one link, and is not copied");
            UniqueFd src(openat(from, n, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
            UniqueFd dst(openat(to, n, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
            if (!src || !dst)
                return Error::fromErrno(where + ": tmpcopyup: open(\"" + name + "\")");
            if (auto s = copyData(src.get(), dst.get(), st.st_size,
                                  where + ": tmpcopyup: \"" + name + "\"");
                !s)
                return s;
            if (auto s = owned(to, n, st, AT_SYMLINK_NOFOLLOW); !s) return s;
            if (fchmod(dst.get(), mode) < 0)
                return Error::fromErrno(where + ": tmpcopyup: chmod(\"" + name + "\")");
        } else if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t len = readlinkat(from, n, target, sizeof(target) - 1);
            if (len < 0) return Error::fromErrno(where + ": tmpcopyup: readlink(\"" + name + "\")");
            target[len] = '\0';
            if (symlinkat(target, to, n) < 0)
                return Error::fromErrno(where + ": tmpcopyup: symlink(\"" + name + "\")");
            if (auto s = owned(to, n, st, AT_SYMLINK_NOFOLLOW); !s) return s;
        } else {
            return Error::message(where + ": tmpcopyup: \"" + name +
                                  "\" is a device, fifo or socket, which is not copied");
        }
    }
    return okStatus();
}

unsigned mountAttrsOf(unsigned long flags);

// `work` run by a child of this process that first moves itself into each
// of the container's cgroup directories: a tmpfs's pages are charged to
// the memory cgroup of the task that writes them, and stay charged there,
// so what the image makes create copy counts against the container's
// memory limit, as runc's copy, made by the container's init, does; not
// against the engine's (the first red team of 2026-12-07 had a container
// plant a 768 MiB file to be copied at its next start, charged to
// conmon's cgroup). Without cgroup directories (none could be made), the
// work runs here.
Status inContainerCgroups(const std::vector<std::string>& dirs, const std::string& what,
                          std::vector<int> keep, const std::function<Status()>& work) {
    if (dirs.empty()) return work();
    int report[2];
    if (pipe2(report, O_CLOEXEC) < 0) return Error::fromErrno(what + ": pipe2()");
    UniqueFd read_end(report[0]), write_end(report[1]);
    // The child's words come back in a page made here, in create's own
    // cgroup: at the container's memory limit a write to the pipe, which
    // needs a page of the child's cgroup, fails too (seen in CI), and the
    // reason was lost. The pipe says only when the child is done.
    constexpr size_t kReport = 4096;
    void* const page =
        mmap(nullptr, kReport, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return Error::fromErrno(what + ": mmap()");
    memset(page, 0, kReport);
    struct Unmap {
        void* page;
        ~Unmap() { munmap(page, kReport); }
    } unmap{page};
    char* const words = static_cast<char*>(page);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) return Error::fromErrno(what + ": fork()");
    if (pid == 0) {
        // Host root in the container's cgroups: it ends with create (a
        // client that kills create mid-copy), and holds nothing of create's
        // but what the work reads and writes and its report (not the
        // container's directory and its lock, the id lease, the caller's
        // stdio: the review of 2026-12-07 found an orphaned copier holding
        // them, and `delete` waiting on the lock).
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent) _exit(1);
        read_end.reset();
        const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int std = 0; std < 3 && null >= 0; ++std) dup2(null, std);
        keep.push_back(write_end.get());
        std::sort(keep.begin(), keep.end());
        unsigned from = 3;
        for (int fd : keep) {
            if (fd < 3) continue;
            if (static_cast<unsigned>(fd) > from)
                syscall(SYS_close_range, from, static_cast<unsigned>(fd) - 1, 0u);
            from = static_cast<unsigned>(fd) + 1;
        }
        syscall(SYS_close_range, from, ~0u, 0u);
        Status done = okStatus();
        for (const std::string& dir : dirs) {
            UniqueFd procs(open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
            if (!procs || write(procs.get(), "0", 1) != 1) {
                done = Error::fromErrno("join the container's cgroup " + dir);
                break;
            }
        }
        if (done) done = work();
        if (!done) {
            const std::string text = done.error().describe();
            memcpy(words, text.data(), std::min(text.size(), kReport - 1));
        }
        _exit(done ? 0 : 1);
    }
    write_end.reset();
    // A v1 memory cgroup whose OOM killer is disabled (podman's
    // --oom-kill-disable) stops the copier at the limit instead of killing
    // it: looked at while waiting, and the copier then killed.
    bool stopped_at_limit = false;
    char buf[512];
    while (true) {
        pollfd pfd{read_end.get(), POLLIN, 0};
        const int n = poll(&pfd, 1, 200);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) {
            for (const std::string& dir : dirs) {
                std::ifstream oom(dir + "/memory.oom_control");
                for (std::string key, value; oom >> key >> value;)
                    if (key == "under_oom" && value == "1") stopped_at_limit = true;
            }
            if (!stopped_at_limit) continue;
            kill(pid, SIGKILL);
            break;
        }
        const ssize_t got = read(read_end.get(), buf, sizeof(buf));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (stopped_at_limit)
        return Error::message(what +
                              ": the copy reached the container's memory limit, whose OOM killer "
                              "is disabled (linux.resources.memory.disableOOMKiller)");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return okStatus();
    const std::string text(words, strnlen(words, kReport));
    if (!text.empty()) return Error::message(text);
    if (WIFSIGNALED(status)) {
        const char* name = sigabbrev_np(WTERMSIG(status));
        return Error::message(what + ": the copy, made in the container's cgroups, was killed (" +
                              (name ? std::string("SIG") + name : std::string("a signal")) +
                              "): more than the container's memory limit holds?");
    }
    return Error::message(what + ": the copy failed");
}

// The tmpfs made here with the options asked, the image's directory copied
// in, made read-only after if asked, and attached by the child like a
// held bind: a tmpfs the child mounted would be empty.
Result<UniqueFd> copiedTmpfs(const Mount& m, int source, const struct stat& source_st,
                             const ns::IdMapping& ids, bool as_root,
                             const std::vector<std::string>& cgroup_dirs,
                             const std::string& where) {
    UniqueFd fs(static_cast<int>(syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC)));
    if (!fs) return Error::fromErrno(where + ": tmpcopyup: fsopen(\"tmpfs\")");
    std::istringstream options(m.data);
    std::string option;
    while (std::getline(options, option, ',')) {
        if (option.empty()) continue;
        size_t eq = option.find('=');
        const std::string key = option.substr(0, eq);
        int r = eq == std::string::npos
                    ? static_cast<int>(syscall(SYS_fsconfig, fs.get(), FSCONFIG_SET_FLAG,
                                               key.c_str(), nullptr, 0))
                    : static_cast<int>(syscall(SYS_fsconfig, fs.get(), FSCONFIG_SET_STRING,
                                               key.c_str(), option.c_str() + eq + 1, 0));
        if (r < 0) return Error::fromErrno(where + ".options: tmpfs option \"" + option + "\"");
    }
    if (syscall(SYS_fsconfig, fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0)
        return Error::fromErrno(where + ": tmpcopyup: fsconfig(FSCONFIG_CMD_CREATE)");
    const unsigned attrs = mountAttrsOf(m.flags);
    UniqueFd mnt(static_cast<int>(
        syscall(SYS_fsmount, fs.get(), FSMOUNT_CLOEXEC, attrs & ~unsigned{MOUNT_ATTR_RDONLY})));
    if (!mnt) return Error::fromErrno(where + ": tmpcopyup: fsmount()");
    UniqueFd top(openat(mnt.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!top) return Error::fromErrno(where + ": tmpcopyup: open the tmpfs");
    if (auto s =
            inContainerCgroups(cgroup_dirs, where + ": tmpcopyup", {source, top.get()},
                               [&] { return copyTree(source, top.get(), ids, as_root, where, 0); });
        !s)
        return s.error();
    if (as_root && fchown(top.get(), copyOwner(source_st.st_uid, ids, true),
                          copyOwner(source_st.st_gid, ids, false)) < 0)
        return Error::fromErrno(where + ": tmpcopyup: chown the tmpfs");
    // The image directory's mode, unless the options ask one.
    if (!namesOption(m.data, "mode=") && fchmod(top.get(), source_st.st_mode & 01777) < 0)
        return Error::fromErrno(where + ": tmpcopyup: chmod the tmpfs");
    if (attrs & MOUNT_ATTR_RDONLY) {
        mount_attr attr{};
        attr.attr_set = MOUNT_ATTR_RDONLY;
        if (ns::sysMountSetattr(mnt.get(), "", AT_EMPTY_PATH, &attr) < 0)
            return Error::fromErrno(where + ": tmpcopyup: make the tmpfs read-only");
    }
    return mnt;
}

bool beneath(const std::string& path, const std::string& dir) {
    return dir == "/" || path == dir || path.starts_with(dir + "/");
}

unsigned mountAttrsOf(unsigned long flags) {
    return ns::mountAttrsOfFlags(flags);
}

}  // namespace

std::string pingGroupRangeOnHost(const std::string& value, const ns::IdMapping& ids) {
    std::istringstream in(value);
    int64_t low = 0, high = 0;
    std::string rest;
    if (!(in >> low >> high) || (in >> rest) || low < 0 || high < low) return value;
    // Several ranges: the first, in the map's order, that holds any gid
    // asked, for as many of them as it holds.
    for (const ns::IdRange& r : ids.gid_ranges) {
        const int64_t lo = std::max<int64_t>(low, r.inside);
        const int64_t hi = std::min<int64_t>(high, int64_t{r.inside} + r.count - 1);
        if (lo <= hi)
            return std::to_string(lo - r.inside + r.outside) + " " +
                   std::to_string(hi - r.inside + r.outside);
    }
    if (!ids.gid_ranges.empty()) return "1 0";
    // The container's gids: 0..count-1 from the block's base, or its one gid.
    int64_t first = ids.count > 1 ? 0 : ids.inside_gid;
    int64_t last = ids.count > 1 ? ids.count - 1 : ids.inside_gid;
    int64_t base = static_cast<int64_t>(ids.host_gid) - ids.inside_gid;
    low = std::max(low, first);
    high = std::min(high, last);
    if (low > high) return "1 0";
    return std::to_string(low + base) + " " + std::to_string(high + base);
}

Status prepareJoinedNamespaces(ContainerPlan& planned) {
    // Made here, in the joined namespace: a sysfs shows the network devices
    // of the namespace its mounter is in, an mqueue the queues of its ipc
    // namespace.
    auto make = [&](const char* fstype, size_t index, unsigned attrs) -> Status {
        const std::string what = std::string("mount ") + fstype;
        UniqueFd fs(static_cast<int>(syscall(SYS_fsopen, fstype, FSOPEN_CLOEXEC)));
        if (!fs) return Error::fromErrno(what + ": fsopen(\"" + fstype + "\")");
        if (syscall(SYS_fsconfig, fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0)
            return Error::fromErrno(what + ": fsconfig(FSCONFIG_CMD_CREATE)");
        UniqueFd mnt(static_cast<int>(syscall(SYS_fsmount, fs.get(), FSMOUNT_CLOEXEC, attrs)));
        if (!mnt) return Error::fromErrno(what + ": fsmount()");
        planned.plan.mounts.ops[index].prepared_fd = mnt.get();
        planned.plan.prepared.push_back(std::move(mnt));
        return okStatus();
    };
    for (const auto& [index, attrs] : planned.joined_net_sysfs)
        if (auto s = make("sysfs", index, attrs); !s) return s;
    for (const auto& [index, attrs] : planned.joined_ipc_mqueue)
        if (auto s = make("mqueue", index, attrs); !s) return s;
    std::vector<JoinedProc> procs;
    std::vector<std::string> where;
    for (const auto& [index, proc] : planned.joined_pid_proc) {
        procs.push_back(proc);
        where.push_back(planned.plan.mounts.ops[index].description);
    }
    int pidns_fd = -1;
    for (const auto& [fd, type] : planned.joins)
        if (type == CLONE_NEWPID) pidns_fd = fd.get();
    auto made = mountJoinedProcs(procs, where, pidns_fd);
    if (!made) return made.error();
    for (size_t i = 0; i < made->size(); ++i) {
        planned.plan.mounts.ops[planned.joined_pid_proc[i].first].prepared_fd = (*made)[i].get();
        planned.plan.prepared.push_back(std::move((*made)[i]));
    }
    for (const auto& [key, value] : planned.joined_net_sysctls) {
        std::string path = "/proc/sys/" + key;
        for (size_t i = 10; i < path.size(); ++i)
            if (path[i] == '.') path[i] = '/';
        std::string text =
            key == "net.ipv4.ping_group_range" ? pingGroupRangeOnHost(value, planned.ids) : value;
        UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!fd || write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
            return Error::fromErrno("config.json: linux.sysctl." + key + ": write(\"" + path +
                                    "\")");
    }
    return okStatus();
}

Result<ns::IdMapping> idsFromRanges(const Config& config, const CallerRanges& uids,
                                    const CallerRanges& gids) {
    const std::string field = "config.json: linux.uidMappings and gidMappings: ";
    if (uids.empty() || gids.empty())
        return Error::message(field +
                              "several ranges can be written only by uid 0 of a user namespace "
                              "that maps several ids (rootless podman's); this caller maps one");
    ns::IdMapping ids{config.uid, 0, config.gid, 0, 1};
    for (auto [given, caller, ranges, what, id] :
         {std::tuple{&config.uid_mappings, &uids, &ids.uid_ranges, "uid", config.uid},
          std::tuple{&config.gid_mappings, &gids, &ids.gid_ranges, "gid", config.gid}}) {
        // The kernel's own bounds, said before it refuses them with EINVAL.
        if (given->size() > 340) return Error::message(field + "more than 340 " + what + " ranges");
        for (size_t i = 0; i < given->size(); ++i) {
            const IdMap& m = (*given)[i];
            const std::string which = field + what + " range " + std::to_string(i) + " (" +
                                      std::to_string(m.container_id) + " " +
                                      std::to_string(m.host_id) + " " + std::to_string(m.size) +
                                      ")";
            const uint64_t first = m.host_id, end = first + m.size;
            if (m.size == 0 || uint64_t{m.container_id} + m.size > UINT32_MAX)
                return Error::message(which + ": empty, or past the last id");
            // The kernel takes a line only within one range of the writer's
            // own map: a line across two is refused (EINVAL) as one past it.
            if (std::none_of(caller->begin(), caller->end(), [&](const auto& r) {
                    return first >= r.first && end <= r.first + r.second;
                }))
                return Error::message(which +
                                      ": not within one range of the ids this caller's "
                                      "namespace maps");
            for (size_t j = 0; j < i; ++j) {
                const IdMap& o = (*given)[j];
                if (m.container_id < uint64_t{o.container_id} + o.size &&
                    o.container_id < uint64_t{m.container_id} + m.size)
                    return Error::message(which + ": overlaps range " + std::to_string(j) +
                                          " inside the container");
                if (first < uint64_t{o.host_id} + o.size && o.host_id < end)
                    return Error::message(which + ": overlaps range " + std::to_string(j) +
                                          " in the caller's namespace");
            }
            ranges->push_back({m.container_id, m.host_id, m.size});
        }
        if (!ns::outsideIdOf(*ranges, id))
            return Error::message(field + "process.user." + what + " " + std::to_string(id) +
                                  " is not mapped");
    }
    ids.host_uid = *ns::outsideIdOf(ids.uid_ranges, config.uid);
    ids.host_gid = *ns::outsideIdOf(ids.gid_ranges, config.gid);
    return ids;
}

Result<ns::IdMapping> idsFor(const Config& config, bool as_root, uid_t caller_uid, gid_t caller_gid,
                             uint32_t leased_first, uint32_t leased_width) {
    const uid_t uid = config.uid;
    const gid_t gid = config.gid;
    if (config.uid_mappings.empty() != config.gid_mappings.empty())
        return Error::message(
            "config.json: linux.uidMappings and linux.gidMappings: give both or "
            "neither");
    if (config.uid_mappings.empty()) {
        if (!as_root) {
            const uint32_t width = caller_uid == 0 && caller_gid == 0 ? callerNamespaceWidth() : 1;
            if (width > 1 && uid < width && gid < width) {
                ns::IdMapping ids{uid, uid, gid, gid, width};
                ids.callers_ranges = true;
                return ids;
            }
            return ns::IdMapping{uid, caller_uid, gid, caller_gid, 1};
        }
        if (leased_width > 1 && uid < leased_width && gid < leased_width)
            return ns::IdMapping{uid, leased_first + uid, gid, leased_first + gid, leased_width};
        // Mapped alone, the id would leave the container without its other
        // ids (its root, the tty group a devpts names): a failure later, in
        // words about something else.
        if (leased_width > 1)
            return Error::message(
                "config.json: process.user." +
                (uid >= leased_width ? "uid " + std::to_string(uid)
                                     : "gid " + std::to_string(gid)) +
                ": as root stockade gives a container ids 0-" + std::to_string(leased_width - 1) +
                ", a block of host ids it leases; an id past " + std::to_string(leased_width - 1) +
                " is not supported yet (a linux.uidMappings and gidMappings block from container "
                "id 0 that holds it is)");
        return ns::IdMapping{uid, leased_first, gid, leased_first, 1};
    }
    if (config.uid_mappings.size() != 1 || config.gid_mappings.size() != 1) {
        if (as_root)
            return Error::message(
                "config.json: linux.uidMappings and gidMappings: more than one range is not "
                "supported yet as root");
        if (caller_uid != 0 || caller_gid != 0 || callerNamespaceWidth() <= 1)
            return idsFromRanges(config, {}, {});
        return idsFromRanges(config, ns::ownMapRanges("uid_map"), ns::ownMapRanges("gid_map"));
    }
    const IdMap& u = config.uid_mappings[0];
    const IdMap& g = config.gid_mappings[0];
    auto covers = [](const IdMap& m, uint32_t id) {
        return id >= m.container_id && id - m.container_id < m.size;
    };
    if (!covers(u, uid))
        return Error::message("config.json: linux.uidMappings: process.user.uid is not mapped");
    if (!covers(g, gid))
        return Error::message("config.json: linux.gidMappings: process.user.gid is not mapped");
    if (u.host_id == 0 || g.host_id == 0)
        return Error::message(
            "config.json: linux.uidMappings: maps host id 0; stockade never runs "
            "a container as host root");
    if (u.size == 1 && g.size == 1) return ns::IdMapping{uid, u.host_id, gid, g.host_id, 1};
    if (!as_root)
        return Error::message(
            "config.json: linux.uidMappings: rootless, only the caller's own "
            "id (size 1) can be mapped");
    if (u.container_id != 0 || g.container_id != 0 || u.size != g.size || u.host_id != g.host_id)
        return Error::message(
            "config.json: linux.uidMappings: a block must start at container id "
            "0 and match linux.gidMappings");
    return ns::IdMapping{uid, u.host_id + uid, gid, g.host_id + gid, u.size};
}

Result<ContainerPlan> planContainer(const Config& config, const std::string& bundle,
                                    const std::vector<std::string>& cgroup_dirs,
                                    const std::string& profile, bool device_rules_held,
                                    const OverlayWork* overlay_work) {
    ContainerPlan out;
    ChildPlan& plan = out.plan;
    const bool as_root = isHostRoot();

    // The ids: as root a leased block, its lock handed to init.
    uint32_t first = 0, width = 0;
    if (as_root && config.uid_mappings.empty()) {
        auto range = idRangeForRoot();
        if (!range) return range.error();
        auto lease = IdLease::acquire(*range);
        if (!lease) return lease.error();
        first = lease->id();
        width = lease->width();
        out.lease_fd = lease->handOver();
        plan.held_by_init_fd = out.lease_fd.get();
    }
    auto ids = idsFor(config, as_root, getuid(), getgid(), first, width);
    if (!ids) return ids.error();
    // Under keep_original_groups the process keeps the caller's own groups,
    // unmapped host groups no map of the container's holds: dropping one
    // would pass a negative permission of the caller's (the review of
    // 2026-12-07), so the namespace denies setgroups there.
    auto setgroups = setgroupsAllowed(
        config.annotations, profile,
        (as_root || ids->callersIds()) && !keepsOriginalGroups(config.annotations));
    if (!setgroups) return setgroups.error();
    ids->setgroups_allowed = *setgroups;
    out.ids = *ids;
    plan.ids = *ids;
    const bool keep_groups = keepsOriginalGroups(config.annotations);
    // The ids of the caller's own namespace: groups as root sets them.
    const bool callers = ids->callersIds();
    out.sets_groups = as_root || (callers && !keep_groups);
    auto groups = hostGroupsFor(config.additional_gids, config.gid, gidExtentsOf(*ids),
                                as_root || (callers && !keep_groups), keep_groups,
                                "config.json: process.user.additionalGids");
    if (!groups) return groups.error();
    out.host_groups = std::move(*groups);
    if (keep_groups)
        out.notes.push_back(std::string(kKeepOriginalGroups) +
                            ": the caller's supplementary groups are kept, "
                            "process.user.additionalGids is not set (as under crun)");

    // Namespaces: the user namespace always (G3: never host root), the
    // mount and pid ones required by the reader, the rest as listed.
    out.clone_flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID;
    plan.bring_up_loopback = false;
    for (const Namespace& n : config.namespaces) {
        int flag = cloneFlagOf(n.type);
        if (!flag) continue;
        if (n.path.empty()) {
            out.clone_flags |= static_cast<uint64_t>(flag);
            if (flag == CLONE_NEWNET) plan.bring_up_loopback = true;
            continue;
        }
        UniqueFd fd(open(n.path.c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd)
            return Error::fromErrno("linux.namespaces (" + n.type + "): open(\"" + n.path + "\")");
        // Judged on the fd that setns(2) is given, not the path again.
        if (ioctl(fd.get(), NS_GET_NSTYPE) != flag)
            return Error::message("config.json: linux.namespaces (" + n.type + "): " + n.path +
                                  " is not a " + n.type + " namespace");
        out.joins.emplace_back(std::move(fd), flag);
    }
    const Namespace* pid = config.findNamespace("pid");
    const bool joined_pid = config.sharesPidNamespace();
    if (joined_pid) {
        auto fd = pid ? openJoinedPidNamespace(pid->path) : openCallersPidNamespace();
        if (!fd) return fd.error();
        out.joins.emplace_back(std::move(*fd), CLONE_NEWPID);
        out.clone_flags &= ~static_cast<uint64_t>(CLONE_NEWPID);
        plan.pid_ns_joined = true;
    }
    plan.hostname = config.hostname;
    plan.domainname = config.domainname.value_or("");
    plan.set_domainname = config.domainname.has_value();
    const Namespace* net = config.findNamespace("network");
    const bool joined_net = net && !net->path.empty();
    const Namespace* ipc = config.findNamespace("ipc");
    const bool joined_ipc = ipc && !ipc->path.empty();
    if (joined_net) {
        // The host's: the caller's own, or that of PID 1 (the caller may
        // itself sit in another): create writes these sysctls as the
        // caller, so they would be the host's.
        struct stat joined {};
        struct stat own {};
        struct stat first {};
        if (stat(net->path.c_str(), &joined) < 0 || stat("/proc/self/ns/net", &own) < 0)
            return Error::fromErrno("linux.namespaces (network): stat(\"" + net->path + "\")");
        const bool init_seen = stat("/proc/1/ns/net", &first) == 0;
        const bool host =
            (joined.st_dev == own.st_dev && joined.st_ino == own.st_ino) ||
            (init_seen && joined.st_dev == first.st_dev && joined.st_ino == first.st_ino);
        for (const auto& [key, value] : config.sysctl)
            if (key.starts_with("net.")) {
                if (host)
                    return Error::message("config.json: linux.sysctl." + key +
                                          ": the joined network namespace is the host's");
                out.joined_net_sysctls.emplace_back(key, value);
            }
    }

    // The image root, bound at the staging directory (/tmp, which the
    // container's ids can always reach: root.path may be closed to them);
    // the bundle's mounts in its order, each target resolved inside the
    // image. A createContainer hook, which runs with the host's tree still
    // the mount namespace's, gets /tmp back as the host's and the built
    // root at root.path (runtime/child/hooks_in_child.h).
    std::string root =
        config.root_path[0] == '/' ? config.root_path : bundle + "/" + config.root_path;
    auto rootfs = resolved(root, "root.path");
    if (!rootfs) return rootfs.error();
    out.rootfs = *rootfs;
    auto held_root = holdHostPath("root.path", *rootfs, false);
    if (!held_root) return held_root.error();
    if (!S_ISDIR(held_root->st.st_mode))
        return Error::message("root.path: " + *rootfs + " is not a directory");
    ns::MountPlan& mounts = plan.mounts;
    mounts.staging = "/tmp";
    mounts.root_source = *rootfs;
    mounts.root_writable = !config.root_readonly;
    // The leased block's root owns the image through an idmapped root where
    // no other host user can reach the image (oci/idmapped_root.h).
    if (as_root && config.uid_mappings.empty() && ids->count > 1) {
        IdmappedRoot idmapped = idmapImageRoot(held_root->get(), *rootfs, *ids, overlay_work);
        if (idmapped.tree.tree) {
            mounts.root_prepared_fd = idmapped.tree.tree.get();
            out.idmapped_root = std::move(idmapped.tree);
        } else {
            out.notes.push_back("root.path: not idmapped (" + idmapped.not_idmapped +
                                "): the container's root writes nothing of the image that "
                                "root owns");
        }
    }
    if (as_root && mounts.root_prepared_fd < 0) {
        UniqueFd tree(
            ns::sysOpenTree(held_root->get(), "",
                            OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE));
        if (!tree)
            return Error::fromErrno("root.path: open_tree(\"" + *rootfs + "\", OPEN_TREE_CLONE)");
        mount_attr attr{};
        attr.propagation = MS_PRIVATE;
        if (ns::sysMountSetattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr) < 0)
            return Error::fromErrno("root.path: mount_setattr(\"" + *rootfs + "\")");
        mounts.root_prepared_fd = tree.get();
        plan.prepared.push_back(std::move(tree));
    } else if (!as_root) {
        mounts.root_dev = held_root->st.st_dev;
        mounts.root_ino = held_root->st.st_ino;
    }

    bool dev_is_tmpfs = false;
    std::vector<MountOp> cgroups_sealed_later;
    // The host directories bound so far, by their mount's index: a later
    // target beneath one is made in it (makeMountTargetInImage).
    std::map<size_t, HeldPath> bound_dirs;
    for (size_t i = 0; i < config.mounts.size(); ++i) {
        const Mount& m = config.mounts[i];
        const std::string where = "mounts[" + std::to_string(i) + "] (" + m.destination + ")";
        if (m.destination == "/") return Error::message(where + ": cannot mount over the root");
        UniqueFd copy_from;
        if (m.tmpcopyup) {
            auto source = tmpcopyupSource(held_root->get(), relative(m.destination), where);
            if (!source) return source.error();
            copy_from = std::move(*source);
        }
        bool in_earlier_mount = false;
        // The innermost earlier mount holding the destination strictly
        // beneath it (the last of the longest): where its target is made.
        std::optional<size_t> holder;
        for (size_t j = 0; j < i; ++j) {
            const std::string& d = config.mounts[j].destination;
            in_earlier_mount = in_earlier_mount || beneath(m.destination, d);
            if (beneath(m.destination, d) && m.destination != d &&
                (!holder || d.size() >= config.mounts[*holder].destination.size()))
                holder = j;
        }
        // A tmpfs asked without mode= over a directory that is there takes
        // that directory's mode, as runc (1.1.8) and crun (1.12) give it: a
        // tmpfs at the image's 0755 /run is not made 1777. Where none is
        // there the tmpfs keeps its own 1777. Beneath an earlier mount the
        // child looks, when it mounts; in the image it is looked at here,
        // before a missing target is made.
        const bool keep_target_mode =
            m.type == "tmpfs" && !m.bind && !namesOption(m.data, "mode=") &&
            (in_earlier_mount || directoryInImage(held_root->get(), relative(m.destination)));
        auto bound_dir = holder ? bound_dirs.find(*holder) : bound_dirs.end();
        if (as_root && (!in_earlier_mount || bound_dir != bound_dirs.end())) {
            bool is_dir = true;
            if (m.bind) {
                std::string source = m.source[0] == '/' ? m.source : bundle + "/" + m.source;
                struct stat st {};
                is_dir = stat(source.c_str(), &st) < 0 || S_ISDIR(st.st_mode);
            }
            Status made = okStatus();
            if (!in_earlier_mount) {
                made = makeMountTargetInImage(held_root->get(), relative(m.destination), is_dir,
                                              where);
            } else {
                // Beneath the earlier bind of a host directory: relative to
                // its destination, in its source.
                const std::string& d = config.mounts[*holder].destination;
                const std::string below = m.destination.substr(d == "/" ? 1 : d.size() + 1);
                made = makeMountTargetInImage(
                    bound_dir->second.get(), below, is_dir, where,
                    "mounts[" + std::to_string(*holder) + "]'s source " + bound_dir->second.path);
            }
            if (!made) return made.error();
        }
        if (m.bind) {
            std::string source = m.source[0] == '/' ? m.source : bundle + "/" + m.source;
            auto path = resolved(source, where + ".source");
            if (!path) return path.error();
            auto held = holdHostPath(where + ".source", *path, false);
            if (!held) return held.error();
            if (S_ISDIR(held->st.st_mode)) bound_dirs[i] = *held;
            if (!m.slave.empty() && S_ISDIR(held->st.st_mode))
                return Error::message(where + ".options: propagation \"" + m.slave +
                                      "\" of a directory is not supported (every mount is "
                                      "private)");
            if (auto s = addHeldBind(plan, *held,
                                     {.target = relative(m.destination),
                                      .target_is_dir = S_ISDIR(held->st.st_mode),
                                      .writable = !(m.flags & MS_RDONLY),
                                      .recursive = m.recursive,
                                      .flags = m.flags & (MS_NODEV | MS_NOEXEC | MS_NOSYMFOLLOW),
                                      .resolve_in_root = true,
                                      .description = "mount " + *path + " at " + m.destination});
                !s)
                return s.error().withContext(where);
            continue;
        }
        if (m.type == "cgroup" || m.type == "cgroup2") {
            if (auto s = addCgroupMount(plan, m, cgroup_dirs, where, cgroups_sealed_later); !s)
                return s.error();
            continue;
        }
        // Not the container's own network namespace (joined by path, or
        // none listed: the caller's): its user namespace may not mount a
        // sysfs of it, so create does (prepareJoinedNetwork).
        if (m.type == "sysfs" && (joined_net || !net)) {
            ns::addOp(mounts, {.kind = MountKind::AttachPrepared,
                               .target = relative(m.destination),
                               .resolve_in_root = true,
                               .description = "mount sysfs at " + m.destination});
            out.joined_net_sysfs.emplace_back(mounts.ops.size() - 1, mountAttrsOf(m.flags));
            continue;
        }
        // A pid namespace joined by path: its proc is create's to mount
        // (oci/pid_join.h).
        if (m.type == "proc" && joined_pid) {
            ns::addOp(mounts, {.kind = MountKind::AttachPrepared,
                               .target = relative(m.destination),
                               .resolve_in_root = true,
                               .description = "mount proc at " + m.destination});
            out.joined_pid_proc.emplace_back(mounts.ops.size() - 1,
                                             JoinedProc{mountAttrsOf(m.flags), m.data});
            continue;
        }
        if (m.type == "mqueue" && (joined_ipc || !ipc)) {
            ns::addOp(mounts, {.kind = MountKind::AttachPrepared,
                               .target = relative(m.destination),
                               .resolve_in_root = true,
                               .description = "mount mqueue at " + m.destination});
            out.joined_ipc_mqueue.emplace_back(mounts.ops.size() - 1, mountAttrsOf(m.flags));
            continue;
        }
        // The tmpfs is made before the clone, by root of the host or of a
        // user namespace of its own (rootless podman's), never by an
        // unprivileged caller.
        const bool privileged = geteuid() == 0;
        if (copy_from && !privileged)
            return Error::message(where +
                                  ".options: tmpcopyup of a directory that holds files in the "
                                  "image is supported only as root yet (the tmpfs is made "
                                  "before the clone)");
        if (copy_from) {
            struct stat st {};
            if (fstat(copy_from.get(), &st) < 0)
                return Error::fromErrno(where + ": tmpcopyup: fstat()");
            auto tmpfs =
                copiedTmpfs(m, copy_from.get(), st, out.ids, privileged, cgroup_dirs, where);
            if (!tmpfs) return tmpfs.error();
            ns::addOp(mounts, {.kind = MountKind::AttachPrepared,
                               .target = relative(m.destination),
                               .prepared_fd = tmpfs->get(),
                               .resolve_in_root = true,
                               .description = "mount a tmpfs (tmpcopyup) at " + m.destination});
            plan.prepared.push_back(std::move(*tmpfs));
            continue;
        }
        if (m.destination == "/dev" && m.type == "tmpfs") dev_is_tmpfs = true;
        std::string data = m.type == "tmpfs" ? rootOwnedTmpfs(m.data, out.ids) : m.data;
        if (m.type == "devpts") {
            std::string dropped;
            data = devptsOwnersMapped(data, out.ids, dropped);
            if (!dropped.empty())
                out.notes.push_back("config.json: mounts (" + m.destination +
                                    ").options: " + dropped +
                                    " left out: the container's user namespace does not map "
                                    "that id (as runc leaves it out rootless)");
        }
        ns::addOp(mounts, {.kind = MountKind::Filesystem,
                           .source = m.source.empty() ? m.type : m.source,
                           .target = relative(m.destination),
                           .data = data,
                           .fstype = m.type,
                           .flags = m.flags,
                           .resolve_in_root = true,
                           .keep_target_mode = keep_target_mode,
                           .description = "mount " + m.type + " at " + m.destination});
    }
    for (MountOp& op : cgroups_sealed_later) ns::addOp(mounts, std::move(op));
    // A /dev of the bundle's own (a tmpfs) gets the default devices and links.
    if (dev_is_tmpfs) {
        ns::addDefaultDevices(mounts, /*resolve_in_root=*/true);
        const std::pair<const char*, const char*> links[] = {
            {"dev/ptmx", "pts/ptmx"},          {"dev/fd", "/proc/self/fd"},
            {"dev/stdin", "/proc/self/fd/0"},  {"dev/stdout", "/proc/self/fd/1"},
            {"dev/stderr", "/proc/self/fd/2"}, {"dev/core", "/proc/kcore"}};
        // /dev/core only where the kernel has a /proc/kcore (runc's rule):
        // elsewhere it would be a dangling link.
        const bool kcore = access("/proc/kcore", F_OK) == 0;
        for (const auto& [target, to] : links)
            if (kcore || strcmp(target, "dev/core") != 0)
                ns::addOp(mounts, {.kind = MountKind::Symlink,
                                   .target = target,
                                   .data = to,
                                   .resolve_in_root = true,
                                   .description = std::string("link /") + target});
    }
    // linux.devices: the host's nodes bound in (oci/devices.h), after the
    // /dev they land in.
    auto devices =
        planDevices(config.devices, config.resources.device_rules, dev_is_tmpfs, device_rules_held);
    if (!devices) return devices.error();
    plan.reopen_null_stdio = dev_is_tmpfs;
    plan.every_port = false;
    for (const DeviceBind& d : devices->binds)
        if (auto s =
                addHeldBind(plan, d.node,
                            {.target = relative(d.target),
                             .target_is_dir = false,
                             .writable = true,
                             .recursive = false,
                             .resolve_in_root = true,
                             .description = "bind the host's " + d.node.path + " at " + d.target});
            !s)
            return s.error();
    out.notes.insert(out.notes.end(), devices->notes.begin(), devices->notes.end());
    if (!config.rootfs_slave.empty())
        out.notes.push_back("config.json: linux.rootfsPropagation: \"" + config.rootfs_slave +
                            "\" taken as private (a mount the host makes later beneath the "
                            "root does not reach the container)");
    // Sysctls in the container's own /proc/sys, before readonlyPaths can
    // make it read-only.
    for (const auto& [key, value] : config.sysctl) {
        if (joined_net && key.starts_with("net.")) continue;
        std::string path = "proc/sys/" + key;
        for (char& c : path)
            if (c == '.') c = '/';
        // One this kernel lacks, in words podman reads as runc's (127).
        if (access(("/" + path).c_str(), F_OK) < 0 && errno == ENOENT)
            return Error::message("config.json: linux.sysctl: " + key + ": open /" + path +
                                  ": no such file or directory (this kernel has no such sysctl)");
        ns::addOp(mounts, {.kind = MountKind::File,
                           .target = path,
                           .data = value,
                           .resolve_in_root = true,
                           .description = "set the sysctl " + key});
    }
    for (const std::string& path : config.masked_paths)
        ns::addOp(mounts, {.kind = MountKind::MaskWithTmpfs,
                           .target = relative(path),
                           .optional = true,
                           .resolve_in_root = true,
                           .description = "mask " + path});
    for (const std::string& path : config.readonly_paths)
        ns::addOp(mounts, {.kind = MountKind::ReadOnlyInPlace,
                           .target = relative(path),
                           .optional = true,
                           .resolve_in_root = true,
                           .description = "make " + path + " read-only"});

    // The command as PID 1 of a pid namespace of its own, beneath init's,
    // as runc's is its container's PID 1 (ChildPlan::command_pid_ns); not
    // in a joined one (runc's command is no PID 1 there either), nor where
    // a proc of the root could not be made again (then it is PID 2, and
    // init judges signals for it: command_signals_in_child.h).
    const bool own_pid_ns = (out.clone_flags & CLONE_NEWPID) && !plan.pid_ns_joined;
    plan.command_pid_ns = own_pid_ns && ns::procRemountable(mounts);
    if (own_pid_ns && !plan.command_pid_ns)
        out.notes.push_back(
            "config.json: mounts: a mount at or beneath a proc that the command could not make "
            "again on its own /proc (a host bind, a mount over it, a path spelled with . or .. "
            "or a trailing slash): the command is PID 2 of the container's pid namespace, "
            "stockade's init standing in for PID 1 (docs/oci.md)");
    // process.cwd made where the root lacks it, as runc makes it (0755)
    // once the bundle's mounts are in place and before the root is sealed:
    // a Kubernetes workingDir or an image's WorkingDir need not be there.
    // Made in the root as the container sees it, through none of its links
    // out of it (MountOp::resolve_in_root). Not a mount: after the test of
    // the proc mounts above, which it could only spoil.
    // As root the container's ids may own nothing of the image (a root not
    // idmapped, under a path others may search), while runc's init makes
    // the directory as root: `create` makes it first, in the image or in
    // the host directory of the innermost bind above it, as a mount target
    // is made; beneath any other mount (a tmpfs) the container makes it.
    // Where this cannot (a component a file, a link out of the root), the
    // container's own attempt below says why, in its words (ELOOP for a
    // magic link), as before.
    if (as_root && !relative(config.cwd).empty()) {
        std::optional<size_t> holder;
        for (size_t j = 0; j < config.mounts.size(); ++j) {
            const std::string& d = config.mounts[j].destination;
            if (beneath(config.cwd, d) &&
                (!holder || d.size() >= config.mounts[*holder].destination.size()))
                holder = j;
        }
        auto bound_dir = holder ? bound_dirs.find(*holder) : bound_dirs.end();
        if (!holder) {
            (void)makeMountTargetInImage(held_root->get(), relative(config.cwd), true,
                                         "process.cwd");
        } else if (bound_dir != bound_dirs.end() &&
                   config.cwd != config.mounts[*holder].destination) {
            const std::string& d = config.mounts[*holder].destination;
            (void)makeMountTargetInImage(
                bound_dir->second.get(), config.cwd.substr(d == "/" ? 1 : d.size() + 1), true,
                "process.cwd",
                "mounts[" + std::to_string(*holder) + "]'s source " + bound_dir->second.path);
        }
    }
    if (!relative(config.cwd).empty())
        ns::addOp(mounts, {.kind = MountKind::Directory,
                           .target = relative(config.cwd),
                           .resolve_in_root = true,
                           .description = "make the working directory " + config.cwd});

    // The process.
    fill(config.args, plan.argv_storage, plan.argv);
    // HOME from the image's /etc/passwd when the spec names none, as runc
    // and crun set it (the CRI plugin and ctr leave it to the runtime). Read
    // from the image before the bundle's mounts, where runc reads it after.
    std::vector<std::string> env = config.env;
    if (!envHasHome(env))
        addHomeIfMissing(env, config.uid, readImagePasswd(held_root->get()));
    else
        keepLastHome(env);
    fill(env, plan.env_storage, plan.envp);
    plan.search_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for (const std::string& e : config.env)
        if (e.starts_with("PATH=")) plan.search_path = e.substr(5);
    plan.workdir = config.cwd;
    plan.exec_path_storage.assign(PATH_MAX, '\0');
    // stdio: the inherited fds themselves, so EOF on stdin reaches the
    // container and its output goes where the caller's shim reads it.
    plan.stdin_null = false;
    plan.stdout_fd = 1;
    plan.stderr_fd = 2;
    plan.console_rows = config.console_rows;
    plan.console_cols = config.console_cols;
    plan.die_with_parent = false;
    plan.container_signals = true;
    for (const Rlimit& r : config.rlimits) plan.rlimits.push_back({r.resource, {r.soft, r.hard}});
    if (config.personality) plan.personality = static_cast<long>(*config.personality);
    std::ifstream last("/proc/sys/kernel/cap_last_cap");
    if (!(last >> plan.last_cap)) plan.last_cap = 63;
    // The spec's capabilities, in the container's user namespace only;
    // those this kernel lacks are left out, as runc leaves them.
    const bool idmapped_root = out.idmapped_root.tree.valid();
    const Config::CapabilityMasks caps =
        idmapped_root ? withoutFileCapabilitySetting(config.capabilities) : config.capabilities;
    const uint64_t known =
        plan.last_cap >= 63 ? ~uint64_t{0} : (uint64_t{1} << (plan.last_cap + 1)) - 1;
    plan.keep_capabilities = true;
    plan.capabilities = {caps.bounding & known, caps.effective & known, caps.permitted & known,
                         caps.inheritable & known, caps.ambient & known};
    if (idmapped_root && (config.capabilities.bounding & (uint64_t{1} << CAP_SETFCAP)))
        out.notes.push_back(
            "process.capabilities: CAP_SETFCAP left out: the root is idmapped, so a file "
            "capability the container's root wrote would name disk root and hold on the host");

    // Seccomp as the spec asks: none without linux.seccomp (as runc), else
    // the bundle's, compiled here; either way nothing may mint setuid files.
    auto program = seccompProgramFor(config, profile, {mayRemount(config), idmapped_root});
    if (!program) return program.error();
    plan.seccomp_program = std::move(*program);
    return out;
}

bool mayRemount(const Config& config) {
    return config.capabilities.bounding & (uint64_t{1} << CAP_SYS_ADMIN);
}

namespace {

// The spec's policy as stockade installs it: the bundle's with the no-setid
// rules, and where the process may remount, the mount refusals too (over an
// allow-everything policy where the bundle has none).
Result<seccomp::SeccompPolicy> specPolicy(const Config& config, bool may_remount) {
    seccomp::SeccompPolicy policy;
    if (config.seccomp) {
        policy = *config.seccomp;
        if (auto s = seccomp::checkNoSetidRulesHold(policy); !s)
            return s.error().withContext("config.json: linux.seccomp");
        seccomp::addNoSetidRules(policy);
    } else {
        // No filter asked: everything allowed but what follows.
        policy.default_action = seccomp::Action::Allow;
        policy.default_errno = 0;
    }
    if (may_remount) {
        if (auto s = seccomp::checkNoRemountWritableRulesHold(policy); !s)
            return s.error().withContext("config.json: linux.seccomp");
        seccomp::addNoRemountWritableRules(policy);
    }
    return policy;
}

Result<DenialPlan> planOwnDenials(const Config& config, const std::string& profile,
                                  ChildPlan& plan) {
    DenialPlan out;
    plan.seccomp_notified_program.clear();
    if (!config.seccomp && profile.empty()) return out;
    if (config.seccomp && !profile.empty()) {
        // Which of the two chained filters refused a call, and so which
        // errno to answer, is not told by the notification; a wrong errno
        // would change what the container sees. Left to the kernel.
        out.not_counted =
            "the spec's filter chained before stockade's default: refusals are answered by the "
            "kernel, not counted";
        return out;
    }
    if (!config.seccomp) {
        auto notified = seccomp::defaultNotifiedProgram();
        plan.seccomp_notified_program.assign(notified.begin(), notified.end());
        return out;
    }
    auto specced = specPolicy(config, mayRemount(config));
    if (!specced) return specced.error();
    seccomp::SeccompPolicy policy = std::move(*specced);
    // The command calls sendmsg and close under the filter before anyone
    // answers: a policy refusing them would block it for good.
    if (auto s = seccomp::checkDenialsReportable(policy); !s) {
        out.not_counted = s.error().text();
        return out;
    }
    auto notified = seccomp::compileFilter(seccomp::withNotifiedDenials(policy));
    if (!notified) return notified.error().withContext("config.json: linux.seccomp, notified");
    plan.seccomp_notified_program = std::move(notified->program);
    out.source = std::make_shared<const seccomp::SeccompPolicy>(std::move(policy));
    return out;
}

Result<std::vector<sock_filter>> ownSeccompProgram(const Config& config, const std::string& profile,
                                                   bool may_remount) {
    std::vector<sock_filter> spec;
    if (config.seccomp || may_remount) {
        auto policy = specPolicy(config, may_remount);
        if (!policy) return policy.error();
        auto compiled = seccomp::compileFilter(*policy);
        if (!compiled) return compiled.error().withContext("config.json: linux.seccomp");
        spec = std::move(compiled->program);
    }
    if (profile.empty()) return spec;
    // The spec's filter first, so that what it refuses gets its own answer;
    // what it lets through, stockade's default decides.
    auto defaults = seccomp::defaultProgram();
    auto chained =
        seccomp::chainPrograms(spec, std::vector<sock_filter>(defaults.begin(), defaults.end()));
    if (!chained) return chained.error().withContext("config.json: linux.seccomp");
    return chained;
}

}  // namespace

Config::CapabilityMasks withoutFileCapabilitySetting(Config::CapabilityMasks caps) {
    const uint64_t setfcap = uint64_t{1} << CAP_SETFCAP;
    for (uint64_t* set :
         {&caps.bounding, &caps.effective, &caps.inheritable, &caps.permitted, &caps.ambient})
        *set &= ~setfcap;
    return caps;
}

Result<DenialPlan> planDenials(const Config& config, const std::string& profile, bool idmapped_root,
                               ChildPlan& plan) {
    auto out = planOwnDenials(config, profile, plan);
    if (!out || !idmapped_root || plan.seccomp_notified_program.empty()) return out;
    auto guarded = seccomp::withPrivilegedFileGuard(plan.seccomp_notified_program);
    if (!guarded) return guarded.error().withContext("config.json: linux.seccomp, notified");
    plan.seccomp_notified_program = std::move(*guarded);
    return out;
}

Result<std::vector<sock_filter>> seccompProgramFor(const Config& config, const std::string& profile,
                                                   ProcessGuards guards) {
    auto own = ownSeccompProgram(config, profile, guards.may_remount);
    if (!own || !guards.idmapped_root) return own;
    auto guarded = seccomp::withPrivilegedFileGuard(*own);
    if (!guarded) return guarded.error().withContext("config.json: linux.seccomp");
    return guarded;
}

}  // namespace stockade::oci
