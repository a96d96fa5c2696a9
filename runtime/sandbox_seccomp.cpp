#include "runtime/sandbox_seccomp.h"

#include <time.h>

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
    if (auto s = seccomp::checkNoSetidRulesHold(*imported); !s)
        return s.error().withContext("seccomp profile " + policy.seccomp);
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

namespace {

std::uint64_t monotonicNs() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<std::uint64_t>(now.tv_sec) * 1000000000 +
           static_cast<std::uint64_t>(now.tv_nsec);
}

}  // namespace

RefusalAnswering::RefusalAnswering(const Policy& policy)
    : policy_(policy),
      budget_(seccomp::kRefusalAnswersPerSecond, seccomp::kRefusalAnswerBurst, monotonicNs()) {}

bool RefusalAnswering::answering() {
    return budget_.mayAnswer(monotonicNs());
}

int RefusalAnswering::pollTimeoutMs() {
    return budget_.msUntilAnswer(monotonicNs());
}

Status RefusalAnswering::answerOne(int listener_fd) {
    if (!collector_) collector_.emplace(seccomp::DenialAnswers(seccompPolicyFor(policy_)));
    budget_.spend();
    return collector_->handleOne(listener_fd);
}

std::vector<std::pair<std::string, std::uint64_t>> RefusalAnswering::denials() const {
    std::vector<std::pair<std::string, std::uint64_t>> out;
    if (collector_)
        for (const seccomp::Denial& d : collector_->denials()) out.emplace_back(d.syscall, d.count);
    return out;
}

}  // namespace stockade
