#include "namespaces/mount_in_child.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <linux/magic.h>

#include "namespaces/call_note_in_child.h"
#include "namespaces/syscalls.h"

namespace stockade::ns {

namespace {

// mkdir -p for a path inside the staging tmpfs, which nothing untrusted can
// touch while the child builds it, so plain paths are safe here.
int makeParentsInChild(const char* path) noexcept {
    char buf[PATH_MAX];
    size_t len = strlen(path);
    if (len >= sizeof(buf)) return ENAMETOOLONG;
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i < len; ++i) {
        if (buf[i] != '/') continue;
        buf[i] = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return noteCallInChild("mkdir").path(buf).arg("0755").done(errno);
        buf[i] = '/';
    }
    return 0;
}

// Runs `create` (which returns 0 or an errno) and, only if a parent is
// missing, makes the parents and runs it again: most targets' parents exist
// already, and a mkdir per path component per op was most of the root's
// system calls.
template <typename Create>
int withParentsInChild(const char* path, Create create) noexcept {
    int err = create();
    if (err != ENOENT) return err;
    if (int parents = makeParentsInChild(path)) return parents;
    return create();
}

int makeTargetInChild(const MountOp& op) noexcept {
    const char* staged = op.staged.c_str();
    return withParentsInChild(staged, [&]() noexcept {
        if (op.target_is_dir)
            return mkdir(staged, 0755) < 0 && errno != EEXIST
                       ? noteCallInChild("mkdir").path(staged).arg("0755").done(errno)
                       : 0;
        int fd = open(staged, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0444);
        if (fd < 0)
            return errno == EEXIST
                       ? 0
                       : noteCallInChild("open").path(staged).arg("O_CREAT|O_NOFOLLOW").done(errno);
        close(fd);
        return 0;
    });
}

// A new file at op.staged, for writing; -errno on failure.
int createStagedFileInChild(const MountOp& op) noexcept {
    int fd = -1;
    int err = withParentsInChild(op.staged.c_str(), [&]() noexcept {
        fd = open(op.staged.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
        return fd < 0 ? noteCallInChild("open")
                            .path(op.staged.c_str())
                            .arg("O_CREAT|O_EXCL|O_NOFOLLOW")
                            .done(errno)
                      : 0;
    });
    return err ? -err : fd;
}

unsigned bindAttrs(const MountOp& op) noexcept {
    unsigned attrs = MOUNT_ATTR_NOSUID;
    if (!op.writable) attrs |= MOUNT_ATTR_RDONLY;
    if (op.flags & MS_NODEV) attrs |= MOUNT_ATTR_NODEV;
    if (op.flags & MS_NOEXEC) attrs |= MOUNT_ATTR_NOEXEC;
    if (op.flags & MS_NOSYMFOLLOW) attrs |= MOUNT_ATTR_NOSYMFOLLOW;
    return attrs;
}

// The MOUNT_ATTR_* names of `attrs`, for a failure's note.
const char* attrNames(unsigned attrs) noexcept {
    const bool ro = attrs & MOUNT_ATTR_RDONLY, dev = attrs & MOUNT_ATTR_NODEV,
               exec = attrs & MOUNT_ATTR_NOEXEC;
    if (ro && dev && exec) return "NOSUID|RDONLY|NODEV|NOEXEC";
    if (ro && dev) return "NOSUID|RDONLY|NODEV";
    if (ro && exec) return "NOSUID|RDONLY|NOEXEC";
    if (ro) return "NOSUID|RDONLY";
    if (dev && exec) return "NOSUID|NODEV|NOEXEC";
    if (dev) return "NOSUID|NODEV";
    if (exec) return "NOSUID|NOEXEC";
    return "NOSUID";
}

// Sets the attributes on the detached tree `tree` (a clone of `from`) and
// attaches it at `to_fd`/`to_path` (`to`): no window where a read-only mount
// is briefly writable.
int attachTreeInChild(int tree, unsigned attrs, bool recursive, int to_fd, const char* to_path,
                      const char* from, const char* to) noexcept {
    mount_attr attr{};
    attr.attr_set = attrs;
    if (sysMountSetattr(tree, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr) < 0)
        return noteCallInChild("mount_setattr")
            .path(from)
            .arg(recursive ? "AT_RECURSIVE" : "0")
            .arg(attrNames(attrs))
            .done(errno);
    unsigned move_flags =
        MOVE_MOUNT_F_EMPTY_PATH | (to_path[0] == '\0' ? MOVE_MOUNT_T_EMPTY_PATH : 0);
    if (sysMoveMount(tree, "", to_fd, to_path, move_flags) < 0)
        return noteCallInChild("move_mount").path(from).to(to).done(errno);
    return 0;
}

// A detached clone of the mount at `from_fd` (`from`; and, recursive, the
// mounts beneath it as they are now); -errno on failure.
int cloneTreeInChild(int from_fd, bool recursive, const char* from) noexcept {
    unsigned rec = recursive ? AT_RECURSIVE : 0;
    int tree = sysOpenTree(from_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | rec);
    if (tree < 0)
        return -noteCallInChild("open_tree")
                    .path(from)
                    .arg(recursive ? "OPEN_TREE_CLONE|AT_RECURSIVE" : "OPEN_TREE_CLONE")
                    .done(errno);
    return tree;
}

int cloneAndAttachInChild(int from_fd, unsigned attrs, bool recursive, int to_fd,
                          const char* to_path, const char* from, const char* to) noexcept {
    int tree = cloneTreeInChild(from_fd, recursive, from);
    if (tree < 0) return -tree;
    int err = attachTreeInChild(tree, attrs, recursive, to_fd, to_path, from, to);
    close(tree);
    return err;
}

// Resolves op.target beneath its anchor (the worktree) refusing every
// symlink, so a link planted in the worktree cannot redirect a mount out of
// it (the runc mount-target races, CVE-2021-30465).
int openBeneathInChild(const MountPlan& plan, const MountOp& op, int* out_fd,
                       int extra_flags = 0) noexcept {
    char anchor[PATH_MAX];
    size_t slen = plan.staging.size(), alen = op.anchor.size();
    if (slen + 1 + alen + 1 > sizeof(anchor)) return ENAMETOOLONG;
    memcpy(anchor, plan.staging.c_str(), slen);
    anchor[slen] = '/';
    memcpy(anchor + slen + 1, op.anchor.c_str(), alen + 1);
    int anchor_fd = open(anchor, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (anchor_fd < 0)
        return noteCallInChild("open").path(anchor).arg("O_DIRECTORY|O_NOFOLLOW").done(errno);
    const char* rel = op.target.c_str() + alen;
    while (*rel == '/') ++rel;
    open_how how{};
    how.flags = static_cast<__u64>(O_PATH | O_CLOEXEC | extra_flags);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    int fd = sysOpenat2(anchor_fd, rel, &how);
    int err = fd < 0 ? noteCallInChild("openat2")
                           .path(anchor)
                           .path(rel)
                           .arg("RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS")
                           .done(errno)
                     : 0;
    close(anchor_fd);
    *out_fd = fd;
    return err;
}

// A worktree name the parent walked and judged (runtime/plan/worktree_masks.h):
// the name itself, never a symlink's target, and the very inode judged; a
// swap since then refuses the run rather than cover something else.
int openJudgedBeneathInChild(const MountPlan& plan, const MountOp& op, int* out_fd) noexcept {
    int fd = -1;
    if (int err = openBeneathInChild(plan, op, &fd, O_NOFOLLOW)) return err;
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_dev != op.expect_dev || st.st_ino != op.expect_ino ||
        S_ISDIR(st.st_mode) != op.target_is_dir) {
        close(fd);
        return noteCallInChild("fstat")
            .path(op.target.c_str())
            .arg("not the file judged")
            .done(ESTALE);
    }
    *out_fd = fd;
    return 0;
}

int writeFileInChild(const MountOp& op) noexcept {
    int fd = createStagedFileInChild(op);
    if (fd < 0) return -fd;
    const char* p = op.data.data();
    size_t left = op.data.size();
    while (left > 0) {
        ssize_t n = write(fd, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            int err = noteCallInChild("write").path(op.staged.c_str()).done(errno);
            close(fd);
            return err;
        }
        p += n;
        left -= static_cast<size_t>(n);
    }
    close(fd);
    return 0;
}

int copyFileInChild(const MountOp& op, int source_fd) noexcept {
    if (source_fd < 0) return op.optional ? 0 : ENOENT;
    int fd = createStagedFileInChild(op);
    if (fd < 0) return -fd;
    int err = 0;
    while (true) {
        ssize_t n = sendfile(fd, source_fd, nullptr, 1 << 20);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            err = noteCallInChild("sendfile")
                      .path(op.source.c_str())
                      .to(op.staged.c_str())
                      .done(errno);
        if (n <= 0) break;
    }
    close(fd);
    return err;
}

// An image root's target, resolved inside the new root as the container
// will see it (an absolute symlink in the image is taken as relative to the
// image, not the host), and named for mount(2) by its /proc/self/fd path
// (the host's procfs, until pivot_root); 0 or an errno, *fd the caller's.
int resolveInRootInChild(const MountPlan& plan, const MountOp& op, int* fd, char* path,
                         size_t size) noexcept {
    int root = open(plan.staging.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) return noteCallInChild("open").path(plan.staging.c_str()).done(errno);
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    *fd = sysOpenat2(root, op.target.c_str(), &how);
    int err = *fd < 0 ? noteCallInChild("openat2")
                            .path(plan.staging.c_str())
                            .path(op.target.c_str())
                            .arg("RESOLVE_IN_ROOT")
                            .done(errno)
                      : 0;
    close(root);
    if (err) return err;
    // "/proc/self/fd/" and a decimal fd, without snprintf.
    const char prefix[] = "/proc/self/fd/";
    char digits[12];
    int n = 0;
    for (unsigned v = static_cast<unsigned>(*fd); n == 0 || v; v /= 10) digits[n++] = '0' + v % 10;
    if (sizeof(prefix) + static_cast<size_t>(n) > size) return ENAMETOOLONG;
    memcpy(path, prefix, sizeof(prefix) - 1);
    for (int i = 0; i < n; ++i) path[sizeof(prefix) - 1 + i] = digits[n - 1 - i];
    path[sizeof(prefix) - 1 + n] = '\0';
    return 0;
}

// Opens `rel` (a relative path) in the image root; -errno on failure.
int openInRootInChild(int root, const char* rel) noexcept {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    int fd = sysOpenat2(root, rel[0] ? rel : ".", &how);
    return fd < 0 ? -noteCallInChild("openat2").path(rel).arg("RESOLVE_IN_ROOT").done(errno) : fd;
}

// The parent directory of `target` in the image root, resolved in it, and
// the last component's offset; the parent directory is the caller's.
int openParentInRootInChild(int root, char* target, size_t len, size_t* name_at) noexcept {
    size_t slash = len;
    while (slash > 0 && target[slash - 1] != '/') --slash;
    *name_at = slash;
    if (slash == 0) return openInRootInChild(root, ".");
    target[slash - 1] = '\0';
    int fd = openInRootInChild(root, target);
    target[slash - 1] = '/';
    return fd;
}

// op.target copied into `buf` (PATH_MAX bytes; its length in *len) and the
// staging root opened O_PATH: an fd, or -errno.
int openStagingForTargetInChild(const MountPlan& plan, const MountOp& op, char* buf,
                                size_t* len) noexcept {
    *len = op.target.size();
    if (*len + 1 > PATH_MAX) return -ENAMETOOLONG;
    memcpy(buf, op.target.c_str(), *len + 1);
    int root = open(plan.staging.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    return root < 0 ? -noteCallInChild("open").path(plan.staging.c_str()).done(errno) : root;
}

// Makes op.target in the image root where it is missing, as runc does: each
// missing directory made by mkdirat in its parent resolved in the root (so
// a symlink in the image leads nowhere outside it), the last one a
// directory or an empty file as op.target_is_dir says.
int makeTargetInRootInChild(const MountPlan& plan, const MountOp& op) noexcept {
    char buf[PATH_MAX];
    size_t len = 0;
    int root = openStagingForTargetInChild(plan, op, buf, &len);
    if (root < 0) return -root;
    int err = 0;
    for (size_t i = 1; i <= len && !err; ++i) {
        if (i < len && buf[i] != '/') continue;
        char saved = buf[i];
        buf[i] = '\0';
        int fd = openInRootInChild(root, buf);
        if (fd >= 0) {
            close(fd);
        } else if (fd != -ENOENT) {
            err = -fd;
        } else {
            size_t name_at = 0;
            int parent = openParentInRootInChild(root, buf, i, &name_at);
            if (parent < 0) {
                err = -parent;
            } else {
                const char* name = buf + name_at;
                if (i < len || op.target_is_dir) {
                    if (mkdirat(parent, name, 0755) < 0 && errno != EEXIST)
                        err = noteCallInChild("mkdirat").path(buf).arg("0755").done(errno);
                } else {
                    int f = openat(parent, name,
                                   O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
                    if (f < 0 && errno != EEXIST)
                        err = noteCallInChild("openat").path(buf).arg("O_CREAT|O_EXCL").done(errno);
                    if (f >= 0) close(f);
                }
                close(parent);
            }
        }
        buf[i] = saved;
    }
    close(root);
    return err;
}

// A symlink `data` at op.target, made in its parent resolved in the image
// root; one already there is left as the image has it.
int symlinkInRootInChild(const MountPlan& plan, const MountOp& op) noexcept {
    char buf[PATH_MAX];
    size_t len = 0;
    int root = openStagingForTargetInChild(plan, op, buf, &len);
    if (root < 0) return -root;
    size_t name_at = 0;
    int parent = openParentInRootInChild(root, buf, len, &name_at);
    close(root);
    if (parent < 0) return -parent;
    int err = symlinkat(op.data.c_str(), parent, buf + name_at) < 0 && errno != EEXIST
                  ? noteCallInChild("symlinkat").path(op.data.c_str()).to(buf).done(errno)
                  : 0;
    close(parent);
    return err;
}

// `data` written into the existing file op.target, resolved in the image
// root (a sysctl in the container's own /proc/sys).
int writeInRootInChild(const MountPlan& plan, const MountOp& op) noexcept {
    int root = open(plan.staging.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) return noteCallInChild("open").path(plan.staging.c_str()).done(errno);
    open_how how{};
    how.flags = O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    int fd = sysOpenat2(root, op.target.c_str(), &how);
    int err = fd < 0 ? noteCallInChild("openat2")
                           .path(op.target.c_str())
                           .arg("O_WRONLY|O_TRUNC, RESOLVE_IN_ROOT")
                           .done(errno)
                     : 0;
    close(root);
    if (err) return err;
    ssize_t n = write(fd, op.data.data(), op.data.size());
    err = n < 0 ? errno : static_cast<size_t>(n) != op.data.size() ? EIO : 0;
    if (err) noteCallInChild("write").path(op.target.c_str()).done(err);
    close(fd);
    return err;
}

constexpr unsigned long kReadOnlyRemount =
    MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
constexpr const char* kReadOnlyRemountNames =
    "MS_REMOUNT|MS_BIND|MS_RDONLY|MS_NOSUID|MS_NODEV|MS_NOEXEC";

int injected_proc_mount_errno = 0;  // injectProcMountFailureInChild

// mount(2), its failure noted with its arguments (`shown` names the target
// when `target` is an fd's /proc path); 0 or an errno. `injected`: answers
// that errno instead of calling (a test's fault).
int mountInChild(const char* source, const char* target, const char* fstype, unsigned long flags,
                 const void* data, const char* flag_names, const char* shown = nullptr,
                 int injected = 0) noexcept {
    if (injected != 0)
        errno = injected;
    else if (mount(source, target, fstype, flags, data) == 0)
        return 0;
    CallNote& note = noteCallInChild("mount");
    if (source)
        note.path(source).to(shown ? shown : target);
    else
        note.arg("NULL").to(shown ? shown : target);
    if (fstype) note.path(fstype);
    return note.arg(flag_names).done(errno);
}

int remountReadOnlyInChild(const char* path) noexcept {
    return mountInChild(nullptr, path, nullptr, kReadOnlyRemount, nullptr, kReadOnlyRemountNames);
}

// The options of a tmpfs that takes the mode of the directory at its target
// (MountOp::keep_target_mode): "mode=NNNN," and `op.data`, in `out`. Null
// when no directory resolves there (the target is made, the tmpfs keeps its
// own mode) or the options would not fit a page (mount(2) takes no more).
// Looked at quietly: a target that is not there is not a failure to note.
const char* optionsWithTargetModeInChild(const MountPlan& plan, const MountOp& op, char* out,
                                         size_t size) noexcept {
    int root = open(plan.staging.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) return nullptr;
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    int fd = sysOpenat2(root, op.target.c_str(), &how);
    close(root);
    if (fd < 0) return nullptr;
    struct stat st;
    const bool dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
    close(fd);
    if (!dir) return nullptr;
    const char key[] = "mode=";
    const unsigned mode = st.st_mode & 07777;
    char digits[4];
    for (int i = 3; i >= 0; --i) digits[3 - i] = static_cast<char>('0' + ((mode >> (3 * i)) & 7));
    const size_t need = sizeof(key) - 1 + sizeof(digits) + 1 + op.data.size() + 1;
    if (need > size) return nullptr;
    char* at = out;
    memcpy(at, key, sizeof(key) - 1);
    at += sizeof(key) - 1;
    memcpy(at, digits, sizeof(digits));
    at += sizeof(digits);
    if (!op.data.empty()) {
        *at++ = ',';
        memcpy(at, op.data.data(), op.data.size());
        at += op.data.size();
    }
    *at = '\0';
    return out;
}

// The ops an image root's targets take, each on the fd path resolved in the
// root, a missing mount target first made there: nothing of the image is
// resolved as a host path, so no symlink it holds can lead a mount out.
int applyInRootOpInChild(MountPlan& plan, size_t index) noexcept {
    MountOp& op = plan.ops[index];
    if (op.kind == MountKind::Symlink) return symlinkInRootInChild(plan, op);
    if (op.kind == MountKind::File) return writeInRootInChild(plan, op);
    if (op.kind == MountKind::Directory) return makeTargetInRootInChild(plan, op);
    // A page, as mount(2) copies at most; static, as the child allocates
    // nothing and its stack is small.
    static char options_with_mode[4096];
    const char* data = op.data.empty() ? nullptr : op.data.c_str();
    if (op.kind == MountKind::Filesystem && op.keep_target_mode)
        if (const char* with_mode = optionsWithTargetModeInChild(plan, op, options_with_mode,
                                                                 sizeof(options_with_mode)))
            data = with_mode;
    if (op.kind == MountKind::Filesystem || op.kind == MountKind::BindFromHost ||
        op.kind == MountKind::AttachPrepared) {
        if (op.kind == MountKind::BindFromHost && plan.source_fds[index] < 0 && op.optional)
            return 0;
        if (int err = makeTargetInRootInChild(plan, op)) return err;
    }
    int fd = -1;
    char at[32];
    if (int err = resolveInRootInChild(plan, op, &fd, at, sizeof(at)))
        return op.optional && err == ENOENT ? 0 : err;
    int err = EINVAL;
    switch (op.kind) {
        case MountKind::Filesystem:
            err = mountInChild(op.source.c_str(), at, op.fstype.c_str(), op.flags, data,
                               "its flags", op.target.c_str());
            break;
        case MountKind::MaskWithTmpfs: {
            struct stat st;
            if (fstat(fd, &st) < 0) {
                err = noteCallInChild("fstat").path(op.target.c_str()).done(errno);
            } else if (S_ISDIR(st.st_mode)) {
                err = mountInChild("tmpfs", at, "tmpfs",
                                   MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,mode=0555",
                                   "MS_RDONLY|MS_NOSUID|MS_NODEV|MS_NOEXEC", op.target.c_str());
            } else {
                err = mountInChild("/dev/null", at, nullptr, MS_BIND, nullptr, "MS_BIND",
                                   op.target.c_str());
            }
            break;
        }
        case MountKind::MaskWithNull:
            err = mountInChild("/dev/null", at, nullptr, MS_BIND, nullptr, "MS_BIND",
                               op.target.c_str());
            break;
        case MountKind::ReadOnlyInPlace:
            // A recursive clone of what is there, read-only and nosuid on
            // every mount of it, attached over itself: each mount's other
            // attributes (nosymfollow, exec, nodev, atime) stay as they
            // were. A remount sets them afresh: ours added nodev and noexec
            // and dropped nosymfollow (runc's keeps nosuid, nodev and noexec
            // as statfs gives them, and drops the rest).
            err = cloneAndAttachInChild(fd, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, true, fd, "",
                                        op.target.c_str(), op.target.c_str());
            break;
        case MountKind::AttachPrepared:
            if (sysMoveMount(op.prepared_fd, "", fd, "",
                             MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                err = noteCallInChild("move_mount")
                          .arg("the prepared mount")
                          .to(op.target.c_str())
                          .done(errno);
            else
                err = 0;
            break;
        case MountKind::BindFromHost: {
            int src = plan.source_fds[index];
            err = src < 0 ? (op.optional ? 0 : ENOENT)
                          : attachTreeInChild(src, bindAttrs(op), op.recursive, fd, "",
                                              op.source.c_str(), op.target.c_str());
            break;
        }
        default:
            break;
    }
    if (fd >= 0) close(fd);
    return err;
}

int applyOpInChild(MountPlan& plan, size_t index) noexcept {
    MountOp& op = plan.ops[index];
    if (op.resolve_in_root) return applyInRootOpInChild(plan, index);
    const char* staged = op.staged.c_str();
    switch (op.kind) {
        case MountKind::Filesystem:
        case MountKind::MaskWithTmpfs:
            return EINVAL;  // image roots only (resolve_in_root)
        case MountKind::Directory:
            return withParentsInChild(staged, [&]() noexcept {
                return mkdir(staged, 0755) < 0 && errno != EEXIST
                           ? noteCallInChild("mkdir").path(staged).arg("0755").done(errno)
                           : 0;
            });
        case MountKind::File:
            return writeFileInChild(op);
        case MountKind::Symlink:
            return withParentsInChild(staged, [&]() noexcept {
                return symlink(op.data.c_str(), staged) < 0
                           ? noteCallInChild("symlink").path(op.data.c_str()).to(staged).done(errno)
                           : 0;
            });
        case MountKind::Tmpfs:
            if (int err = makeTargetInChild(op)) return err;
            return mountInChild("tmpfs", staged, "tmpfs", MS_NOSUID | MS_NODEV, op.data.c_str(),
                                "MS_NOSUID|MS_NODEV");
        case MountKind::Proc:
            // Mounted before the old root is detached: the kernel allows a new
            // procfs in a user namespace only while a fully visible one exists
            // in the mount namespace (mount_too_revealing()).
            if (int err = makeTargetInChild(op)) return err;
            return mountInChild("proc", staged, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr,
                                "MS_NOSUID|MS_NODEV|MS_NOEXEC", nullptr, injected_proc_mount_errno);
        case MountKind::Devpts:
            // Its own instance (every devpts mounted in a user namespace is
            // one, `newinstance` or not): ptys made here are numbered from 0
            // and listed nowhere else, and the host's are not listed here.
            // Not MS_NODEV: the ptys are device nodes, and devpts clears the
            // nodev that other filesystems get in a user namespace.
            if (int err = makeTargetInChild(op)) return err;
            return mountInChild("devpts", staged, "devpts", MS_NOSUID | MS_NOEXEC, op.data.c_str(),
                                "MS_NOSUID|MS_NOEXEC");
        case MountKind::MaskWithNull:
            if (int err = mountInChild("/dev/null", staged, nullptr, MS_BIND, nullptr, "MS_BIND"))
                return op.optional && err == ENOENT ? 0 : err;
            return 0;
        case MountKind::MaskWithEmptyDir:
            // The bind is a mount of its own: sealing the root later does
            // not reach it, so it is made read-only here.
            if (int err =
                    mountInChild(op.data.c_str(), staged, nullptr, MS_BIND, nullptr, "MS_BIND"))
                return op.optional && err == ENOENT ? 0 : err;
            return remountReadOnlyInChild(staged);
        case MountKind::CopyFromHost:
            return copyFileInChild(op, plan.source_fds[index]);
        case MountKind::ReadOnlyInPlace:
            if (int err = mountInChild(staged, staged, nullptr, MS_BIND | MS_REC, nullptr,
                                       "MS_BIND|MS_REC"))
                return op.optional && err == ENOENT ? 0 : err;
            return remountReadOnlyInChild(staged);
        case MountKind::ReadOnlyBeneath: {
            int fd = -1;
            if (int err = op.verify_identity ? openJudgedBeneathInChild(plan, op, &fd)
                                             : openBeneathInChild(plan, op, &fd))
                return op.optional && err == ENOENT ? 0 : err;
            int err =
                cloneAndAttachInChild(fd, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                                      true, fd, "", op.target.c_str(), op.target.c_str());
            close(fd);
            return err;
        }
        case MountKind::PinBeneath: {
            int fd = -1;
            if (int err = openJudgedBeneathInChild(plan, op, &fd)) return err;
            // As the worktree's bind is (nosuid, writable): nothing added
            // but the mount point.
            int err = cloneAndAttachInChild(fd, MOUNT_ATTR_NOSUID, true, fd, "", op.target.c_str(),
                                            op.target.c_str());
            close(fd);
            return err;
        }
        case MountKind::MaskBeneath: {
            int fd = -1;
            if (int err = openJudgedBeneathInChild(plan, op, &fd)) return err;
            int cover = open(op.data.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
            int err = cover < 0 ? noteCallInChild("open")
                                      .path(op.data.c_str())
                                      .arg("O_PATH|O_NOFOLLOW")
                                      .done(errno)
                                : cloneAndAttachInChild(cover,
                                                        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
                                                            MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                                                        false, fd, "", op.data.c_str(),
                                                        op.target.c_str());
            if (cover >= 0) close(cover);
            close(fd);
            return err;
        }
        case MountKind::AttachPrepared: {
            if (!op.anchor.empty()) {
                int fd = -1;
                if (int err = openBeneathInChild(plan, op, &fd)) return err;
                int err = sysMoveMount(op.prepared_fd, "", fd, "",
                                       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0
                              ? noteCallInChild("move_mount")
                                    .arg("the prepared mount")
                                    .to(op.target.c_str())
                                    .done(errno)
                              : 0;
                close(fd);
                return err;
            }
            if (int err = makeTargetInChild(op)) return err;
            if (sysMoveMount(op.prepared_fd, "", AT_FDCWD, staged, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return noteCallInChild("move_mount")
                    .arg("the prepared mount")
                    .to(staged)
                    .done(errno);
            return 0;
        }
        case MountKind::BindFromHost: {
            int src = plan.source_fds[index];
            if (src < 0) return op.optional ? 0 : ENOENT;
            // src is the tree cloned by openSourcesInChild.
            if (!op.anchor.empty()) {
                int fd = -1;
                if (int err = openBeneathInChild(plan, op, &fd)) return err;
                int err = attachTreeInChild(src, bindAttrs(op), op.recursive, fd, "",
                                            op.source.c_str(), op.target.c_str());
                close(fd);
                return err;
            }
            if (int err = makeTargetInChild(op)) return err;
            return attachTreeInChild(src, bindAttrs(op), op.recursive, AT_FDCWD, staged,
                                     op.source.c_str(), staged);
        }
    }
    return EINVAL;
}

}  // namespace

int makeMountsPrivateInChild() noexcept {
    return mountInChild(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr, "MS_REC|MS_PRIVATE");
}

namespace {

// The image root, as the caller, before the ids change: opened without
// following a symlink and refused unless it is the directory the parent
// judged, then cloned (with the mounts beneath it) before the staging root
// exists.
int openImageRootInChild(MountPlan& plan) noexcept {
    if (plan.root_source.empty() || plan.root_prepared_fd >= 0) return 0;
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC | O_DIRECTORY;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    int fd = sysOpenat2(AT_FDCWD, plan.root_source.c_str(), &how);
    if (fd < 0)
        return noteCallInChild("openat2")
            .path(plan.root_source.c_str())
            .arg("RESOLVE_NO_SYMLINKS")
            .done(errno);
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_dev != plan.root_dev || st.st_ino != plan.root_ino) {
        close(fd);
        return noteCallInChild("fstat")
            .path(plan.root_source.c_str())
            .arg("not the directory held")
            .done(ESTALE);
    }
    int tree = cloneTreeInChild(fd, true, plan.root_source.c_str());
    close(fd);
    if (tree < 0) return -tree;
    plan.root_source_fd = tree;
    return 0;
}

}  // namespace

int openSourcesInChild(MountPlan& plan, size_t* failed_op) noexcept {
    *failed_op = static_cast<size_t>(-1);
    if (int err = openImageRootInChild(plan)) return err;
    for (size_t i = 0; i < plan.ops.size(); ++i) {
        const MountOp& op = plan.ops[i];
        if (op.kind != MountKind::BindFromHost && op.kind != MountKind::CopyFromHost) continue;
        int flags = op.kind == MountKind::CopyFromHost ? O_RDONLY | O_NOFOLLOW : O_PATH;
        int fd = -1;
        if (op.verify_identity) {
            open_how how{};
            how.flags = O_PATH | O_CLOEXEC;
            how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
            fd = sysOpenat2(AT_FDCWD, op.source.c_str(), &how);
        } else {
            fd = open(op.source.c_str(), flags | O_CLOEXEC);
        }
        if (fd < 0) {
            if (op.optional && errno == ENOENT) continue;
            *failed_op = i;
            return noteCallInChild(op.verify_identity ? "openat2" : "open")
                .path(op.source.c_str())
                .arg(op.verify_identity                   ? "RESOLVE_NO_SYMLINKS"
                     : op.kind == MountKind::CopyFromHost ? "O_RDONLY|O_NOFOLLOW"
                                                          : "O_PATH")
                .done(errno);
        }
        plan.source_fds[i] = fd;
        if (op.verify_identity) {
            struct stat st;
            if (fstat(fd, &st) < 0 || st.st_dev != op.expect_dev || st.st_ino != op.expect_ino) {
                *failed_op = i;
                // swapped since the parent held it
                return noteCallInChild("fstat")
                    .path(op.source.c_str())
                    .arg("not the file held")
                    .done(ESTALE);
            }
        }
        if (op.kind != MountKind::BindFromHost) continue;
        // Cloned now, before the staging tmpfs exists: a recursive clone
        // taken later of a source that holds the staging directory (/tmp
        // itself) would carry the sandbox's own new root along with it.
        int tree = cloneTreeInChild(fd, op.recursive, op.source.c_str());
        close(fd);
        plan.source_fds[i] = tree < 0 ? -1 : tree;
        if (tree < 0) {
            *failed_op = i;
            return -tree;
        }
    }
    return 0;
}

int buildRootInChild(MountPlan& plan, size_t* failed_op) noexcept {
    *failed_op = static_cast<size_t>(-1);
    if (!plan.root_source.empty()) {
        // An image root: the clone attached at the staging directory, nosuid
        // and nodev (and the rest read-only only once sealed, if it is to
        // be). nodev whether writable or not: no device cgroup holds in a
        // user namespace, so a node an image carries (a 0666 node of the
        // host's disk) would open the host's device; the container's own
        // devices are bound from the host's nodes into its /dev.
        int tree = plan.root_prepared_fd >= 0 ? plan.root_prepared_fd : plan.root_source_fd;
        if (int err = attachTreeInChild(tree, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true, AT_FDCWD,
                                        plan.staging.c_str(), plan.root_source.c_str(),
                                        plan.staging.c_str()))
            return err;
    } else if (int err = mountInChild("tmpfs", plan.staging.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                                      plan.root_options.c_str(), "MS_NOSUID|MS_NODEV")) {
        return err;
    }
    for (size_t i = 0; i < plan.ops.size(); ++i) {
        // A failure an earlier op tolerated (an optional mask's ENOENT)
        // noted its call: not this op's.
        clearCallNoteInChild();
        if (int err = applyOpInChild(plan, i)) {
            *failed_op = i;
            return err;
        }
    }
    return 0;
}

namespace {

// A new `fstype` with `options` ("key=value" or a bare flag each,
// comma-separated), attached at `to_fd` itself: fsopen, fsconfig, fsmount,
// move_mount, no path resolved anywhere (the container's /proc/self is not
// trusted to name an fd). Fixed buffers only.
int mountNewAtInChild(const char* fstype, const char* options, unsigned attrs, int to_fd,
                      const char* shown, int* mounted = nullptr) noexcept {
    int fs = sysFsopen(fstype, FSOPEN_CLOEXEC);
    if (fs < 0) return noteCallInChild("fsopen").path(fstype).done(errno);
    // Named in mountinfo as mount(2) names it ("proc proc", not "none").
    int err = sysFsconfig(fs, FSCONFIG_SET_STRING, "source", fstype, 0) < 0
                  ? noteCallInChild("fsconfig").path(fstype).arg("source").done(errno)
                  : 0;
    for (const char* at = options; !err && at && *at;) {
        const char* end = strchr(at, ',');
        const size_t length = end ? static_cast<size_t>(end - at) : strlen(at);
        char option[256];
        if (length >= sizeof(option)) {
            err = noteCallInChild("fsconfig").path(fstype).arg("an option too long").done(EINVAL);
            break;
        }
        memcpy(option, at, length);
        option[length] = '\0';
        at = end ? end + 1 : at + length;
        if (length == 0) continue;
        char* value = strchr(option, '=');
        if (value) *value++ = '\0';
        if (sysFsconfig(fs, value ? FSCONFIG_SET_STRING : FSCONFIG_SET_FLAG, option, value, 0) < 0)
            err = noteCallInChild("fsconfig").path(fstype).arg(option).done(errno);
    }
    if (!err && sysFsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0)
        err = noteCallInChild("fsconfig").path(fstype).arg("FSCONFIG_CMD_CREATE").done(errno);
    int mnt = -1;
    if (!err && (mnt = sysFsmount(fs, FSMOUNT_CLOEXEC, attrs)) < 0)
        err = noteCallInChild("fsmount").path(fstype).arg(attrNames(attrs)).done(errno);
    if (!err &&
        sysMoveMount(mnt, "", to_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        err = noteCallInChild("move_mount").path(fstype).to(shown).done(errno);
    if (!err && mounted) {
        *mounted = mnt;  // the caller's: the new mount's root
        mnt = -1;
    }
    if (mnt >= 0) close(mnt);
    close(fs);
    return err;
}

// One op of a proc's subtree made again at `fd` (its target, resolved in
// the root): the proc, a mask, a read-only path. `null_tree`: the host's
// null device, detached until the first file mask attaches it (*attached),
// cloned from there for the others.
int remountProcOpInChild(const MountOp& op, int fd, int null_tree, bool* attached) noexcept {
    const char* shown = op.target.c_str();
    switch (op.kind) {
        case MountKind::Filesystem:
            return mountNewAtInChild(op.fstype.c_str(), op.data.c_str(),
                                     mountAttrsOfFlags(op.flags), fd, shown);
        case MountKind::MaskWithTmpfs:
        case MountKind::MaskWithNull: {
            struct stat st;
            if (fstat(fd, &st) < 0) return noteCallInChild("fstat").path(shown).done(errno);
            if (op.kind == MountKind::MaskWithTmpfs && S_ISDIR(st.st_mode))
                return mountNewAtInChild(
                    "tmpfs", "size=0,mode=0555",
                    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                    fd, shown);
            if (*attached)
                return cloneAndAttachInChild(null_tree, 0, false, fd, "", "/dev/null", shown);
            if (sysMoveMount(null_tree, "", fd, "",
                             MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                return noteCallInChild("move_mount").path("/dev/null").to(shown).done(errno);
            *attached = true;
            return 0;
        }
        case MountKind::ReadOnlyInPlace:
            // As the first proc's (applyInRootOpInChild): read-only and
            // nosuid added, the rest as the proc has it (nodev, noexec).
            return cloneAndAttachInChild(fd, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, true, fd, "",
                                         shown, shown);
        default:
            return noteCallInChild("mount").to(shown).arg("not a proc's mask").done(EINVAL);
    }
}

// A proc's target as init left it: opened without following any link
// (RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS), and the root of a procfs (inode
// 1 of a PROC_SUPER_MAGIC filesystem), so that the command's proc stacks on
// init's and nowhere else (a target an image's link, or a volume mounted
// over it, moved elsewhere is refused: runc refuses a proc destination that
// is not a plain directory). 0 or an errno; *fd the caller's.
int openInitsProcInChild(int root, const MountOp& op, int* fd) noexcept {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    *fd = sysOpenat2(root, op.target.c_str(), &how);
    if (*fd < 0)
        return noteCallInChild("openat2")
            .path(op.target.c_str())
            .arg("RESOLVE_IN_ROOT|RESOLVE_NO_SYMLINKS")
            .done(errno);
    struct statfs fs;
    struct stat st;
    if (fstatfs(*fd, &fs) < 0 || fstat(*fd, &st) < 0 || fs.f_type != PROC_SUPER_MAGIC ||
        st.st_ino != 1)
        return noteCallInChild("fstatfs")
            .path(op.target.c_str())
            .arg("not init's proc")
            .done(ENOTDIR);
    return 0;
}

}  // namespace

int remountProcsInChild(MountPlan& plan, int null_tree, size_t* failed_op) noexcept {
    *failed_op = static_cast<size_t>(-1);
    int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) return noteCallInChild("open").path("/").done(errno);
    // Each proc made again, and the root of its new mount, beneath which
    // the ops of its subtree are resolved (never from "/" again).
    struct Made {
        const MountOp* proc;
        int mount;
    } made[kMaxRemountedProcs];
    size_t count = 0;
    bool attached = false;
    int err = 0;
    for (size_t i = 0; i < plan.ops.size() && !err; ++i) {
        const MountOp& op = plan.ops[i];
        const bool proc = op.kind == MountKind::Filesystem && op.fstype == "proc";
        if (!op.resolve_in_root || (!proc && !underProcTarget(plan, i))) continue;
        // A sysctl is the namespace's, written once, and a directory made
        // in the root (a process.cwd) is there already; nothing but these
        // kinds lies at or beneath a proc of a plan that asks this
        // (procRemountable).
        if (op.kind == MountKind::File || op.kind == MountKind::Directory) continue;
        clearCallNoteInChild();
        int fd = -1;
        if (proc) {
            if (count == kMaxRemountedProcs) {
                err = noteCallInChild("mount").path("proc").arg("more than 4").done(E2BIG);
            } else if (!(err = openInitsProcInChild(root, op, &fd))) {
                int mount = -1;
                err = mountNewAtInChild("proc", op.data.c_str(), mountAttrsOfFlags(op.flags), fd,
                                        op.target.c_str(), &mount);
                if (!err) made[count++] = {&op, mount};
            }
        } else {
            // Beneath the latest proc whose target holds it, the rest of its
            // path resolved from that proc's new root.
            const Made* under = nullptr;
            for (size_t k = count; k-- > 0 && !under;) {
                const std::string& at = made[k].proc->target;
                if (op.target.size() > at.size() && op.target.compare(0, at.size(), at) == 0 &&
                    op.target[at.size()] == '/')
                    under = &made[k];
            }
            if (!under) {
                err =
                    noteCallInChild("openat2").path(op.target.c_str()).arg("no proc").done(ENOENT);
            } else {
                open_how how{};
                how.flags = O_PATH | O_CLOEXEC;
                how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
                const char* rest = op.target.c_str() + under->proc->target.size() + 1;
                fd = sysOpenat2(under->mount, rest, &how);
                if (fd < 0 && op.optional && errno == ENOENT) continue;
                if (fd < 0)
                    err = noteCallInChild("openat2")
                              .path(op.target.c_str())
                              .arg("RESOLVE_BENEATH its proc")
                              .done(errno);
                else
                    err = remountProcOpInChild(op, fd, null_tree, &attached);
            }
        }
        if (fd >= 0) close(fd);
        if (err) *failed_op = i;
    }
    for (size_t k = 0; k < count; ++k) close(made[k].mount);
    close(root);
    return err;
}

void injectProcMountFailureInChild(int err) noexcept {
    injected_proc_mount_errno = err;
}

void closeSourcesInChild(MountPlan& plan) noexcept {
    for (int& fd : plan.source_fds) {
        if (fd >= 0) close(fd);
        fd = -1;
    }
    if (plan.root_source_fd >= 0) close(plan.root_source_fd);
    plan.root_source_fd = -1;
}

int sealRootInChild(const MountPlan& plan) noexcept {
    if (!plan.root_source.empty() && plan.root_writable) return 0;
    return mountInChild(nullptr, plan.staging.c_str(), nullptr,
                        MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr,
                        "MS_REMOUNT|MS_BIND|MS_RDONLY|MS_NOSUID|MS_NODEV");
}

int pivotRootInChild(const MountPlan& plan) noexcept {
    // pivot_root(".", ".") stacks the old root on top of the new one; the
    // lazy unmount then removes it, so no directory is needed to park it in
    // and no path to the host's tree remains.
    if (chdir(plan.staging.c_str()) < 0)
        return noteCallInChild("chdir").path(plan.staging.c_str()).done(errno);
    if (sysPivotRoot(".", ".") < 0)
        return noteCallInChild("pivot_root").path(".").path(".").done(errno);
    if (umount2(".", MNT_DETACH) < 0)
        return noteCallInChild("umount2").path(".").arg("MNT_DETACH").done(errno);
    if (chdir("/") < 0) return noteCallInChild("chdir").path("/").done(errno);
    return 0;
}

}  // namespace stockade::ns
