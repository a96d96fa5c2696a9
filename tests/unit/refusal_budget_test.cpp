// seccomp/refusal_budget: the token bucket that bounds how fast the supervisor
// answers refused calls, on a clock the test moves by hand.

#include "seccomp/refusal_budget.h"

#include <catch2/catch.hpp>
#include <cstdint>

namespace stockade::seccomp {
namespace {

constexpr std::uint64_t kMs = 1000000;
constexpr std::uint64_t kStart = 5000 * kMs;

// Answers given at `now` until the budget says no.
int drain(RefusalBudget& budget, std::uint64_t now) {
    int given = 0;
    while (budget.mayAnswer(now)) {
        budget.spend();
        ++given;
        if (given > 1000000) break;  // a budget that never empties
    }
    return given;
}

}  // namespace

TEST_CASE("the refusal budget gives a burst at once, then its rate", "[seccomp][denials]") {
    RefusalBudget budget(1000, 50, kStart);  // 1 answer per ms, 50 at once
    CHECK(drain(budget, kStart) == 50);
    CHECK(budget.exhausted() == 1);
    CHECK_FALSE(budget.mayAnswer(kStart));
    // Still one episode of waiting, however often it is asked.
    CHECK(budget.exhausted() == 1);
    // The wait is to a batch of 16 answers, not to the next one.
    CHECK(budget.msUntilAnswer(kStart) == 16);
    // 10 ms later: 10 answers.
    CHECK(drain(budget, kStart + 10 * kMs) == 10);
    CHECK(budget.exhausted() == 2);
    // Half a millisecond buys none; the wait rounds up to whole ones.
    CHECK(drain(budget, kStart + 10 * kMs + kMs / 2) == 0);
    CHECK(budget.msUntilAnswer(kStart + 10 * kMs + kMs / 2) == 16);
    // Asked when answers are available, it still gives a wait, never none.
    CHECK(budget.msUntilAnswer(kStart + 40 * kMs) == 1);
}

TEST_CASE("the refusal budget never holds more than its burst", "[seccomp][denials]") {
    RefusalBudget budget(1000, 50, kStart);
    CHECK(drain(budget, kStart) == 50);
    // An hour idle refills to the burst, not to 3.6 million.
    CHECK(drain(budget, kStart + 3600 * 1000 * kMs) == 50);
}

TEST_CASE("the refusal budget bounds answers over a long flood to rate times time plus burst",
          "[seccomp][denials]") {
    RefusalBudget budget(2000, 100, kStart);
    int given = 0;
    // A caller asking every 0.1 ms for 5 s, as a flood would.
    for (std::uint64_t t = 0; t <= 5000 * kMs; t += kMs / 10) given += drain(budget, kStart + t);
    CHECK(given == 2000 * 5 + 100);
}

TEST_CASE("the refusal budget's wait is the time to a batch of answers, at most a second",
          "[seccomp][denials]") {
    RefusalBudget slow(2, 1, kStart);  // one answer per 500 ms, a batch of one
    CHECK(drain(slow, kStart) == 1);
    CHECK(slow.msUntilAnswer(kStart) == 500);
    CHECK(slow.msUntilAnswer(kStart + 499 * kMs) == 1);
    CHECK(drain(slow, kStart + 499 * kMs) == 0);
    CHECK(drain(slow, kStart + 500 * kMs) == 1);
    // A clock that goes backwards changes nothing.
    CHECK(drain(slow, kStart) == 0);
    RefusalBudget slowest(0, 0, kStart);  // clamped to 1 per second, burst 1
    CHECK(drain(slowest, kStart) == 1);
    CHECK(slowest.msUntilAnswer(kStart) == 1000);
}

}  // namespace stockade::seccomp
