// The judging side of `stockade check` (host_check.h): from HostFacts, one
// Verdict per entry; reportFromFacts (host_report.cpp) makes them the
// HostReport. Internal to runtime/host_*.cpp.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>

#include "runtime/check/host_check.h"

namespace stockade::host_check_detail {

struct Verdict {
    CheckState state = CheckState::Ok;
    std::string mechanism;
    std::string reason;
    std::string fix;
};

// host_verdicts.cpp: the words every judge uses.

Verdict ok(std::string mechanism);
Verdict unavailable(std::string reason, std::string fix);
Verdict degraded(std::string mechanism, std::string reason, std::string fix);

// The answer of a step that was never reached because an earlier one failed.
inline constexpr const char* kNotProbed = "not probed: ";

std::string failed(const std::string& call, int err);
std::optional<int> stepErr(const HostFacts& f, SandboxStep step);
std::string seccompNote(const HostFacts& f);

inline constexpr const char* kSeccompFix =
    "run stockade outside the container or sandbox that filters it, or give that container a "
    "seccomp profile that allows the call (docker: --security-opt seccomp=unconfined)";

// The first clause of a reason, for lines that summarize others: reasons
// put their detail in parentheses after it.
std::string headline(const std::string& reason);

// host_apparmor_verdicts.cpp: Ubuntu's user-namespace restriction, and the
// AppArmor profile that exempts stockade from it (contrib/apparmor/).

inline constexpr const char* kAppArmorProfilePath = "/etc/apparmor.d/stockade";
// AppArmor leaves this process's user namespaces without capabilities, or
// denies them: Ubuntu's restriction on an unprivileged process, or a
// profile that confines this binary without granting userns.
bool appArmorRestricts(const HostFacts& f);
// `what` (a step in the user namespace) was refused, and AppArmor restricts.
Verdict appArmorVerdict(const HostFacts& f, const std::string& what);
// Whether this binary is covered by a profile that grants userns, where
// Ubuntu's restriction applies.
Verdict judgeAppArmorUserns(const HostFacts& f);

// host_sandbox_verdicts.cpp: the sandbox's clone and child sequence.

// The first sandbox step among `steps` that failed or was not reached.
struct StepFailure {
    SandboxStep step;
    std::optional<int> err;  // nullopt: not reached
};
std::optional<StepFailure> firstFailure(const HostFacts& f,
                                        std::initializer_list<SandboxStep> steps);
Verdict stepVerdict(const HostFacts& f, const StepFailure& failure);

Verdict judgeUserNs(const HostFacts& f);
Verdict judgeNamespace(const HostFacts& f, const std::string& name, const std::string& flag,
                       std::initializer_list<SandboxStep> content, const std::string& mechanism);
Verdict judgeClone3(const HostFacts& f);

// host_feature_verdicts.cpp: the other kernel features.

Verdict judgeNoNewPrivs(const HostFacts& f);
Verdict judgeSeccomp(const HostFacts& f);
Verdict judgeSeccompListener(const HostFacts& f);
Verdict judgeLandlock(const HostFacts& f);
Verdict judgeVeth(const HostFacts& f);
Verdict judgeDirect(const HostFacts& f);
Verdict judgeIdmap(const HostFacts& f);
Verdict judgeCloseRange(const HostFacts& f);

// host_limit_verdicts.cpp: the mechanisms that hold a limit, and the limits.

Verdict judgeCgroup2Base(const HostFacts& f);
Verdict judgeCgroup2(const HostFacts& f, const std::string& controller);
Verdict judgeCgroup1(const HostFacts& f, const std::string& controller);
Verdict judgeRlimits(const HostFacts& f);
Verdict judgeLimit(const HostFacts& f, const std::string& limit, const std::string& rlimit,
                   const Verdict& v2, const Verdict& v1, const Verdict& rl);

}  // namespace stockade::host_check_detail
