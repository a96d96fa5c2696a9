// Denials reported: which system calls the sandbox was refused, by name, with
// a count, for the result JSON (SPEC §6 "denials", issue 3).
//
// The supervisor learns of a refusal through seccomp user notification
// (seccomp_unotify(2)). withNotifiedDenials() rewrites a policy so that each
// refusal the policy answers with an errno other than ENOSYS becomes
// Action::Notify; the child installs that program with a listener
// (installFilterWithListenerInChild) and hands the listener over
// (listener_in_child.h); the supervisor answers each notification with the
// errno the *original* policy gives (DenialAnswers) and counts it
// (DenialCollector). A notified call is never performed: the answer is always
// an error, never SECCOMP_USER_NOTIF_FLAG_CONTINUE.
//
// Cost falls only on refused calls. Allowed calls are decided in the kernel
// as before, and so are ENOSYS answers (calls newer than the policy, clone3),
// which glibc and language runtimes make routinely to probe for features.
#pragma once

#include <linux/seccomp.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "seccomp/policy.h"

namespace stockade::seccomp {

// `policy` with every Errno action (rules and default) whose errno is not
// ENOSYS turned into Notify. Everything else, including the table that
// decides which numbers answer ENOSYS, is unchanged. The result must be
// installed with a listener: without one the kernel answers notified calls
// with ENOSYS.
SeccompPolicy withNotifiedDenials(const SeccompPolicy& policy);

// Whether a child can install withNotifiedDenials(policy) and still hand the
// listener to the supervisor: sendmsg(2) and close(2) run after the filter
// and before anyone can answer, so a policy that refuses them would block the
// child for good. An error names the call; the runtime then installs the
// original policy without reporting (the answers are the same either way).
Status checkDenialsReportable(const SeccompPolicy& policy);

// The errno the original policy gives each refused call, decided as
// compileFilter decides (policy.h): a matching conditional refusal, else the
// call's unconditional rule, else the default action. Built in the parent from
// the policy *before* withNotifiedDenials, because the rewrite merges refusals
// with different errnos into one Notify.
class DenialAnswers {
  public:
    explicit DenialAnswers(const SeccompPolicy& policy);

    // What to answer a notified call with: an errno, 0..4095. A call the
    // policy itself sends to the supervisor (Action::Notify) gets ENOSYS, as
    // when no supervisor listens. A call the policy would not have refused
    // cannot be notified; should one be, it still gets EPERM, never the call.
    int errnoFor(const seccomp_data& call) const;

    // The name of a native syscall number: libseccomp's, else the policy's own
    // (for calls newer than the libseccomp we link), else "syscall_N".
    std::string nameOf(int nr) const;

  private:
    struct ConditionalRefusal {
        std::vector<ArgCondition> args;
        int err;
    };
    struct PerSyscall {
        std::vector<ConditionalRefusal> conditional;  // in policy order
        bool has_unconditional = false;
        std::optional<int> unconditional;  // set when that rule refuses
    };
    std::map<int, PerSyscall> by_nr_;
    std::optional<int> default_answer_;  // set when the default refuses
    std::map<int, std::string> policy_names_;
};

struct Denial {
    std::string syscall;
    std::uint64_t count = 0;

    bool operator==(const Denial&) const = default;
};

// The answer to a call the supervisor served itself: the call's return value,
// or an errno (then `value` is ignored).
struct ServedAnswer {
    std::int64_t value = 0;
    int error = 0;
};

// A notified call the supervisor performs or judges itself rather than
// refuses: a dev server's listen(2) under the direct ingress
// (runtime/net/direct_ingress.h). It may act on the caller through
// `listener_fd` (SECCOMP_IOCTL_NOTIF_ADDFD) before the answer is sent, and
// returns that answer; nullopt leaves the call to the refusal path.
using CallServer =
    std::function<std::optional<ServedAnswer>(int listener_fd, const seccomp_notif& call)>;

// The supervisor's side of the listener: answers and counts notifications.
// Single-threaded; allocates only on the first handleOne() and in denials().
class DenialCollector {
  public:
    explicit DenialCollector(DenialAnswers answers);

    // Receives one notification from `listener_fd`, answers it with the
    // policy's errno and counts it. Call it when poll(2) reports POLLIN on the
    // listener: SECCOMP_IOCTL_NOTIF_RECV blocks while nothing is pending.
    // A notification whose caller died or was interrupted by a signal before
    // the answer (ENOENT) is void and not counted; an interrupted call that
    // the kernel restarts is notified afresh, so each call is counted once,
    // when its answer is delivered. EINTR returns success with nothing
    // handled; poll again. Any other failure is an error naming the ioctl.
    // With `server`, each notification goes to it first; a call it answers
    // is not a refusal and is counted in served() alone.
    Status handleOne(int listener_fd, const CallServer* server = nullptr);

    // Every refused call answered so far, sorted by name. Numbers outside
    // 0..1023 (reachable only under a policy that turns off ENOSYS above its
    // table) are counted together as "other", so that the sandbox cannot
    // grow the supervisor's memory by trying every number.
    std::vector<Denial> denials() const;

    std::uint64_t total() const { return total_; }
    std::uint64_t served() const { return served_; }

  private:
    static constexpr int kTrackedNumbers = 1024;

    DenialAnswers answers_;
    // Sized per SECCOMP_GET_NOTIF_SIZES on first use: the kernel writes its
    // own struct size, which may exceed this header's.
    std::vector<std::uint64_t> request_;
    std::vector<std::uint64_t> response_;
    std::array<std::uint64_t, kTrackedNumbers> counts_{};
    std::uint64_t other_ = 0;
    std::uint64_t total_ = 0;
    std::uint64_t served_ = 0;
};

// The supervisor's half of sendListenerInChild (listener_in_child.h): receives
// the listener fd, close-on-exec, from `socket_fd`. Call it when poll(2)
// reports POLLIN; EOF (the child exited or exec'd without sending) is an error.
Result<UniqueFd> receiveListener(int socket_fd);

}  // namespace stockade::seccomp
