#include "oci/idmapped_root.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <linux/stat.h>

#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "base/remove_tree.h"
#include "namespaces/syscalls.h"

namespace stockade::oci {

namespace {

// The last inside id a user namespace maps is 4294967294 ((uid_t)-1 is no id).
constexpr uint64_t kHostRootOnDiskLimit = 4294967295ull;
constexpr uint64_t kHostRootPastBlock = 65536;

std::string procPathOf(int fd) {
    return "/proc/self/fd/" + std::to_string(fd);
}

// Where the fd leads, for messages only.
std::string shownPath(int fd) {
    char buf[4096];
    const ssize_t n = readlink(procPathOf(fd).c_str(), buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?";
}

// Root's, and no one else may search it: not others, not a group but
// root's, and no ACL that could name anyone.
bool closedDirectory(int fd, const struct stat& st) {
    if (st.st_uid != 0 || (st.st_mode & S_IXOTH)) return false;
    if ((st.st_mode & S_IXGRP) && st.st_gid != 0) return false;
    char value[8];
    const ssize_t acl =
        getxattr(procPathOf(fd).c_str(), "system.posix_acl_access", value, sizeof value);
    return acl < 0 && (errno == ENODATA || errno == EOPNOTSUPP);
}

std::string unescapeMountinfo(const std::string& field) {
    std::string out;
    for (size_t i = 0; i < field.size(); ++i) {
        if (field[i] == '\\' && i + 3 < field.size()) {
            const std::string digits = field.substr(i + 1, 3);
            if (digits.size() == 3 && digits.find_first_not_of("01234567") == std::string::npos) {
                out += static_cast<char>(std::stoi(digits, nullptr, 8));
                i += 3;
                continue;
            }
        }
        out += field[i];
    }
    return out;
}

// A layer's path as overlayfs shows it: the string it was given, in which
// a backslash escapes the next character (a ':' or ',' of the path), then
// octal-escaped for mountinfo.
std::string unescapeLayer(const std::string& shown) {
    const std::string raw = unescapeMountinfo(shown);
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '\\' && i + 1 < raw.size()) ++i;
        out += raw[i];
    }
    return out;
}

// "lowerdir=" lists the layers split at each ':' that no backslash escapes.
std::vector<std::string> splitLowers(const std::string& shown) {
    const std::string raw = unescapeMountinfo(shown);
    std::vector<std::string> out;
    std::string cur;
    for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '\\' && i + 1 < raw.size()) {
            cur += raw[++i];
        } else if (raw[i] == ':') {
            out.push_back(std::move(cur));
            cur.clear();
        } else {
            cur += raw[i];
        }
    }
    out.push_back(std::move(cur));
    return out;
}

struct MountLine {
    uint64_t id = 0;
    std::string device;  // major:minor
    std::string root;    // the path within its filesystem that is mounted
    std::string mount_point;
    std::string fstype;
    std::string super_options;
};

std::vector<MountLine> readMountinfo() {
    std::vector<MountLine> out;
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line)) {
        // Fields are split on single spaces: an empty one (an overlay
        // mounted with an empty source) keeps its place.
        std::vector<std::string> w;
        for (size_t start = 0;;) {
            const size_t end = line.find(' ', start);
            w.push_back(line.substr(start, end - start));
            if (end == std::string::npos) break;
            start = end + 1;
        }
        size_t dash = 0;
        while (dash < w.size() && w[dash] != "-") ++dash;
        if (w.size() < 5 || dash + 2 >= w.size()) continue;
        MountLine m;
        m.id = std::stoull(w[0]);
        m.device = w[2];
        m.root = unescapeMountinfo(w[3]);
        m.mount_point = unescapeMountinfo(w[4]);
        m.fstype = w[dash + 1];
        m.super_options = dash + 3 < w.size() ? w[dash + 3] : "";
        out.push_back(std::move(m));
    }
    return out;
}

uint64_t mountIdOf(int fd);

