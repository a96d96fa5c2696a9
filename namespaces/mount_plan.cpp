#include "namespaces/mount_plan.h"

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

bool procRemountable(const MountPlan& plan) noexcept {
    for (size_t i = 0; i < plan.ops.size(); ++i) {
        const MountOp& op = plan.ops[i];
        const bool proc = op.kind == MountKind::Filesystem && op.fstype == "proc";
        if (proc && !op.resolve_in_root) return false;
        if (proc || !underProcTarget(plan, i)) continue;
        if (!op.resolve_in_root) return false;
        // Anything else there (a host bind, a mount over the proc itself)
        // could not be made again.
        if (op.kind != MountKind::File && op.kind != MountKind::MaskWithTmpfs &&
            op.kind != MountKind::MaskWithNull && op.kind != MountKind::ReadOnlyInPlace)
            return false;
    }
    return true;
}

}  // namespace stockade::ns
