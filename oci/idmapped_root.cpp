#include "oci/idmapped_root.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <linux/openat2.h>
#include <linux/stat.h>

#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "namespaces/syscalls.h"

namespace stockade::oci {

namespace {

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

// Another mount of the filesystem of the directory at `fd` (seen at
// `shown`) that shows it, or a part of it, elsewhere too (a bind of a
// directory above it or inside it): there its way is not the one judged.
// "" when none.
std::string shownElsewhere(int fd, const std::string& shown, const std::vector<MountLine>& mounts) {
    const uint64_t id = mountIdOf(fd);
    const MountLine* own = nullptr;
    for (const MountLine& m : mounts)
        if (m.id == id) own = &m;
    if (!own || !under(shown, own->mount_point)) return shown + " (its mount is not found)";
    // Its path within the filesystem.
    std::string rest = shown.substr(own->mount_point == "/" ? 0 : own->mount_point.size());
    std::string within = own->root == "/" ? (rest.empty() ? "/" : rest) : own->root + rest;
    // A mount of a directory above it (which shows it) or inside it (which
    // shows what it holds, where a host user may reach it) alike.
    for (const MountLine& m : mounts)
        if (m.id != id && m.device == own->device &&
            (under(within, m.root) || under(m.root, within)))
            return m.mount_point;
    return "";
}

// Why the image held at `root_fd` may not be idmapped for its links: a
// non-directory with more links than the image holds ("" when every link
// of every file is inside it). Walked without following a link, on the
// image's own filesystem only, bounded: past the bound it is not judged.
std::string linkedOutside(int root_fd) {
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

std::string overlayUpperDir(int dir_fd) {
    const uint64_t id = mountIdOf(dir_fd);
    if (id == 0) return "";
    for (const MountLine& m : readMountinfo()) {
        if (m.id != id || m.fstype != "overlay") continue;
        std::string options = m.super_options;
        size_t start = 0;
        while (start <= options.size()) {
            size_t end = options.find(',', start);
            if (end == std::string::npos) end = options.size();
            const std::string option = options.substr(start, end - start);
            if (option.starts_with("upperdir=")) return unescapeMountinfo(option.substr(9));
            start = end + 1;
        }
    }
    return "";
}

IdmappedRoot idmapImageRoot(int root_fd, const std::string& path, const ns::IdMapping& ids) {
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
    if (!upper.empty()) {
        // Its parent up, likewise: a chmod of the container's "/" lands on
        // the upper directory itself.
        UniqueFd held(open((upper + "/..").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!held || !closedToOthers(held.get(), why)) {
            out.not_idmapped = "the overlay's upper directory " + upper + ": " +
                               (held ? why : std::string("cannot be opened"));
            return out;
        }
        if (std::string other = shownElsewhere(held.get(), shownPath(held.get()), readMountinfo());
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
    if (std::string other = shownElsewhere(root_fd, shown, mounts); !other.empty()) {
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
    const ns::IdMapping block{0, ids.host_uid - ids.inside_uid, 0, ids.host_gid - ids.inside_gid,
                              ids.count};
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