// The filesystem type of the mount holding `fd`, from mountinfo ("" when
// not found).
std::string fsTypeOf(int fd) {
    const uint64_t id = mountIdOf(fd);
    for (const MountLine& m : readMountinfo())
        if (m.id == id) return m.fstype;
    return "";
}

uint64_t mountIdOf(int fd) {
    struct statx stx {};
    if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0 || !(stx.stx_mask & STATX_MNT_ID))
        return 0;
    return stx.stx_mnt_id;
}

bool under(const std::string& path, const std::string& dir) {
    return dir == "/" || path == dir || (path.starts_with(dir) && path[dir.size()] == '/');
}

UniqueFd openOnMount(const std::string& path, uint64_t mount_id, bool& covered);
bool closedFrom(int fd, bool from_parent, std::string& why);

// Another mount of the filesystem of the directory at `fd` (seen at
// `shown`) that shows it, or a part of it, elsewhere too (a bind of a
// directory above it or inside it), where its way is not closed to other
// users as the one judged is: "" when none. Through a mount showing it
// whole, the way is judged from the same directory up (`from_parent`: from
// its parent, as for an image, whose own mode its root may change); through
// one showing a part of it, from that mount's parent up; each way walked
// without following a link (a mount covered on the way shows nothing by
// it, and is passed over). podman's storage
// is a bind of its own directory, seen through "/" as well, the same
// closed way.
std::string shownElsewhere(int fd, const std::string& shown, const std::vector<MountLine>& mounts,
                           bool from_parent) {
    const uint64_t id = mountIdOf(fd);
    const MountLine* own = nullptr;
    for (const MountLine& m : mounts)
        if (m.id == id) own = &m;
    if (!own || !under(shown, own->mount_point)) return shown + " (its mount is not found)";
    struct stat here {};
    if (fstat(fd, &here) < 0) return shown + " (it cannot be looked at)";
    // Its path within the filesystem.
    std::string rest = shown.substr(own->mount_point == "/" ? 0 : own->mount_point.size());
    std::string within = own->root == "/" ? (rest.empty() ? "/" : rest) : own->root + rest;
    std::string why;
    for (const MountLine& m : mounts) {
        if (m.id == id || m.device != own->device) continue;
        if (under(within, m.root)) {
            // It whole, at the path this mount gives it: the same directory
            // (the path is checked to lead to it), closed there too.
            const std::string tail = m.root == "/" ? within : within.substr(m.root.size());
            const std::string at = m.mount_point == "/" ? (tail.empty() ? "/" : tail)
                                   : tail == "/"        ? m.mount_point
                                                        : m.mount_point + tail;
            bool covered = false;
            UniqueFd there = openOnMount(at, m.id, covered);
            if (covered) continue;
            struct stat st {};
            if (there && fstat(there.get(), &st) == 0 && st.st_dev == here.st_dev &&
                st.st_ino == here.st_ino && closedFrom(there.get(), from_parent, why))
                continue;
            return m.mount_point;
        }
        if (under(m.root, within)) {
            // A part of it, shown at this mount's own place.
            bool covered = false;
            UniqueFd there = openOnMount(m.mount_point, m.id, covered);
            if (covered || (there && closedFrom(there.get(), true, why))) continue;
            return m.mount_point;
        }
    }
    return "";
}

// The directory at `path`, reached without following a link: none when it
// cannot be (`covered` false), and none with `covered` when the path ends
// on another mount than `mount_id`: one mounted over the way (podman's
// storage, a bind of its own directory, covers that directory of "/"), so
// that this mount shows nothing there to a path.
UniqueFd openOnMount(const std::string& path, uint64_t mount_id, bool& covered) {
    open_how how{};
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS;
    UniqueFd fd(ns::sysOpenat2(AT_FDCWD, path.c_str(), &how));
    covered = fd && mountIdOf(fd.get()) != mount_id;
    if (covered) return UniqueFd();
    return fd;
}

