#include "runtime/sandbox_seccomp.h"

#include "seccomp/filter.h"
#include "seccomp/policy.h"

namespace stockade {

Status compileSeccompInto(const Policy& policy, ChildPlan& plan) {
    if (policy.seccomp == "none") return okStatus();
    if (policy.seccomp != "default")
        return Error::message("seccomp policy files are not loaded yet: \"" + policy.seccomp +
                              "\"");
    auto compiled = seccomp::compileFilter(seccomp::defaultPolicy());
    if (!compiled) return compiled.error();
    plan.seccomp_program = std::move(compiled->program);
    return okStatus();
}

}  // namespace stockade
