#include "seccomp/denials.h"
#include "base/fd_passing.h"

#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "seccomp/filter.h"
#include "seccomp/listener_in_child.h"

namespace stockade::seccomp {
namespace {

// The refusals the rewrite hands to the supervisor. ENOSYS stays in the
// kernel: it is how the policy says "newer than me" (clone3, the calls above
// the table), and glibc probes clone3 on every fork.
bool isNotifiedRefusal(Action action, int err) {
    return action == Action::Errno && err != ENOSYS;
}

// What the supervisor answers for a call the notified program hands it, when
// `action` decided it; nothing for an action that does not reach it.
std::optional<int> notifiedAnswer(Action action, int err) {
    if (isNotifiedRefusal(action, err)) return err;
    // The policy's own Notify: with no supervisor listening the kernel
    // answers ENOSYS, and reporting must not change what a call gets.
    if (action == Action::Notify) return ENOSYS;
    return std::nullopt;
}

bool holds(const ArgCondition& test, const __u64 (&args)[6]) {
    const std::uint64_t arg = args[test.index];
    switch (test.op) {
        case CompareOp::NotEqual:
            return arg != test.value;
        case CompareOp::Less:
            return arg < test.value;
        case CompareOp::LessOrEqual:
            return arg <= test.value;
        case CompareOp::Equal:
            return arg == test.value;
        case CompareOp::GreaterOrEqual:
            return arg >= test.value;
        case CompareOp::Greater:
            return arg > test.value;
        case CompareOp::MaskedEqual:
            return (arg & test.value) == test.value_two;
    }
    return false;
}

bool allHold(const std::vector<ArgCondition>& tests, const __u64 (&args)[6]) {
    for (const ArgCondition& test : tests) {
        // compileFilter refuses such a rule; never let it index out of range.
        if (test.index > 5 || !holds(test, args)) return false;
    }
    return true;
}

bool letsThrough(Action action) {
    return action == Action::Allow || action == Action::Log;
}

// Whether `policy` lets a call of `name` through whose arguments at the
// indexes in `known` are those values, whatever the others are: a refusal
// whose conditions might all hold for such a call stops it.
bool letsCallThrough(const SeccompPolicy& policy, const std::string& name,
                     const std::map<unsigned, std::uint64_t>& known) {
    const SyscallLookup wanted = lookupSyscall(name);
    if (wanted.kind != SyscallNameKind::Native) return false;
    int highest = -1;
    bool has_unconditional = false;
    bool unconditional_allows = false;
    for (const SyscallRule& rule : policy.rules) {
        for (const std::string& rule_name : rule.names) {
            const SyscallLookup found = lookupSyscall(rule_name);
            if (found.kind != SyscallNameKind::Native) continue;
            highest = std::max(highest, found.nr);
            if (found.nr != wanted.nr) continue;
            if (!rule.args.empty()) {
                if (letsThrough(rule.action)) continue;
                bool might_hold = true;
                for (const ArgCondition& test : rule.args) {
                    auto value = known.find(test.index);
                    if (value == known.end() || test.index > 5) continue;
                    __u64 args[6] = {};
                    args[test.index] = value->second;
                    if (!holds(test, args)) might_hold = false;
                }
                if (might_hold) return false;
            } else if (!has_unconditional) {
                has_unconditional = true;
                unconditional_allows = letsThrough(rule.action);
            }
        }
    }
    // policy.h, step 2: above the table the answer is ENOSYS.
    const bool permissive = letsThrough(policy.default_action);
    if (policy.newer_syscalls_enosys && !permissive && highest >= 0 && wanted.nr > highest)
        return false;
    return has_unconditional ? unconditional_allows : permissive;
}

std::size_t wordsFor(std::size_t bytes) {
    return (bytes + sizeof(std::uint64_t) - 1) / sizeof(std::uint64_t);
}

}  // namespace

SeccompPolicy withNotifiedDenials(const SeccompPolicy& policy) {
    SeccompPolicy out = policy;
    if (isNotifiedRefusal(out.default_action, out.default_errno)) {
        out.default_action = Action::Notify;
        out.default_errno = 0;
    }
    for (SyscallRule& rule : out.rules) {
        if (!isNotifiedRefusal(rule.action, rule.errno_ret)) continue;
        rule.action = Action::Notify;
        rule.errno_ret = 0;
    }
    return out;
}

Status checkDenialsReportable(const SeccompPolicy& policy) {
    // The child's two calls (seccomp/listener_in_child.cpp, base/fd_passing):
    // sendmsg(fd, msg, MSG_NOSIGNAL), then close(fd).
    const std::pair<const char*, std::map<unsigned, std::uint64_t>> calls[] = {
        {"sendmsg", {{2, MSG_NOSIGNAL}}}, {"close", {}}};
    for (const auto& [name, known] : calls) {
        if (!letsCallThrough(policy, name, known))
            return Error::message(
                std::string("the seccomp policy does not always allow ") + name +
                (known.empty() ? "" : " with the child's arguments") +
                ", which the child makes after installing the filter to hand the listener "
                "to the supervisor; denials cannot be reported under it");
    }
    return okStatus();
}

DenialAnswers::DenialAnswers(const SeccompPolicy& policy)
    : default_answer_(notifiedAnswer(policy.default_action, policy.default_errno)) {
    for (const SyscallRule& rule : policy.rules) {
        const std::optional<int> answer = notifiedAnswer(rule.action, rule.errno_ret);
        for (const std::string& name : rule.names) {
            // Names that are not native are skipped by compileFilter too (or
            // refused by it, when no architecture has them).
            const SyscallLookup found = lookupSyscall(name);
            if (found.kind != SyscallNameKind::Native) continue;
            policy_names_.emplace(found.nr, name);
            PerSyscall& entry = by_nr_[found.nr];
            if (!rule.args.empty()) {
                if (answer) entry.conditional.push_back({rule.args, *answer});
            } else if (!entry.has_unconditional) {
                // compileFilter refuses two unconditional rules that disagree.
                entry.has_unconditional = true;
                entry.unconditional = answer;
            }
        }
    }
}

int DenialAnswers::errnoFor(const seccomp_data& call) const {
    // The notification itself says a notified refusal decided; only which one
    // is left to find. policy.h, steps 3 to 5. (The architecture needs no
    // check: the filter kills any call that is not native before this.)
    if (auto it = by_nr_.find(call.nr); it != by_nr_.end()) {
        for (const ConditionalRefusal& refusal : it->second.conditional) {
            if (allHold(refusal.args, call.args)) return refusal.err;
        }
        if (it->second.has_unconditional) return it->second.unconditional.value_or(EPERM);
    }
    return default_answer_.value_or(EPERM);
}

std::string DenialAnswers::nameOf(int nr) const {
    if (nr >= 0) {
        if (char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr)) {
            std::string text(name);
            std::free(name);
            return text;
        }
    }
    if (auto it = policy_names_.find(nr); it != policy_names_.end()) return it->second;
    return "syscall_" + std::to_string(nr);
}

