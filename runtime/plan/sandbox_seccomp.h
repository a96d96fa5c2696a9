// The bridge from a Policy's seccomp setting to the compiled program the
// child installs: "default" (stockade's own default-deny policy), "none", or
// a file in the OCI runtime-spec / Docker seccomp format; and the
// supervisor's side of the refusals that program reports.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "runtime/child/child_plan.h"
#include "runtime/policy/policy.h"
#include "seccomp/denials.h"
#include "seccomp/policy.h"
#include "seccomp/refusal_budget.h"

namespace stockade {

// What a run's filter was compiled from, kept beside the program so that
// each refusal is named and answered by the very policy that refused it: a
// user's file as parsed once (never read again mid-run, when it may have
// changed), the lower tier's or the direct ingress's variant as built. Null
// for the built-in filter compiled at build time: its policy is made only
// when a refusal arrives, so runs without one pay nothing.
using FilterSource = std::shared_ptr<const seccomp::SeccompPolicy>;

// The profile's filter into `plan` (none for "seccomp": "none"), and what it
// was compiled from into `source`.
Status compileSeccompInto(const Policy& policy, ChildPlan& plan, FilterSource& source);

// The lower tier's filter (issue 18): the default policy with socket(2) and
// socketpair(2) allowed for AF_UNIX only (seccomp::allowLocalSocketsOnly),
// since no network namespace holds the others. Compiled per run: only
// hosts without user namespaces pay for it.
Status compileLowerTierSeccompInto(const Policy& policy, ChildPlan& plan, FilterSource& source);

// What the supervisor's poll loop does with the seccomp listener: answer each
// refused call with the policy's errno and count it (seccomp/denials.h), at
// most as fast as the budget allows (seccomp/refusal_budget.h), so that a
// flood of refusals costs the supervisor a bounded share of a core.
class RefusalAnswering {
  public:
    explicit RefusalAnswering(FilterSource source);

    // Whether to poll the listener now. When not, the refused calls wait in
    // the kernel, and poll(2) must wake after pollTimeoutMs() to look again.
    bool answering();
    // poll(2)'s timeout when answering() said no: the budget's wait, never
    // -1 (the budget may refill between the two calls, and a listener left
    // out of the set with no timeout would leave the callers waiting).
    int pollTimeoutMs();
    // The listener is readable: answer one refused call. An error means the
    // listener is broken; the caller closes it (the kernel then answers the
    // rest ENOSYS, unreported).
    // A call `server` answers (the direct ingress's listen) spends the
    // budget too, and is not a refusal.
    Status answerOne(int listener_fd, const seccomp::CallServer* server = nullptr);

    // Every refused call answered, by name, with its exact count.
    std::vector<std::pair<std::string, std::uint64_t>> denials() const;
    // How often the budget ran out (the flood then waited); for the debug log.
    std::uint64_t budgetExhausted() const { return budget_.exhausted(); }

  private:
    FilterSource source_;
    seccomp::RefusalBudget budget_;
    // Built on the first refusal, so runs without one pay nothing.
    std::optional<seccomp::DenialCollector> collector_;
};

}  // namespace stockade
