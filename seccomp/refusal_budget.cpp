#include "seccomp/refusal_budget.h"

#include <algorithm>

namespace stockade::seccomp {
namespace {

constexpr std::uint64_t kNsPerSecond = 1000000000;
constexpr std::uint64_t kNsPerMs = 1000000;
constexpr std::uint64_t kAnswersPerWake = 16;

}  // namespace

// The bucket holds time: each answer costs 1/per_second of a second, and
// credit accrues with the clock up to `burst` answers' worth. Integer
// nanoseconds, so nothing drifts over a long service's run.
RefusalBudget::RefusalBudget(std::uint64_t per_second, std::uint64_t burst, std::uint64_t now_ns)
    : ns_per_answer_(kNsPerSecond / std::max<std::uint64_t>(per_second, 1)),
      capacity_ns_(ns_per_answer_ * std::max<std::uint64_t>(burst, 1)),
      credit_ns_(capacity_ns_),
      last_ns_(now_ns) {}

void RefusalBudget::refill(std::uint64_t now_ns) {
    if (now_ns <= last_ns_) return;
    credit_ns_ = std::min(capacity_ns_, credit_ns_ + (now_ns - last_ns_));
    last_ns_ = now_ns;
}

bool RefusalBudget::mayAnswer(std::uint64_t now_ns) {
    refill(now_ns);
    const bool may = credit_ns_ >= ns_per_answer_;
    if (!may && !empty_) ++exhausted_;
    empty_ = !may;
    return may;
}

void RefusalBudget::spend() {
    credit_ns_ -= std::min(credit_ns_, ns_per_answer_);
}

// Not the time to the next single answer: to a batch of them, so that a
// flood held at the rate wakes the supervisor once per batch rather than
// once or twice per answer.
int RefusalBudget::msUntilAnswer(std::uint64_t now_ns) {
    refill(now_ns);
    const std::uint64_t batch_ns = std::min(capacity_ns_, ns_per_answer_ * kAnswersPerWake);
    if (credit_ns_ >= batch_ns) return 1;
    const std::uint64_t ms = (batch_ns - credit_ns_ + kNsPerMs - 1) / kNsPerMs;
    return static_cast<int>(std::clamp<std::uint64_t>(ms, 1, 1000));
}

}  // namespace stockade::seccomp
