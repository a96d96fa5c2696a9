// MountPlan: the filesystem view of one sandbox as an ordered list of
// operations (bubblewrap's model: parsing builds the list, one function
// enforces it). The parent builds the plan, allocating every string it will
// need; the child only walks it (namespaces/mount_in_child.cpp).
#pragma once

#include <string>
#include <vector>

namespace stockade::ns {

enum class MountKind {
    BindFromHost,      // source: a host path opened O_PATH in the child's mount ns
    AttachPrepared,    // source: a detached mount prepared by the parent from a held fd
                       // (the idmapped worktree, a held host path as root); attached at
                       // target, beneath `anchor` when one is set
    Tmpfs,             // a size-limited tmpfs; data = mount options
    Proc,              // a fresh procfs for the sandbox's PID namespace
    Devpts,            // a devpts instance of the sandbox's own; data = mount options
    MaskWithNull,      // host /dev/null bound over a file (Docker's masked paths)
    MaskWithEmptyDir,  // the root's empty (soon read-only) directory `data` bound over a
                       // directory: it hides like Docker's read-only tmpfs, without a
                       // superblock to set up and tear down per masked path
    ReadOnlyInPlace,   // the target re-bound over itself read-only
    ReadOnlyBeneath,   // like ReadOnlyInPlace, but target is resolved beneath `anchor`
                       // without following symlinks out of it (worktree paths)
    MaskBeneath,       // the empty file or directory `data` (in the new root) bound
                       // read-only over target, resolved beneath `anchor` as itself (a
                       // symlink is covered, not followed): a hidden worktree name
    PinBeneath,        // the directory target, resolved beneath `anchor` as itself, bound
                       // over itself as it is: a mount point, which rename(2) and rmdir(2)
                       // refuse (EBUSY) in the sandbox's namespace, so a directory above a
                       // covered worktree name cannot be moved aside with its cover and
                       // the name made anew in its place
    Directory,         // mkdir (resolve_in_root: each missing component, in the image root)
    File,              // a file holding `data` (resolve_in_root: an existing file of the
                       // image root written with `data`, a sysctl)
    CopyFromHost,      // a file copied from the host path `source`: opened with the
                       // BindFromHost sources, copied in the kernel by sendfile(2)
    Symlink,           // a symlink to `data`
    Filesystem,        // a filesystem of type `fstype` from `source` with `flags` and
                       // options `data` (an OCI bundle's proc, sysfs, mqueue, tmpfs...)
    MaskWithTmpfs,     // an OCI maskedPath: an empty read-only tmpfs over a directory,
                       // host /dev/null over anything else (image roots only)
};

struct MountOp {
    MountKind kind = MountKind::Directory;
    std::string source;  // BindFromHost, CopyFromHost: absolute host path
    std::string target;  // relative to the new root ("usr", "repo/.git")
    std::string staged;  // absolute path while assembling: staging + "/" + target
    std::string data;    // tmpfs options, file content or symlink target
    std::string anchor;  // ReadOnlyBeneath, MaskBeneath: relative to the new root ("repo")
    bool target_is_dir = true;
    bool writable = false;
    bool recursive = true;
    bool optional = false;  // a missing source or target is skipped, not an error
    int prepared_fd = -1;   // AttachPrepared: the detached mount (owned by the parent)
    std::string fstype;     // Filesystem: the type given to mount(2)
    // Filesystem: MS_* flags given to mount(2); binds: MS_NODEV and MS_NOEXEC
    // become the mount's attributes (0 for every bind but an OCI bundle's).
    unsigned long flags = 0;
    // The target lies in an image root (MountPlan::root_source) that its
    // author could fill with symlinks: resolved with openat2(RESOLVE_IN_ROOT)
    // against the new root, never as a plain path that could lead out to the
    // host's tree, and mounted on through the fd; a missing mount target is
    // made there first, each component in its parent resolved in the root.
    bool resolve_in_root = false;
    // verify_identity, for two kinds:
    // - ReadOnlyBeneath, MaskBeneath and PinBeneath: the target is opened as itself
    //   (O_NOFOLLOW) and refused (ESTALE) unless it is the file the parent
    //   judged, by device, inode and directory-ness.
    // - BindFromHost of a host path the parent holds open (base/host_path.h)
    //   but cannot clone itself (rootless: open_tree(OPEN_TREE_CLONE) needs
    //   CAP_SYS_ADMIN over the mount namespace, and the child cannot clone a
    //   mount of the parent's namespace): the child opens `source` without
    //   following any symlink and refuses it (ESTALE) unless it is the very
    //   file the parent held, by device and inode.
    bool verify_identity = false;
    unsigned long expect_dev = 0;
    unsigned long expect_ino = 0;
    // Filesystem (a tmpfs asked without mode=): a directory the target
    // resolves to when it is mounted lends the tmpfs its mode ("mode=NNNN"
    // put before `data`); none there, the tmpfs keeps its own.
    bool keep_target_mode = false;
    std::string description;  // for errors: "mount /repo/.git read-only"
};

struct MountPlan {
    std::string staging = "/tmp";  // where the new root is assembled before pivot_root
    std::string root_options;      // options of the root tmpfs
    // An image root instead of the tmpfs (an OCI bundle's root.path): bound
    // recursively at `staging`, from the parent's detached clone
    // (root_prepared_fd, as root) or from this path opened by the child
    // (rootless, verified against root_dev/root_ino like a held bind).
    std::string root_source;
    int root_prepared_fd = -1;
    unsigned long root_dev = 0;
    unsigned long root_ino = 0;
    bool root_writable = false;  // an image root left writable (root.readonly false)
    int root_source_fd = -1;     // scratch for the child: the root's cloned tree
    std::vector<MountOp> ops;
    // Scratch for the child: one slot per op, allocated here so the child
    // never allocates. Holds each BindFromHost source's cloned tree and each
    // CopyFromHost source (O_RDONLY).
    std::vector<int> source_fds;
};

// Appends `op` with its staged path filled in.
void addOp(MountPlan& plan, MountOp op);

// The default devices (null, zero, full, random, urandom, tty; the
// runtime-spec's "Default Devices" too), each bound from the host's /dev into
// the new root's dev/, writable: inside a user namespace no node can be made.
// tty is each process's own controlling terminal, whatever that is: none for
// the command (G7), a pty of the sandbox's for a process that made one its
// controlling terminal; never one of the host's. A host without
// /dev/tty (a minimal container) still runs: the sandbox then has none, as
// such a host has none. `resolve_in_root`: the targets are resolved inside
// an image root (the OCI front end), not made in stockade's own.
void addDefaultDevices(MountPlan& plan, bool resolve_in_root);

// MS_* flags of a mount as the new mount API's MOUNT_ATTR_* (strictatime
// winning over noatime, as mount(2) takes both).
unsigned mountAttrsOfFlags(unsigned long flags) noexcept;
// At most this many procs are made again (remountProcsInChild holds each
// new one's root in a fixed array); a plan with more keeps the command PID 2.
inline constexpr size_t kMaxRemountedProcs = 4;
// Whether op `index` lies at or beneath a proc that an earlier op mounts
// (its target that op's, or below it).
bool underProcTarget(const MountPlan& plan, size_t index) noexcept;
// Whether remountProcsInChild can mount the plan's procs again: each is an
// image root's, and at or beneath each lie only sysctls, masks and
// read-only paths (a host bind, lxcfs's for example, could not be made again once
// the sources are closed), every target spelled one way only (no "." or
// ".." component, no trailing slash: "/./proc/kcore" would be missed
// beneath "proc"), and no later mount over a directory above a proc.
bool procRemountable(const MountPlan& plan) noexcept;

}  // namespace stockade::ns