// Whether the way to the directory held at `fd` is closed to others, from
// it up, or from its parent (its ".." as the mount tree has it) up.
bool closedFrom(int fd, bool from_parent, std::string& why) {
    if (!from_parent) return closedToOthers(fd, why);
    UniqueFd parent(openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    return parent && closedToOthers(parent.get(), why);
}

// Why the image held at `root_fd` may not be idmapped for its links: a
// non-directory with more links than the image holds ("" when every link
// of every file is inside it). Walked without following a link, on the
// image's own filesystem only, bounded: past the bound it is not judged.
// `upper`: the walk is of an overlay's upper directory, whose whiteouts
// (character devices 0:0) overlayfs makes as links of one inode in its
// work directory: never opened through the overlay, so never written, they
// are not counted.
std::string linkedOutside(int root_fd, bool upper = false) {
    constexpr size_t kMaxEntries = 2'000'000;
    std::map<std::pair<dev_t, ino_t>, std::pair<nlink_t, nlink_t>> multi;  // links, seen
    std::map<std::pair<dev_t, ino_t>, std::string> names;
    // Directories waiting, by path below the image: opened when their turn
    // comes (a wide tree would otherwise hold an fd for each).
    std::vector<std::string> pending{""};
    size_t seen = 0;
    while (!pending.empty()) {
        const std::string shown = std::move(pending.back());
        pending.pop_back();
        open_how how{};
        how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV;
        UniqueFd dir(ns::sysOpenat2(root_fd, shown.empty() ? "." : shown.c_str(), &how));
        struct stat here {};
        DIR* d = dir && fstat(dir.get(), &here) == 0 ? fdopendir(dup(dir.get())) : nullptr;
        if (!d) return "the image's /" + shown + " cannot be listed";
        while (dirent* e = readdir(d)) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            if (++seen > kMaxEntries) {
                closedir(d);
                return "more than 2000000 entries: its links not judged";
            }
            struct stat st {};
            if (fstatat(dir.get(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
            const std::string name = shown.empty() ? e->d_name : shown + "/" + e->d_name;
            if (S_ISDIR(st.st_mode)) {
                // A mount beneath is refused apart; RESOLVE_NO_XDEV keeps
                // the walk on the image's own filesystem.
                if (here.st_dev == st.st_dev) pending.push_back(name);
            } else if (upper && S_ISCHR(st.st_mode) && st.st_rdev == 0) {
                continue;
            } else if (st.st_nlink > 1) {
                auto& [links, inside] = multi[{st.st_dev, st.st_ino}];
                links = st.st_nlink;
                ++inside;
                names.emplace(std::make_pair(st.st_dev, st.st_ino), name);
            }
        }
        closedir(d);
    }
    for (const auto& [key, count] : multi)
        if (count.second < count.first)
            return "/" + names[key] + " has a link outside the image (" +
                   std::to_string(count.first) + " links, " + std::to_string(count.second) +
                   " inside)";
    return "";
}

}  // namespace

bool closedToOthers(int dir_fd, std::string& why) {
    UniqueFd cur(openat(dir_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!cur) {
        why = "open(\".\"): " + std::string(strerror(errno));
        return false;
    }
    // Up through "..", as a path from this mount namespace's root reaches
    // it; 4096 steps bound a loop no real tree has.
    for (int depth = 0; depth < 4096; ++depth) {
        struct stat st {};
        if (fstat(cur.get(), &st) < 0) break;
        if (closedDirectory(cur.get(), st)) return true;
        UniqueFd parent(openat(cur.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
        struct stat up {};
        if (!parent || fstat(parent.get(), &up) < 0) break;
        if (up.st_dev == st.st_dev && up.st_ino == st.st_ino) break;  // the root
        cur = std::move(parent);
    }
    why = "no directory on the way to it is root's and closed to other users";
    return false;
}

OverlayLayers overlayLayersOf(const std::string& super_options) {
    OverlayLayers out;
    // Options are split at each ','; one inside a path is octal-escaped.
    size_t start = 0;
    while (start <= super_options.size()) {
        size_t end = super_options.find(',', start);
        if (end == std::string::npos) end = super_options.size();
        const std::string option = super_options.substr(start, end - start);
        start = end + 1;
        const size_t eq = option.find('=');
        const std::string key = option.substr(0, eq);
        const std::string value = eq == std::string::npos ? "" : option.substr(eq + 1);
        if (key == "lowerdir") {
            for (std::string& lower : splitLowers(value))
                if (lower.empty()) {
                    // "::" starts the data-only layers.
                    if (out.unsupported.empty()) out.unsupported = "data-only lower layers";
                } else {
                    out.lowers.push_back(std::move(lower));
                }
        } else if (key == "lowerdir+") {
            out.lowers.push_back(unescapeMountinfo(value));
        } else if (key == "upperdir") {
            out.upper = unescapeLayer(value);
        } else if (key == "workdir") {
            out.work = unescapeLayer(value);
        } else if (key == "rw" || key == "index" || key == "nfs_export" || key.empty()) {
            // Its own: read-write, without the index (its upper directory
            // is in use by the engine's overlay, which the index refuses).
        } else if (key == "redirect_dir" || key == "uuid" || key == "xino" || key == "metacopy" ||
                   key == "verity" || key == "volatile" || key == "fsync" || key == "userxattr" ||
                   key == "default_permissions") {
            out.kept.emplace_back(key, value);
        } else if (out.unsupported.empty()) {
            out.unsupported = "the option " + key;
        }
    }
    return out;
}

std::string overlayUpperDir(int dir_fd) {
    const uint64_t id = mountIdOf(dir_fd);
    if (id == 0) return "";
    for (const MountLine& m : readMountinfo())
        if (m.id == id && m.fstype == "overlay") return overlayLayersOf(m.super_options).upper;
    return "";
}

void removeOverlayWork(const std::string& path) {
    const size_t slash = path.rfind('/');
    if (path.empty() || path[0] != '/' || slash == std::string::npos) return;
    const std::string name = path.substr(slash + 1);
    if (!name.starts_with(kOverlayWorkPrefix)) return;
    UniqueFd parent(
        open(slash == 0 ? "/" : path.substr(0, slash).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (parent) removeTreeAt(parent.get(), name);
}

namespace {

// The container's own overlay over idmapped clones of the engine's layers
// (see the header). `root_fd` is the engine's overlay's root, `upper_parent`
// the upper directory's parent, held. Errors are the reason it is not made;
// the work directory made for it is gone again then (its record stays, for
// removeContainer, which finds nothing).
Result<UniqueFd> remadeOverlay(const OverlayLayers& layers, int upper_parent,
                               const ns::IdMapping& block, const OverlayWork& work) {
    if (!layers.unsupported.empty())
        return Error::message("the overlay's " + layers.unsupported + " is not remade");
    if (layers.lowers.empty() || layers.upper.empty() || layers.work.empty())
        return Error::message("the overlay's layers are not all named");
    // Absolute paths only: containers/storage mounts with layer paths
    // relative to its own directory when the options outgrow a page, and
    // this process's directory is not that one.
    for (const std::string* layer : {&layers.upper, &layers.work})
        if ((*layer)[0] != '/')
            return Error::message("the overlay's layer path " + *layer + " is relative");
    for (const std::string& lower : layers.lowers)
        if (lower[0] != '/')
            return Error::message("the overlay's layer path " + lower + " is relative");
    std::vector<UniqueFd> held;
    for (const std::string& lower : layers.lowers) {
        held.emplace_back(open(lower.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!held.back()) return Error::fromErrno("its lower directory " + lower);
    }
    // The upper directory and the work directory must be on one mount: its
    // parent's clone holds both.
    const size_t slash = layers.upper.rfind('/');
    const std::string upper_name = layers.upper.substr(slash + 1);
    if (upper_name.empty() || upper_name == "." || upper_name == "..")
        return Error::message("the overlay's upper directory " + layers.upper +
                              " is not named by a path this can take");
    struct stat upper_st {};
    UniqueFd upper_held(
        openat(upper_parent, upper_name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!upper_held || fstat(upper_held.get(), &upper_st) < 0)
        return Error::fromErrno("its upper directory " + layers.upper);
    // Recorded before it exists; a stale one (a create killed before its
    // record could be removed) goes first.
    const std::string parent_path = layers.upper.substr(0, slash == 0 ? 1 : slash);
    const std::string work_dir = (slash == 0 ? "" : parent_path) + "/" + work.name;
    if (auto s = work.record(work_dir); !s) return s.error();
    removeTreeAt(upper_parent, work.name);
    if (mkdirat(upper_parent, work.name.c_str(), 0700) < 0)
        return Error::fromErrno("mkdir(\"" + work_dir + "\")");
    struct RemoveUnlessMounted {
        int parent;
        const std::string& name;
        bool mounted = false;
        ~RemoveUnlessMounted() {
            if (!mounted) removeTreeAt(parent, name);
        }
    } work_made{upper_parent, work.name};
    // Each lower directory and the upper one's parent, idmapped alone
    // (nothing mounted beneath a layer is a part of the overlay), through
    // one user namespace.
    std::vector<int> fds;
    std::vector<std::string> paths = layers.lowers;
    for (const UniqueFd& fd : held) fds.push_back(fd.get());
    fds.push_back(upper_parent);
    paths.push_back(parent_path);
    auto trees = ns::makeIdmappedTrees(fds, paths, block);
    if (!trees) return trees.error();
    // The first lower, the rest, then the parent (makeIdmappedTrees' order).
    std::vector<int> lowers{trees->tree.get()};
    for (size_t i = 0; i + 1 < trees->more.size(); ++i) lowers.push_back(trees->more[i].get());
    const int parent_tree = trees->more.back().get();
    UniqueFd upper(
        openat(parent_tree, upper_name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    UniqueFd workdir(
        openat(parent_tree, work.name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat seen {};
    if (!upper || !workdir || fstat(upper.get(), &seen) < 0 || seen.st_dev != upper_st.st_dev ||
        seen.st_ino != upper_st.st_ino)
        return Error::message("its upper directory " + layers.upper + " moved while held");

    UniqueFd fs(ns::sysFsopen("overlay", FSOPEN_CLOEXEC));
    if (!fs) return Error::fromErrno("fsopen(\"overlay\")");
    auto set_fd = [&](const char* key, int fd) {
        return ns::sysFsconfig(fs.get(), FSCONFIG_SET_FD, key, nullptr, fd) == 0;
    };
    auto set_path = [&](const char* key, const std::string& value) {
        return ns::sysFsconfig(fs.get(), FSCONFIG_SET_STRING, key, value.c_str(), 0) == 0;
    };
    auto fd_path = [](int fd) { return "/proc/self/fd/" + std::to_string(fd); };
    // Each layer by its fd (Linux 6.13+); before, by its /proc/self/fd
    // link (this process's own, in the host's /proc), the lower ones in
    // one "lowerdir" option, topmost first, as mountinfo listed them.
    if (set_fd("lowerdir+", lowers.front())) {
        for (size_t i = 1; i < lowers.size(); ++i)
            if (!set_fd("lowerdir+", lowers[i])) return Error::fromErrno("fsconfig(\"lowerdir+\")");
        if (!set_fd("upperdir", upper.get()) || !set_fd("workdir", workdir.get()))
            return Error::fromErrno("fsconfig(\"upperdir\", \"workdir\")");
    } else {
        std::string joined;
        for (const int lower : lowers) joined += (joined.empty() ? "" : ":") + fd_path(lower);
        if (!set_path("lowerdir", joined) || !set_path("upperdir", fd_path(upper.get())) ||
            !set_path("workdir", fd_path(workdir.get())))
            return Error::fromErrno("fsconfig() of the overlay's layers");
    }
    if (ns::sysFsconfig(fs.get(), FSCONFIG_SET_STRING, "index", "off", 0) < 0)
        return Error::fromErrno("fsconfig(\"index=off\")");
    for (const auto& [key, value] : layers.kept) {
        const bool ok =
            value.empty()
                ? ns::sysFsconfig(fs.get(), FSCONFIG_SET_FLAG, key.c_str(), nullptr, 0) == 0
                : ns::sysFsconfig(fs.get(), FSCONFIG_SET_STRING, key.c_str(), value.c_str(), 0) ==
                      0;
        if (!ok) return Error::fromErrno("fsconfig(\"" + key + "\")");
    }
    // overlayfs does its own work (the work directory, every copy-up) with
    // the credentials of whoever made it: made by root, that is host uid 0,
    // which the layers' map does not hold (EOVERFLOW), so the copy-ups
    // would fail. A child makes it as the container's root (its host ids
    // as fsuid and fsgid) with root's capabilities, so that the overlay's
    // writes land on disk as root's, through the same map as the
    // container's own. Only system calls in the child.
    const pid_t child = fork();
    if (child < 0) return Error::fromErrno("fork() for the overlay");
    if (child == 0) {
        syscall(SYS_setfsgid, block.host_gid);
        syscall(SYS_setfsuid, block.host_uid);
        __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct data[2]{};
        if (syscall(SYS_capget, &header, data) < 0) _exit(100);
        data[0].effective = data[0].permitted;
        data[1].effective = data[1].permitted;
        if (syscall(SYS_capset, &header, data) < 0) _exit(101);
        if (static_cast<uid_t>(syscall(SYS_setfsuid, -1)) != block.host_uid) _exit(102);
        _exit(ns::sysFsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == 0 ? 0 : errno);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        // The kernel's own words, from the context's log.
        std::string said;
        char line[512];
        for (ssize_t n; (n = read(fs.get(), line, sizeof line - 1)) > 0;) {
            line[n] = '\0';
            said += std::string(said.empty() ? "" : "; ") + line;
        }
        const int err = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
        return Error::message("mounting the overlay again over its idmapped layers: " +
                              std::string(err > 0 && err < 100 ? strerror(err) : "failed") +
                              (said.empty() ? "" : " (" + said + ")"));
    }
    UniqueFd mnt(ns::sysFsmount(fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
    if (!mnt) return Error::fromErrno("fsmount() of the overlay");
    work_made.mounted = true;
    return mnt;
}

}  // namespace

IdmappedRoot idmapImageRoot(int root_fd, const std::string& path, const ns::IdMapping& ids,
                            const OverlayWork* work) {
    IdmappedRoot out;
    // From the image's parent up: the image root itself is the container's
    // root's to chmod once idmapped, so it cannot be what closes the way.
    std::string why;
    UniqueFd parent(openat(root_fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!parent || !closedToOthers(parent.get(), why)) {
        out.not_idmapped =
            path + ": " + (parent ? why : std::string("its parent cannot be opened"));
        return out;
    }
    // Writes to an overlay land in its upper directory, which is reached
    // by another path: it must be closed to others too, and found. A FUSE
    // filesystem (fuse-overlayfs) keeps its layers where no option says.
    const std::string type = fsTypeOf(root_fd);
    if (type.empty() || type.starts_with("fuse")) {
        out.not_idmapped = path + ": its filesystem (" + (type.empty() ? "unknown" : type) +
                           ") keeps what is written where this cannot judge";
        return out;
    }
    const std::string upper = overlayUpperDir(root_fd);
    if (type == "overlay" && upper.empty()) {
        out.not_idmapped = path + ": an overlay whose upper directory is not named";
        return out;
    }
    // Never judged against this process's own directory: containers/storage
    // mounts with layer paths relative to its own when the options outgrow
    // a page.
    if (!upper.empty() && upper[0] != '/') {
        out.not_idmapped = path + ": the overlay's layer path " + upper + " is relative";
        return out;
    }
    UniqueFd held;  // the upper directory's parent
    if (!upper.empty()) {
        // Its parent up, likewise: a chmod of the container's "/" lands on
        // the upper directory itself.
        held.reset(open((upper + "/..").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!held || !closedToOthers(held.get(), why)) {
            out.not_idmapped = "the overlay's upper directory " + upper + ": " +
                               (held ? why : std::string("cannot be opened"));
            return out;
        }
        if (std::string other =
                shownElsewhere(held.get(), shownPath(held.get()), readMountinfo(), false);
            !other.empty()) {
            out.not_idmapped = "the overlay's upper directory " + upper +
                               ": its filesystem also shows it through the mount at " + other;
            return out;
        }
    }
    // A mount beneath the image (bound there by the host) would be
    // idmapped too, and its own reach is not judged here: none is taken.
    // Nor an image whose filesystem is mounted elsewhere too with the
    // image in it (a bind of a directory above it): a path through that
    // mount is not the way judged above.
    const std::string shown = shownPath(root_fd);
    const std::vector<MountLine> mounts = readMountinfo();
    if (std::string other = shownElsewhere(root_fd, shown, mounts, true); !other.empty()) {
        out.not_idmapped = path + ": its filesystem also shows it through the mount at " + other;
        return out;
    }
    for (const MountLine& m : mounts) {
        if (m.mount_point.size() > shown.size() && m.mount_point.starts_with(shown) &&
            m.mount_point[shown.size()] == '/') {
            out.not_idmapped = path + ": " + m.mount_point + " is mounted beneath it";
            return out;
        }
    }
    ns::IdMapping block{0, ids.host_uid - ids.inside_uid, 0, ids.host_gid - ids.inside_gid,
                        ids.count};
    // Host root writes into a running container's root too: an engine's
    // `podman cp` joins its mount namespace, not its user namespace. Its
    // files land as the first disk id past the block (nobody's inside, as
    // host root is nobody there), where EOVERFLOW refused them; only past
    // a full block of 65536, so that it is never an image's user's id.
    if (ids.count >= kHostRootPastBlock && ids.count < kHostRootOnDiskLimit)
        block.host_root_inside = ids.count;
    if (type == "overlay") {
        const uint64_t id = mountIdOf(root_fd);
        const MountLine* line = nullptr;
        for (const MountLine& m : mounts)
            if (m.id == id) line = &m;
        if (!work) {
            out.not_idmapped = path + ": an overlay, whose layers only create idmaps";
            return out;
        }
        if (!line || line->root != "/" || line->mount_point != shown) {
            out.not_idmapped = path + ": a directory inside an overlay, not its root";
            return out;
        }
        // Writes land in the upper directory alone (a lower file is copied
        // up before it changes): a file there with a link outside it would
        // be rewritten where the link is.
        UniqueFd upper_fd(open(upper.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (std::string linked =
                upper_fd ? linkedOutside(upper_fd.get(), true) : std::string("it cannot be opened");
            !linked.empty()) {
            out.not_idmapped = "the overlay's upper directory " + upper + ": " + linked;
            return out;
        }
        auto remade = remadeOverlay(overlayLayersOf(line->super_options), held.get(), block, *work);
        if (!remade) {
            out.not_idmapped = path + ": " + remade.error().describe();
            return out;
        }
        out.tree.tree = std::move(*remade);
        return out;
    }
    auto tree = ns::makeIdmappedTree(root_fd, path, block);
    if (!tree) {
        out.not_idmapped = tree.error().describe();
        return out;
    }
    // A file of the image with a link outside it (a bundle made by cp -al
    // from a template others reach) would be rewritten there too. Judged
    // once the kernel has taken the idmap (an overlay it refuses costs no
    // walk).
    if (std::string linked = linkedOutside(root_fd); !linked.empty()) {
        out.not_idmapped = path + ": " + linked;
        return out;
    }
    out.tree = std::move(*tree);
    return out;
}

}  // namespace stockade::oci
