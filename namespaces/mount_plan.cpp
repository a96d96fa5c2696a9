#include "namespaces/mount_plan.h"

#include <sys/mount.h>

#include <linux/mount.h>

namespace stockade::ns {

void addOp(MountPlan& plan, MountOp op) {
    op.staged = plan.staging + "/" + op.target;
    plan.ops.push_back(std::move(op));
    plan.source_fds.push_back(-1);
}

void addDefaultDevices(MountPlan& plan, bool resolve_in_root) {
    for (const char* name : {"null", "zero", "full", "random", "urandom", "tty"})
        addOp(plan, {.kind = MountKind::BindFromHost,
                     .source = std::string("/dev/") + name,
                     .target = std::string("dev/") + name,
                     .target_is_dir = false,
                     .writable = true,
                     .recursive = false,
                     .optional = std::string_view(name) == "tty",
                     .resolve_in_root = resolve_in_root,
                     .description = std::string("mount /dev/") + name});
}

unsigned mountAttrsOfFlags(unsigned long flags) noexcept {
    unsigned attrs = 0;
    if (flags & MS_RDONLY) attrs |= MOUNT_ATTR_RDONLY;
    if (flags & MS_NOSUID) attrs |= MOUNT_ATTR_NOSUID;
    if (flags & MS_NODEV) attrs |= MOUNT_ATTR_NODEV;
    if (flags & MS_NOEXEC) attrs |= MOUNT_ATTR_NOEXEC;
    if (flags & MS_NODIRATIME) attrs |= MOUNT_ATTR_NODIRATIME;
    if (flags & MS_NOSYMFOLLOW) attrs |= MOUNT_ATTR_NOSYMFOLLOW;
    // One atime mode: strictatime wins over noatime, as mount(2) takes
    // both (fsmount refuses the two together).
    if (flags & MS_STRICTATIME)
        attrs |= MOUNT_ATTR_STRICTATIME;
    else if (flags & MS_NOATIME)
        attrs |= MOUNT_ATTR_NOATIME;
    return attrs;
}

bool underProcTarget(const MountPlan& plan, size_t index) noexcept {
    const std::string& target = plan.ops[index].target;
    for (size_t i = 0; i < index; ++i) {
        const MountOp& proc = plan.ops[i];
        if (proc.kind != MountKind::Filesystem || proc.fstype != "proc") continue;
        if (target.compare(0, proc.target.size(), proc.target) == 0 &&
            (target.size() == proc.target.size() || target[proc.target.size()] == '/'))
            return true;
    }
    return false;
}

namespace {

// Whether `target` is spelled one way only: relative, no empty, "." or ".."
// component, no trailing slash ("proc/kcore", not "./proc/kcore" nor
// "proc//kcore"), so that a prefix of it is a directory above it.
bool canonicalTarget(const std::string& target) noexcept {
    if (target.empty() || target.front() == '/' || target.back() == '/') return false;
    size_t at = 0;
    while (at <= target.size()) {
        size_t end = target.find('/', at);
        if (end == std::string::npos) end = target.size();
        const size_t length = end - at;
        if (length == 0 || (length == 1 && target[at] == '.') ||
            (length == 2 && target[at] == '.' && target[at + 1] == '.'))
            return false;
        at = end + 1;
    }
    return true;
}

}  // namespace

bool procRemountable(const MountPlan& plan) noexcept {
    size_t procs = 0;
    for (size_t i = 0; i < plan.ops.size(); ++i) {
        const MountOp& op = plan.ops[i];
        const bool proc = op.kind == MountKind::Filesystem && op.fstype == "proc";
        if (proc && ++procs > kMaxRemountedProcs) return false;
        // Every target judged by its spelling: one a spec wrote another way
        // ("/proc/", "/./proc/kcore") would be missed beneath its proc.
        if (!canonicalTarget(op.target)) return false;
        if (proc && !op.resolve_in_root) return false;
        // A later op over a directory above a proc covers it: the proc could
        // not be found again there.
        for (size_t j = i + 1; proc && j < plan.ops.size(); ++j) {
            const std::string& later = plan.ops[j].target;
            if (later.size() < op.target.size() && op.target.compare(0, later.size(), later) == 0 &&
                op.target[later.size()] == '/' && plan.ops[j].kind != MountKind::Directory &&
                plan.ops[j].kind != MountKind::File && plan.ops[j].kind != MountKind::Symlink)
                return false;
        }
        if (proc || !underProcTarget(plan, i)) continue;
        if (!op.resolve_in_root) return false;
        // At a proc's target itself (a read-only or masked /proc): its
        // subtree could not be found beneath the new proc's root.
        for (size_t j = 0; j < i; ++j)
            if (plan.ops[j].kind == MountKind::Filesystem && plan.ops[j].fstype == "proc" &&
                plan.ops[j].target == op.target)
                return false;
        // Anything else there (a host bind, a mount over the proc itself)
        // could not be made again.
        if (op.kind != MountKind::File && op.kind != MountKind::MaskWithTmpfs &&
            op.kind != MountKind::MaskWithNull && op.kind != MountKind::ReadOnlyInPlace)
            return false;
    }
    return true;
}

}  // namespace stockade::ns
