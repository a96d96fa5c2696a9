#include "runtime/run_command.h"
#include "runtime/supervisor_hardening.h"

#include <cstdio>
#include <string>

#include "base/log.h"
#include "runtime/host_check.h"
#include "runtime/policy_builder.h"
#include "runtime/profile.h"
#include "runtime/record_path.h"
#include "runtime/result.h"
#include "runtime/sandbox.h"
#include "runtime/text_safety.h"

namespace stockade {

namespace {

constexpr int kRefused = 125;

// A message may carry the command's text or a path of the sandbox's making:
// shown, never sent, to the terminal (runtime/text_safety.h).
void say(const std::string& line) {
    std::fprintf(stderr, "stockade: %s\n", escapeForTerminal(line).c_str());
}

}  // namespace

// The directories a refused run's sandbox would have written, as far as the
// options say (a worktree or --mount that does not resolve is what was
// refused, and then nothing ran that could have written there).
std::vector<std::string> writableFromOptions(const RunOptions& options) {
    std::vector<std::string> dirs;
    if (options.worktree) dirs.push_back(*options.worktree);
    for (const std::string& spec : options.mounts)
        if (auto m = parseMountSpec(spec, options.follow_symlinks); m && m->writable)
            dirs.push_back(m->source);
    return dirs;
}

// A run refused before anything started still leaves its record, if one was
// asked for and may be written where it asks, so a harness never has to
// guess why there is no result.
int refuseRun(const RunOptions& options, const std::string& profile, const std::string& reason,
              const std::string& status, const std::string& stage, const std::string& message) {
    say(message);
    if (!options.result) return kRefused;
    auto target = resolveRecordTarget("--result", *options.result, writableFromOptions(options));
    if (!target) return kRefused;  // the record's place is itself refused; nothing written
    auto s = writeRecord(*target, refusalJson(options.name.value_or(""), profile, options.command,
                                              status, reason, stage, message));
    if (!s) say("cannot write the result: " + s.error().describe());
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
        exit_code =
            refuseRun(options, profile->name, bounds ? "invalid_bounds" : "sandbox_unavailable",
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
    if (policy.result) {
        auto s = writeRecord(*policy.result, resultJson(policy, outcome));
        if (!s) say("cannot write the result: " + s.error().describe());
    }
    return result.exit_code;
}

int runCommand(const RunOptions& options) {
    StepLog steps;
    int refused = kRefused;
    auto policy = policyForRun(options, refused);
    if (!policy) return refused;
    if (auto s = hardenSupervisor(*policy); !s)
        return refuseRun(options, policy->profile_name, "sandbox_unavailable", "error",
                         "harden the supervisor", s.error().describe());
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
