#include "runtime/sandbox_seccomp.h"

#include "seccomp/default_program.h"
#include "seccomp/denials.h"
#include "seccomp/filter.h"
#include "seccomp/oci_import.h"

namespace stockade {

Status compileSeccompInto(const Policy& policy, ChildPlan& plan) {
    if (policy.seccomp == "none") return okStatus();
    if (policy.seccomp == "default") {
        auto plain = seccomp::defaultProgram();
        auto notified = seccomp::defaultNotifiedProgram();
        plan.seccomp_program.assign(plain.begin(), plain.end());
        plan.seccomp_notified_program.assign(notified.begin(), notified.end());
        return okStatus();
    }
    // A file in the OCI runtime-spec / Docker format: compiled here, per
    // run, since it is the user's and may change between runs.
    auto imported = seccomp::loadOciSeccompFile(policy.seccomp);
    if (!imported) return imported.error().withContext("seccomp profile " + policy.seccomp);
    // What the sandbox creates may land on the host: no user's policy may
    // let it mint setuid or setgid files (G3).
    seccomp::addNoSetidRules(*imported);
    auto compiled = seccomp::compileFilter(*imported);
    if (!compiled) return compiled.error().withContext("seccomp profile " + policy.seccomp);
    plan.seccomp_program = std::move(compiled->program);
    // Reported only when the child can hand over the listener under the
    // policy itself (sendmsg and close allowed); else refusals stay in the
    // kernel, unreported.
    if (seccomp::checkDenialsReportable(*imported)) {
        auto notified = seccomp::compileFilter(seccomp::withNotifiedDenials(*imported));
        if (notified) plan.seccomp_notified_program = std::move(notified->program);
    }
    return okStatus();
}

seccomp::SeccompPolicy seccompPolicyFor(const Policy& policy) {
    if (policy.seccomp == "default" || policy.seccomp == "none") return seccomp::defaultPolicy();
    auto imported = seccomp::loadOciSeccompFile(policy.seccomp);
    if (!imported) return seccomp::defaultPolicy();
    seccomp::addNoSetidRules(*imported);
    return *imported;
}

}  // namespace stockade
