#include "namespaces/mount_plan.h"

namespace stockade::ns {

void addOp(MountPlan& plan, MountOp op) {
    op.staged = plan.staging + "/" + op.target;
    plan.ops.push_back(std::move(op));
    plan.source_fds.push_back(-1);
}

}  // namespace stockade::ns