DenialCollector::DenialCollector(DenialAnswers answers) : answers_(std::move(answers)) {}

Status DenialCollector::handleOne(int listener_fd, const CallServer* server) {
    if (request_.empty()) {
        seccomp_notif_sizes sizes{};
        if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0U, &sizes) != 0)
            return Error::fromErrno("seccomp(SECCOMP_GET_NOTIF_SIZES)");
        request_.resize(
            wordsFor(std::max<std::size_t>(sizes.seccomp_notif, sizeof(seccomp_notif))));
        response_.resize(
            wordsFor(std::max<std::size_t>(sizes.seccomp_notif_resp, sizeof(seccomp_notif_resp))));
    }
    // The kernel refuses a receive buffer that is not zeroed (EINVAL).
    std::fill(request_.begin(), request_.end(), 0);
    auto* request = reinterpret_cast<seccomp_notif*>(request_.data());
    if (ioctl(listener_fd, SECCOMP_IOCTL_NOTIF_RECV, request) < 0) {
        // ENOENT: the caller was killed or interrupted between the wake-up and
        // the receive; its notification is gone.
        if (errno == EINTR || errno == ENOENT) return okStatus();
        return Error::fromErrno("ioctl(seccomp listener, SECCOMP_IOCTL_NOTIF_RECV)");
    }

    std::optional<ServedAnswer> served;
    if (server && *server) served = (*server)(listener_fd, *request);
    const int err = served ? served->error : answers_.errnoFor(request->data);
    std::fill(response_.begin(), response_.end(), 0);
    auto* response = reinterpret_cast<seccomp_notif_resp*>(response_.data());
    response->id = request->id;
    response->val = served && served->error == 0 ? served->value : 0;
    response->error = -err;
    // Never SECCOMP_USER_NOTIF_FLAG_CONTINUE: a refused call must not run,
    // and a served one was performed by the supervisor on what it judged.
    response->flags = 0;
    while (ioctl(listener_fd, SECCOMP_IOCTL_NOTIF_SEND, response) < 0) {
        if (errno == EINTR) continue;
        // The caller died or a signal interrupted it while it waited: the
        // answer has no one to go to. A restarted call is notified afresh.
        if (errno == ENOENT) return okStatus();
        return Error::fromErrno("ioctl(seccomp listener, SECCOMP_IOCTL_NOTIF_SEND, syscall " +
                                std::to_string(request->data.nr) + ", " + errnoName(err) + ")");
    }

    if (served) {
        ++served_;
        return okStatus();
    }
    const int nr = request->data.nr;
    if (nr >= 0 && nr < kTrackedNumbers) {
        ++counts_[static_cast<std::size_t>(nr)];
    } else {
        ++other_;
    }
    ++total_;
    return okStatus();
}

