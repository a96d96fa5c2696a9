#include "runtime/sandbox_seccomp.h"

#include "seccomp/default_program.h"
#include "seccomp/filter.h"
#include "seccomp/oci_import.h"

namespace stockade {

Status compileSeccompInto(const Policy& policy, ChildPlan& plan) {
    if (policy.seccomp == "none") return okStatus();
    if (policy.seccomp == "default") {
        auto program = seccomp::defaultProgram();
        plan.seccomp_program.assign(program.begin(), program.end());
        return okStatus();
    }
    // A file in the OCI runtime-spec / Docker format: compiled here, per
    // run, since it is the user's and may change between runs.
    auto imported = seccomp::loadOciSeccompFile(policy.seccomp);
    if (!imported) return imported.error().withContext("seccomp profile " + policy.seccomp);
    auto compiled = seccomp::compileFilter(*imported);
    if (!compiled) return compiled.error().withContext("seccomp profile " + policy.seccomp);
    plan.seccomp_program = std::move(compiled->program);
    return okStatus();
}

}  // namespace stockade
