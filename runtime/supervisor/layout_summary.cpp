#include "runtime/supervisor/layout_summary.h"

#include <sys/mount.h>

namespace stockade {

namespace {

using ns::MountKind;

// "/usr/bin" -> {"usr", "bin"}; nullopt when a component is "." or ".."
// (a path the layout cannot judge without resolving it against files).
std::optional<std::vector<std::string>> components(const std::string& path) {
    if (path.empty() || path[0] != '/') return std::nullopt;
    std::vector<std::string> out;
    size_t at = 0;
    while (at < path.size()) {
        size_t end = path.find('/', at);
        if (end == std::string::npos) end = path.size();
        std::string part = path.substr(at, end - at);
        if (part == "." || part == "..") return std::nullopt;
        if (!part.empty()) out.push_back(std::move(part));
        at = end + 1;
    }
    return out;
}

std::string joined(const std::vector<std::string>& parts, size_t count) {
    if (count == 0) return "/";
    std::string out;
    for (size_t i = 0; i < count; ++i) out += "/" + parts[i];
    return out;
}

// The plan's own link targets ("usr/bin", "../lib") resolved lexically from
// the link's directory; ".." stops at the root, as the kernel's does.
std::vector<std::string> resolveLink(const std::vector<std::string>& link_dir,
                                     const std::string& target) {
    std::vector<std::string> out = target.starts_with("/") ? std::vector<std::string>{} : link_dir;
    size_t at = 0;
    while (at <= target.size()) {
        size_t end = target.find('/', at);
        if (end == std::string::npos) end = target.size();
        std::string part = target.substr(at, end - at);
        if (part == "..") {
            if (!out.empty()) out.pop_back();
        } else if (!part.empty() && part != ".") {
            out.push_back(std::move(part));
        }
        at = end + 1;
    }
    return out;
}

// The deepest entry at or above `parts`: the index into `layout`, -1 for
// the root. A later entry at the same path wins (it was mounted over).
int deepest(const std::vector<LayoutEntry>& layout,
            const std::vector<std::vector<std::string>>& entry_parts,
            const std::vector<std::string>& parts) {
    int best = -1;
    size_t best_depth = 0;
    for (size_t i = 0; i < layout.size(); ++i) {
        const std::vector<std::string>& e = entry_parts[i];
        if (e.size() > parts.size() || e.size() < best_depth) continue;
        bool prefix = true;
        for (size_t k = 0; k < e.size() && prefix; ++k) prefix = e[k] == parts[k];
        if (!prefix) continue;
        best = static_cast<int>(i);
        best_depth = e.size();
    }
    return best;
}

std::optional<LayoutKind> kindOf(const ns::MountOp& op) {
    switch (op.kind) {
        case MountKind::BindFromHost:
        case MountKind::AttachPrepared:
            return op.writable ? LayoutKind::WritableTree : LayoutKind::ReadOnlyTree;
        case MountKind::Filesystem:
            return (op.flags & MS_RDONLY) ? LayoutKind::ReadOnlyTree : LayoutKind::OpaqueTree;
        case MountKind::Tmpfs:
            return op.target == "dev" ? LayoutKind::Devices : LayoutKind::WritableTree;
        case MountKind::Proc:
        case MountKind::Devpts:
        case MountKind::MaskWithNull:  // the host's /dev/null: writes go nowhere, not EROFS
            return LayoutKind::OpaqueTree;
        case MountKind::MaskWithEmptyDir:
        case MountKind::MaskWithTmpfs:
            return LayoutKind::EmptyTree;
        case MountKind::MaskBeneath:
            return op.target_is_dir ? LayoutKind::EmptyTree : LayoutKind::ReadOnlyTree;
        case MountKind::ReadOnlyInPlace:
        case MountKind::ReadOnlyBeneath:
            return LayoutKind::ReadOnlyTree;
        case MountKind::PinBeneath:  // the worktree's own directory, as writable as it was
            return std::nullopt;
        case MountKind::Directory:
            return LayoutKind::Directory;
        case MountKind::File:
        case MountKind::CopyFromHost:
            return LayoutKind::ReadOnlyTree;
        case MountKind::Symlink:
            return LayoutKind::Symlink;
    }
    return std::nullopt;
}

}  // namespace

std::vector<LayoutEntry> summarizeLayout(const ns::MountPlan& plan) {
    std::vector<LayoutEntry> layout;
    // An image root holds what its author put there, writable or not.
    if (!plan.root_source.empty() || plan.root_writable) return layout;
    std::vector<std::vector<std::string>> entry_parts;
    for (const ns::MountOp& op : plan.ops) {
        std::optional<LayoutKind> kind = kindOf(op);
        auto parts = components("/" + op.target);
        if (!kind || !parts) continue;
        // A directory, file or link made inside a mount is that mount's
        // content (a --mount target under /tmp), not the read-only root's.
        bool made_in_place = *kind == LayoutKind::Directory || *kind == LayoutKind::Symlink ||
                             op.kind == MountKind::File || op.kind == MountKind::CopyFromHost;
        if (made_in_place) {
            int above = deepest(layout, entry_parts, *parts);
            LayoutKind parent =
                above < 0 ? LayoutKind::Directory : layout[static_cast<size_t>(above)].kind;
            bool in_root = parent == LayoutKind::Directory || parent == LayoutKind::Devices;
            if (!in_root) continue;
        }
        layout.push_back({joined(*parts, parts->size()), *kind,
                          *kind == LayoutKind::Symlink ? op.data : std::string()});
        entry_parts.push_back(std::move(*parts));
    }
    return layout;
}

std::optional<LayoutAnswer> judgePath(const std::vector<LayoutEntry>& layout,
                                      const std::string& path) {
    auto parts = components(path);
    if (!parts) return std::nullopt;
    std::vector<std::vector<std::string>> entry_parts;
    for (const LayoutEntry& e : layout) entry_parts.push_back(*components(e.path));
    // A few hops at most: the plan's links are the host's /bin -> usr/bin.
    for (int hop = 0; hop < 8; ++hop) {
        int at = deepest(layout, entry_parts, *parts);
        if (at < 0) return LayoutAnswer{LayoutKind::Directory, "/"};
        const LayoutEntry& e = layout[static_cast<size_t>(at)];
        if (e.kind != LayoutKind::Symlink) return LayoutAnswer{e.kind, e.path};
        const std::vector<std::string>& link_parts = entry_parts[static_cast<size_t>(at)];
        std::vector<std::string> next =
            resolveLink(std::vector<std::string>(link_parts.begin(), link_parts.end() - 1), e.link);
        next.insert(next.end(), parts->begin() + static_cast<long>(link_parts.size()),
                    parts->end());
        *parts = std::move(next);
    }
    return std::nullopt;
}

}  // namespace stockade
