// How fast the supervisor answers refused calls (denials.h): a token bucket
// that bounds the supervisor's work, and so its CPU, however hard the sandbox
// floods it with refusals (issue 25, point 2).
//
// Why the supervisor waits rather than handing the rest to the kernel: the
// kernel cannot take over part of the answering. A classic BPF filter keeps no
// state between calls, so no program can notify the first K calls and answer
// the rest itself; a filter can only be added by the process it filters, not
// by the supervisor; and closing the listener makes the kernel answer every
// notified call ENOSYS (seccomp_unotify(2); kernel/seccomp.c answers ENOSYS
// when a filter has no listener), not the policy's errno, and ends reporting
// for every other call too. So past the bound the supervisor stops reading the
// listener for a while: a refused call then waits in the kernel for its
// answer, as any notified call does, and costs neither side CPU while it
// waits. Every answered call is counted; only the flood slows down. Two
// edges: a call still waiting when the run is killed is never answered nor
// counted (the record's count is then a lower bound), and a signal whose
// handler lacks SA_RESTART ends the wait with EINTR, not the policy's errno,
// a window the budget widens from microseconds to up to a second.
//
// The wait cannot outlive the run: the caller waits interruptibly
// (seccomp_do_user_notification), so --timeout, cancellation and the final
// SIGKILL of the namespace end it, and a signal's handler runs (the call is
// then restarted and notified afresh).
#pragma once

#include <cstdint>

namespace stockade::seccomp {

// Sustained answers per second, and how many may come at once after a quiet
// spell. At the supervisor's measured cost per answer (docs/seccomp.md) the
// rate keeps it to a few percent of a core; the burst lets a program's
// start-up probes (a few hundred refusals at most, seen in practice) through
// without waiting.
inline constexpr std::uint64_t kRefusalAnswersPerSecond = 2000;
inline constexpr std::uint64_t kRefusalAnswerBurst = 2000;

class RefusalBudget {
  public:
    // Full at `now_ns` (any monotonic clock, the same for every call).
    RefusalBudget(std::uint64_t per_second, std::uint64_t burst, std::uint64_t now_ns);

    // Whether an answer may be given at `now_ns`. Taking one is spend().
    bool mayAnswer(std::uint64_t now_ns);
    // One answer given; call only after mayAnswer() said yes.
    void spend();
    // When mayAnswer() says no: milliseconds until a batch of answers (16, or
    // the burst if smaller) may be given, at least 1 and at most 1000: poll(2)'s
    // timeout. Never "no timeout": a caller that asks just as the budget
    // refills still gets a wait that ends.
    int msUntilAnswer(std::uint64_t now_ns);

    // How often the budget was found empty: each time, the sandbox's next
    // refused call waited for its answer.
    std::uint64_t exhausted() const { return exhausted_; }

  private:
    void refill(std::uint64_t now_ns);

    std::uint64_t ns_per_answer_;
    std::uint64_t capacity_ns_;
    std::uint64_t credit_ns_;
    std::uint64_t last_ns_;
    std::uint64_t exhausted_ = 0;
    bool empty_ = false;
};

}  // namespace stockade::seccomp