std::vector<Denial> DenialCollector::denials() const {
    std::vector<Denial> out;
    for (int nr = 0; nr < kTrackedNumbers; ++nr) {
        const std::uint64_t count = counts_[static_cast<std::size_t>(nr)];
        if (count) out.push_back({answers_.nameOf(nr), count});
    }
    if (other_) out.push_back({"other", other_});
    std::sort(out.begin(), out.end(),
              [](const Denial& a, const Denial& b) { return a.syscall < b.syscall; });
    return out;
}

Result<UniqueFd> receiveListener(int socket_fd) {
    // One byte more than the message, to see a longer one as the wrong one;
    // room for a few fds, so that extra ones are received (and closed)
    // rather than truncated away.
    char payload[sizeof kListenerMessage + 1];
    int received[kMaxPassedFds];
    int count = 0;
    bool truncated = false;
    ssize_t n = receiveWithFds(socket_fd, payload, sizeof payload, received, &count, 0, &truncated);
    std::vector<UniqueFd> fds;
    for (int i = 0; i < count; ++i) fds.emplace_back(received[i]);
    if (n < 0) return Error::fromErrno("recvmsg(seccomp listener socket)", static_cast<int>(-n));
    if (n == 0 && fds.empty())
        return Error::message("the child closed the seccomp listener socket without sending one");
    if (truncated) return Error::message("the seccomp listener message was truncated");
    if (static_cast<std::size_t>(n) != sizeof kListenerMessage ||
        std::memcmp(payload, kListenerMessage, sizeof kListenerMessage) != 0)
        return Error::message("the seccomp listener socket carried another message (" +
                              std::to_string(n) + " bytes)");
    if (fds.size() != 1)
        return Error::message("the seccomp listener message carried " + std::to_string(fds.size()) +
                              " fds, not 1");
    return std::move(fds.front());
}

}  // namespace stockade::seccomp
