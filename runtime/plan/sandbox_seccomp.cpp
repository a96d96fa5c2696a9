#include "runtime/plan/sandbox_seccomp.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "seccomp/default_program.h"
#include "seccomp/denials.h"
#include "seccomp/filter.h"
#include "seccomp/oci_import.h"

namespace stockade {

namespace {

// The direct ingress's filters: the policy as it is (installed where no
// listener can be had: listen then runs in the sandbox, and the dev server
// falls back to its forwarder), and with listen(2) sent to the supervisor
// beside the notified refusals.
Status compileListenToSupervisor(seccomp::SeccompPolicy policy, ChildPlan& plan,
                                 FilterSource& source) {
    // The supervisor performs the calls it does not hand a host socket, so
    // it may serve only a listen the policy allows whatever its arguments.
    bool named = false;
    for (const seccomp::SyscallRule& r : policy.rules)
        if (std::find(r.names.begin(), r.names.end(), "listen") != r.names.end()) {
            named = true;
            if (r.action != seccomp::Action::Allow || !r.args.empty())
                return Error::message(
                    "the seccomp policy refuses or conditions listen(2), which the direct "
                    "ingress would answer itself; use another --net-backend");
        }
    if (!named && policy.default_action != seccomp::Action::Allow)
        return Error::message(
            "the seccomp policy does not allow listen(2), which the direct ingress would "
            "answer itself; use another --net-backend");
    seccomp::addHostSocketRefusals(policy);
    auto plain = seccomp::compileFilter(policy);
    if (!plain) return plain.error().withContext("seccomp policy");
    if (auto s = seccomp::checkDenialsReportable(policy); !s)
        return s.error().withContext("the direct ingress needs the seccomp listener");
    seccomp::sendCallToSupervisor(policy, "listen");
    auto notified = seccomp::compileFilter(seccomp::withNotifiedDenials(policy));
    if (!notified) return notified.error().withContext("seccomp policy with listen notified");
    plan.seccomp_program = std::move(plain->program);
    plan.seccomp_notified_program = std::move(notified->program);
    source = std::make_shared<const seccomp::SeccompPolicy>(std::move(policy));
    return okStatus();
}

}  // namespace

Status compileLowerTierSeccompInto(const Policy& policy, ChildPlan& plan, FilterSource& source) {
    if (policy.seccomp != "default")
        return Error::message("the lower tier needs the default seccomp filter");
    seccomp::SeccompPolicy local = seccomp::defaultPolicy();
    if (auto s = seccomp::allowLocalSocketsOnly(local); !s) return s;
    seccomp::refuseMetadataByPath(local);
    auto plain = seccomp::compileFilter(local);
    if (!plain) return plain.error().withContext("the lower tier's seccomp policy");
    auto notified = seccomp::compileFilter(seccomp::withNotifiedDenials(local));
    if (!notified) return notified.error().withContext("the lower tier's seccomp policy, notified");
    plan.seccomp_program = std::move(plain->program);
    plan.seccomp_notified_program = std::move(notified->program);
    source = std::make_shared<const seccomp::SeccompPolicy>(std::move(local));
    return okStatus();
}

namespace {

Status compileOwnProgramsInto(const Policy& policy, ChildPlan& plan, FilterSource& source) {
    if (policy.seccomp == "none") {
        if (policy.listen_to_supervisor)
            return Error::message(
                "the direct ingress answers the server's listen(2) through the seccomp filter, "
                "and this profile has \"seccomp\": \"none\"; use another --net-backend");
        return okStatus();
    }
    if (policy.listen_to_supervisor && policy.seccomp == "default")
        return compileListenToSupervisor(seccomp::defaultPolicy(), plan, source);
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
    if (policy.listen_to_supervisor) return compileListenToSupervisor(*imported, plan, source);
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
    source = std::make_shared<const seccomp::SeccompPolicy>(std::move(*imported));
    return okStatus();
}

}  // namespace

Status compileSeccompInto(const Policy& policy, ChildPlan& plan, FilterSource& source) {
    if (auto s = compileOwnProgramsInto(policy, plan, source); !s) return s;
    // The default policy refuses every way to a privileged file itself. A
    // user's policy, and none as root (whose sandbox writes a root-owned
    // worktree through an idmapped mount, its files root's on disk), get
    // stockade's guard after them (G3): no setid mode, no user namespace of
    // the sandbox's own, no io_uring. Rootless, what the sandbox makes is
    // the caller's, and "none" means none.
    if (policy.seccomp == "default" || (policy.seccomp == "none" && geteuid() != 0))
        return okStatus();
    auto plain = seccomp::withPrivilegedFileGuard(plan.seccomp_program);
    if (!plain) return plain.error().withContext("seccomp profile " + policy.seccomp);
    plan.seccomp_program = std::move(*plain);
    if (!plan.seccomp_notified_program.empty()) {
        auto notified = seccomp::withPrivilegedFileGuard(plan.seccomp_notified_program);
        if (!notified) return notified.error().withContext("seccomp profile " + policy.seccomp);
        plan.seccomp_notified_program = std::move(*notified);
    }
    return okStatus();
}

namespace {

std::uint64_t monotonicNs() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<std::uint64_t>(now.tv_sec) * 1000000000 +
           static_cast<std::uint64_t>(now.tv_nsec);
}

}  // namespace

RefusalAnswering::RefusalAnswering(FilterSource source)
    : source_(std::move(source)),
      budget_(seccomp::kRefusalAnswersPerSecond, seccomp::kRefusalAnswerBurst, monotonicNs()) {}

bool RefusalAnswering::answering() {
    return budget_.mayAnswer(monotonicNs());
}

int RefusalAnswering::pollTimeoutMs() {
    return budget_.msUntilAnswer(monotonicNs());
}

Status RefusalAnswering::answerOne(int listener_fd, const seccomp::CallServer* server) {
    if (!collector_)
        collector_.emplace(seccomp::DenialAnswers(source_ ? *source_ : seccomp::defaultPolicy()));
    budget_.spend();
    return collector_->handleOne(listener_fd, server);
}

std::vector<std::pair<std::string, std::uint64_t>> RefusalAnswering::denials() const {
    std::vector<std::pair<std::string, std::uint64_t>> out;
    if (collector_)
        for (const seccomp::Denial& d : collector_->denials()) out.emplace_back(d.syscall, d.count);
    return out;
}

}  // namespace stockade
