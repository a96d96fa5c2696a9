#include "runtime/run_command.h"

#include <cstdio>
#include <string>

#include "base/log.h"
#include "runtime/host_check.h"
#include "runtime/policy_builder.h"
#include "runtime/profile.h"
#include "runtime/result.h"
#include "runtime/sandbox.h"

namespace stockade {

namespace {

constexpr int kRefused = 125;

void say(const std::string& line) {
    std::fprintf(stderr, "stockade: %s\n", line.c_str());
}

}  // namespace

// A run refused before anything started still leaves its record, if one was
// asked for, so a harness never has to guess why there is no result.
int refuseRun(const RunOptions& options, const std::string& profile, const std::string& reason,
              const std::string& status, const std::string& stage, const std::string& message) {
    say(message);
    if (options.result && !options.result->empty()) {
        auto s = writeRecord(
            *options.result, refusalJson(options.name.value_or(""), profile, options.command,
                                         status, reason, stage, message));
        if (!s) say("cannot write the result: " + s.error().describe());
    }
    return kRefused;
}

Result<Policy> policyForRun(const RunOptions& options, int& exit_code) {
    auto profile = loadProfile(options.profile);
    if (!profile) {
        exit_code = refuseRun(options, options.profile, "invalid_bounds", "blocked", "profile",
                              profile.error().describe());
        return profile.error();
    }
    auto policy = buildPolicy(*profile, options);
    if (!policy) {
        const std::string& text = policy.error().text();
        bool bounds = text.starts_with("--memory") || text.starts_with("--pids") ||
                      text.starts_with("--cpu-time") || text.starts_with("--timeout") ||
                      text.starts_with("--output-limit") || text.starts_with("--tmp-size");
        // A --result that was itself refused gets no record written there.
        RunOptions record_to = options;
        if (text.starts_with("--result")) record_to.result.reset();
        exit_code =
            refuseRun(record_to, profile->name, bounds ? "invalid_bounds" : "sandbox_unavailable",
                      bounds ? "blocked" : "error", "arguments", policy.error().describe());
    }
    return policy;
}

int finishRun(const Policy& policy, const SandboxOutcome& outcome) {
    SandboxResult result = classify(outcome);
    if (outcome.ending == Ending::SetupFailed || outcome.ending == Ending::Refused)
        say(outcome.error_message +
            (outcome.error_errno ? ": " + errnoName(outcome.error_errno) : std::string()));
    else if (outcome.ending == Ending::NotFound)
        say(policy.command[0] + ": command not found in the sandbox");
    else if (outcome.ending == Ending::NotExecutable)
        say(policy.command[0] + ": cannot execute: " + errnoName(outcome.error_errno));
    if (policy.result_path) {
        auto s = writeRecord(*policy.result_path, resultJson(policy, outcome));
        if (!s) say("cannot write the result: " + s.error().describe());
    }
    return result.exit_code;
}

int runCommand(const RunOptions& options) {
    StepLog steps;
    int refused = kRefused;
    auto policy = policyForRun(options, refused);
    if (!policy) return refused;
    steps.done("load the profile, build the policy");
    SandboxOutcome outcome = runSandbox(*policy);
    steps.done("the sandbox: the steps above, then its cgroups removed");
    int code = finishRun(*policy, outcome);
    steps.done("write the result");
    return code;
}

int profileShowCommand(const std::string& name_or_file) {
    auto profile = loadProfile(name_or_file);
    if (!profile) {
        say(profile.error().describe());
        return kRefused;
    }
    std::fputs(profileToJson(*profile).c_str(), stdout);
    return 0;
}

int checkCommand(const std::string& profile_name, bool json) {
    auto profile = loadProfile(profile_name);
    if (!profile) {
        say(profile.error().describe());
        return kRefused;
    }
    HostReport report = checkHost(hostCheckRequestFor(*profile));
    std::fputs((json ? reportJson(report) : formatReport(report)).c_str(), stdout);
    return report.can_run ? 0 : 1;
}

int profileCheckCommand(const std::string& file) {
    auto profile = loadProfile(file);
    if (!profile) {
        say(profile.error().describe());
        return kRefused;
    }
    std::printf("%s: valid\n", file.c_str());
    return 0;
}

}  // namespace stockade
