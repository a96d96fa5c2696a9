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

}  // namespace stockade::ns
