#include "cli/run_command.h"
#include "runtime/supervisor/supervisor_hardening.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "base/log.h"
#include "base/text_safety.h"
#include "runtime/check/host_check.h"
#include "runtime/policy/policy_builder.h"
#include "runtime/policy/profile.h"
#include "runtime/record/run_report.h"
#include "runtime/supervisor/echo_sink.h"
#include "runtime/supervisor/sandbox.h"

namespace stockade {

namespace {

constexpr int kRefused = 125;

void say(const std::string& line) {
    writeWithin(2, "stockade: " + escapeForTerminal(line) + "\n", 1000);
}

}  // namespace

int runCommand(const RunOptions& options) {
    StepLog steps;
    int refused = kRefused;
    auto run = prepareRun(options, refused);
    if (!run) return refused;
    keepWorktreeWalk(run->policy);
    if (auto s = hardenSupervisor(run->policy); !s)
        return refuseRun(options, run->policy.profile_name, "sandbox_unavailable", "error",
                         "harden the supervisor", s.error().describe());
    steps.done("load the profile, build the policy");
    SandboxOutcome outcome = runSandbox(run->policy);
    // The kept walk is written; the record may need the fd.
    if (run->policy.fs.state_dir) run->policy.fs.state_dir->reset();
    steps.done("the sandbox: the steps above, then its cgroups removed");
    int code = finishRun(*run, outcome, &options);
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

int checkCommand(const std::string& profile_name, bool json,
                 const std::vector<std::string>& require) {
    auto profile = loadProfile(profile_name);
    if (!profile) {
        say(profile.error().describe());
        return kRefused;
    }
    // What the run will --require, judged as the run judges it: a CI step
    // that passes `check --require X` does not then see `run --require X`
    // refused.
    const auto& known = knownRequirements();
    for (const std::string& list : require) {
        std::string item;
        for (size_t start = 0; start <= list.size();) {
            size_t comma = std::min(list.find(',', start), list.size());
            item = list.substr(start, comma - start);
            start = comma + 1;
            if (item.empty()) continue;
            if (std::find(known.begin(), known.end(), item) == known.end()) {
                say("--require: unknown guarantee \"" + item + "\"");
                return kRefused;
            }
            profile->require.push_back(item);
        }
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
