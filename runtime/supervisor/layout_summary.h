// The sandbox's filesystem layout as its mount plan made it, kept beside the
// outcome so that the record can say when a failure meets a fact of that
// layout (a read-only mount, a name the layout does not hold) without any
// look at the sandbox's files: the plan is the supervisor's own, built
// before the command ran, and nothing the command does can change it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "namespaces/mount_plan.h"

namespace stockade {

enum class LayoutKind {
    ReadOnlyTree,  // a read-only mount: a system directory, /etc's files, a mask
    EmptyTree,     // a read-only mount of an empty directory: a hidden name
    WritableTree,  // /repo, /tmp, /var/tmp, /dev/shm, a :rw --mount
    OpaqueTree,    // /proc, /dev/pts: what the kernel puts there, read-only or not
    Directory,     // made in the read-only root: holds only what the plan put there
    Devices,       // /dev's tmpfs: the nodes and links the plan put there (Landlock, where
                   // the host has it, keeps the command from adding any)
    Symlink,       // in the read-only root, pointing at `link`
};

struct LayoutEntry {
    std::string path;  // absolute inside the sandbox: "/usr", "/dev/null"
    LayoutKind kind = LayoutKind::Directory;
    std::string link;  // Symlink: its target as written
};

// One entry per path the plan placed, in the plan's order (a later entry
// at the same path was mounted over an earlier one). Empty where the plan
// starts from an image root (its contents are the image's, not the plan's).
std::vector<LayoutEntry> summarizeLayout(const ns::MountPlan& plan);

struct LayoutAnswer {
    LayoutKind kind;    // of the entry that decides `path`
    std::string where;  // that entry's path: "/usr", "/" for the root itself
};

// What the layout says of the absolute path `path`: the deepest entry at or
// above it, after the plan's own symlinks (/bin -> usr/bin). Nullopt for a
// path the layout cannot judge: relative, with "." or ".." components, or
// through a symlink that leads out of what the plan made.
std::optional<LayoutAnswer> judgePath(const std::vector<LayoutEntry>& layout,
                                      const std::string& path);

}  // namespace stockade
