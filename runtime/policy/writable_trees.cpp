#include "runtime/policy/writable_trees.h"

#include <fcntl.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string_view>

#include "base/unique_fd.h"
#include "runtime/policy/sandbox_path.h"

namespace stockade {

namespace {

// /proc/self/mountinfo whole ("" where it cannot be read: then only the
// lexical judgement applies).
std::string readWhole(const char* path) {
    std::string text;
    UniqueFd fd(open(path, O_RDONLY | O_CLOEXEC));
    if (!fd) return text;
    char buffer[16384];
    for (;;) {
        ssize_t n = read(fd.get(), buffer, sizeof(buffer));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buffer, static_cast<size_t>(n));
    }
    return text;
}

// One line of /proc/self/mountinfo: which filesystem, which of its
// directories is mounted, and where.
struct Mount {
    std::string devno;  // "major:minor"
    std::string root;   // the mounted directory, as a path within the filesystem
    std::string point;  // where it is mounted, in this mount namespace
};

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(const std::string& field) {
    std::string out;
    for (size_t i = 0; i < field.size(); ++i) {
        if (field[i] == '\\' && i + 3 < field.size()) {
            const std::string octal = field.substr(i + 1, 3);
            if (octal.size() == 3 && octal.find_first_not_of("01234567") == std::string::npos) {
                out += static_cast<char>(std::strtol(octal.c_str(), nullptr, 8));
                i += 3;
                continue;
            }
        }
        out += field[i];
    }
    return out;
}

// Split by hand: an istringstream per line costs more than the rest of the
// check together, on every run with a --result.
std::vector<Mount> readMounts() {
    std::vector<Mount> mounts;
    const std::string text = readWhole("/proc/self/mountinfo");
    for (size_t start = 0; start < text.size();) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const std::string_view line(text.data() + start, end - start);
        start = end + 1;
        // id, parent id, major:minor, root, mount point, ...
        std::string_view field[5];
        size_t at = 0, count = 0;
        while (count < 5 && at < line.size()) {
            size_t space = line.find(' ', at);
            if (space == std::string_view::npos) space = line.size();
            field[count++] = line.substr(at, space - at);
            at = space + 1;
        }
        if (count == 5)
            mounts.push_back({std::string(field[2]), unescape(std::string(field[3])),
                              unescape(std::string(field[4]))});
    }
    return mounts;
}

// A canonical path's filesystem and its path within it: through the last
// (topmost) of the deepest mounts that hold it.
struct Place {
    std::string devno;
    std::string within;
};

std::optional<Place> locate(const std::vector<Mount>& mounts, const std::string& path) {
    const Mount* best = nullptr;
    for (const Mount& m : mounts)
        if (isUnder(path, m.point) && (!best || m.point.size() >= best->point.size())) best = &m;
    if (!best) return std::nullopt;
    std::string rest = best->point == "/" ? path : path.substr(best->point.size());
    std::string within = best->root == "/" ? rest : best->root + rest;
    if (within.empty()) within = "/";
    return Place{best->devno, within};
}

}  // namespace

namespace {

// `canonical`: the trees are canonical already (no realpath of each).
std::optional<std::string> writableIn(const std::vector<Mount>& mounts, const std::string& dir,
                                      const std::vector<std::string>& writable,
                                      bool canonical = false) {
    const std::optional<Place> here = locate(mounts, dir);
    for (const std::string& given : writable) {
        char real[PATH_MAX];
        if (!canonical && !realpath(given.c_str(), real)) continue;
        const std::string tree = canonical ? given : std::string(real);
        if (isUnder(dir, tree)) return tree;
        if (!here) continue;
        // The same directories reached another way: a bind mount of a part
        // of the tree, or a mount below the tree (the sandbox's view of the
        // tree is recursive) reached through its own source.
        std::vector<Place> parts;
        if (auto whole = locate(mounts, tree)) parts.push_back(*whole);
        for (const Mount& m : mounts)
            if (isUnder(m.point, tree) && m.point != tree) parts.push_back({m.devno, m.root});
        for (const Place& part : parts)
            if (part.devno == here->devno && isUnder(here->within, part.within)) return tree;
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> writableBy(const std::string& dir,
                                      const std::vector<std::string>& writable) {
    if (writable.empty()) return std::nullopt;
    return writableIn(readMounts(), dir, writable);
}

std::optional<Overlap> overlapOf(const std::string& dir, const std::vector<std::string>& trees) {
    if (trees.empty()) return std::nullopt;
    const std::vector<Mount> mounts = readMounts();
    if (auto tree = writableIn(mounts, dir, trees, true)) return Overlap{*tree, true};
    const std::vector<std::string> one{dir};
    for (const std::string& tree : trees)
        if (writableIn(mounts, tree, one, true)) return Overlap{tree, false};
    return std::nullopt;
}

std::optional<WritableDir> firstWritableBy(const std::vector<std::string>& dirs,
                                           const std::vector<std::string>& writable) {
    if (writable.empty() || dirs.empty()) return std::nullopt;
    const std::vector<Mount> mounts = readMounts();
    for (const std::string& dir : dirs)
        if (auto tree = writableIn(mounts, dir, writable)) return WritableDir{dir, *tree};
    return std::nullopt;
}

}  // namespace stockade
