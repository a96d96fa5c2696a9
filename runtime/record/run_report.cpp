#include "runtime/record/run_report.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "base/text_safety.h"
#include "runtime/policy/policy_builder.h"
#include "runtime/policy/profile.h"
#include "runtime/record/result.h"
#include "runtime/record/state_dir.h"
#include "runtime/supervisor/echo_sink.h"

namespace stockade {

namespace {

constexpr int kRefused = 125;

// A message may carry the command's text or a path of the sandbox's making:
// shown, never sent, to the terminal (base/text_safety.h). A caller that
// does not read its stderr holds stockade up for at most a second.
void say(const std::string& line) {
    writeWithin(2, "stockade: " + escapeForTerminal(line) + "\n", 1000);
}

// "512m", "2g", "1536k" or a plain byte count: as the user would type it.
std::string sizeText(uint64_t bytes) {
    for (auto [shift, suffix] : {std::pair{30, "g"}, std::pair{20, "m"}, std::pair{10, "k"}})
        if (bytes >= (1ull << shift) && bytes % (1ull << shift) == 0)
            return std::to_string(bytes >> shift) + suffix;
    return std::to_string(bytes);
}

std::string secondsText(uint64_t ms) {
    std::string text = std::to_string(ms / 1000);
    if (ms % 1000) {
        char frac[8];
        std::snprintf(frac, sizeof(frac), ".%03u", static_cast<unsigned>(ms % 1000));
        std::string f = frac;
        while (f.back() == '0') f.pop_back();
        text += f;
    }
    return text;
}

std::string mechanismOf(const SandboxOutcome& o, const char* key) {
    auto it = o.enforced.find(key);
    return it == o.enforced.end() ? "nothing" : it->second;
}

// The one line that says which bound of stockade's ended the run and what
// to change; empty when the command ended on its own. Printed with or
// without --quiet, which silences the command, not stockade.
std::string boundLine(const Policy& policy, const SandboxOutcome& o, const SandboxResult& r) {
    const Limits& limits = policy.limits;
    if (o.ending == Ending::TimedOut)
        return "timed out: stopped after --timeout " +
               secondsText(limits.timeout_ms.value_or(o.duration_ms)) +
               " s of wall-clock time, and everything in the sandbox was killed (raise --timeout "
               "if it needs longer)";
    if (o.ending == Ending::OutputLimit)
        return "killed at the output limit: stdout and stderr together passed --output-limit " +
               sizeText(limits.output_bytes.value_or(0)) +
               " (raise --output-limit, or have the command write its output to a file)";
    if (!r.reason) return "";
    if (*r.reason == "memory_limit")
        return "killed by the memory limit: --memory " + sizeText(limits.memory_bytes.value_or(0)) +
               " (held by " + mechanismOf(o, "memory") + "; peak " + sizeText(o.peak_memory_bytes) +
               ") ran out (raise --memory)";
    if (*r.reason == "pids_limit")
        return "the process limit stopped the command: --pids " +
               std::to_string(limits.pids.value_or(0)) + " (held by " + mechanismOf(o, "pids") +
               ") refused it a new process (raise --pids)";
    if (*r.reason == "cpu_time")
        return "killed at the CPU time limit: --cpu-time " +
               secondsText(limits.cpu_time_ms.value_or(0)) +
               " s (RLIMIT_CPU) used up (raise --cpu-time)";
    return "";
}

// The path and the user a failed step acted on, where its message alone
// would be a bare errno ("change to the working directory: EACCES").
std::string setupFailureDetail(const Policy& policy, const SandboxOutcome& o) {
    const std::string stage = "change to the working directory";
    if (!o.error_message.starts_with(stage)) return "";
    std::string who = policy.uid ? "uid " + std::to_string(*policy.uid) + " inside" : "";
    if (o.host_uid)
        who += (who.empty() ? "" : ", ") + std::string("host uid ") + std::to_string(*o.host_uid);
    // The child's call names the directory (chdir("/x")) when it says.
    const std::string where = o.error_message == stage ? " " + policy.workdir : "";
    return where + (who.empty() ? "" : " as " + who) +
           " (--workdir; a directory the sandbox's user may enter)";
}

// A limit the user asked for on the command line that only an rlimit held:
// weaker than asked (per process, or per user), so said where it is seen.
std::vector<std::string> weakerLimitLines(const RunOptions* options, const SandboxOutcome& o) {
    std::vector<std::string> lines;
    if (!options) return lines;
    auto degraded = [&](const char* key) {
        return std::find(o.degraded.begin(), o.degraded.end(), key) != o.degraded.end();
    };
    const char* fix =
        "no cgroup is delegated to this user (stockade check says how to get one; "
        "--require ";
    if (options->memory && degraded("memory"))
        lines.push_back("--memory " + *options->memory +
                        " was held by RLIMIT_DATA, per process, not for the sandbox as a whole: " +
                        fix + "memory refuses such a run)");
    if (options->pids && degraded("pids"))
        lines.push_back("--pids " + *options->pids +
                        " was held by RLIMIT_NPROC, counted per user, not per sandbox: " + fix +
                        "pids refuses such a run)");
    return lines;
}

}  // namespace

// The directories a refused run's sandbox would have written, as far as the
// options say (a worktree or --mount that does not resolve is what was
// refused, and then nothing ran that could have written there).
static std::vector<std::string> writableFromOptions(const RunOptions& options) {
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

Result<PreparedRun> prepareRun(const RunOptions& options, int& exit_code) {
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
        return policy.error();
    }
    PreparedRun run{std::move(*policy), std::nullopt};
    if (Status s = refuseWritableStateDirs(writableHostDirs(run.policy.fs)); !s) {
        exit_code = refuseRun(options, profile->name, "sandbox_unavailable", "error", "arguments",
                              s.error().describe());
        return s.error();
    }
    // Where the record goes is judged before anything runs: a record that
    // could not be written is known now (exit 125), not after the command.
    if (options.result) {
        auto target =
            options.result->empty()
                ? Result<RecordTarget>(Error::message("--result: empty path"))
                : resolveRecordTarget("--result", *options.result, writableHostDirs(run.policy.fs));
        if (!target) {
            exit_code = refuseRun(options, profile->name, "sandbox_unavailable", "error",
                                  "arguments", target.error().describe());
            return target.error();
        }
        run.record = std::move(*target);
    }
    return run;
}

void keepWorktreeWalk(Policy& policy) {
    const WorktreeMaskRules& masks = policy.fs.worktree_masks;
    if (policy.fs.worktree && (!masks.hide.empty() || !masks.read_only.empty()))
        if (auto dir = openUserStateDir()) policy.fs.state_dir = dir->fd;
}

int finishRun(const PreparedRun& run, const SandboxOutcome& outcome, const RunOptions* options) {
    const Policy& policy = run.policy;
    SandboxResult result = classify(outcome);
    if (outcome.ending == Ending::SetupFailed || outcome.ending == Ending::Refused)
        say(outcome.error_message + setupFailureDetail(policy, outcome) +
            (outcome.error_errno ? ": " + errnoName(outcome.error_errno) : std::string()));
    if (!outcome.tier_advice.empty())
        say(outcome.tier_advice);
    else if (outcome.ending == Ending::NotFound)
        say(policy.command[0] + ": command not found in the sandbox");
    else if (outcome.ending == Ending::NotExecutable)
        say(policy.command[0] + ": cannot execute: " + errnoName(outcome.error_errno));
    else if (std::string line = boundLine(policy, outcome, result); !line.empty())
        say(line);
    // Only for a run that ran: a refused one held nothing.
    if (outcome.ending != Ending::Refused && outcome.ending != Ending::SetupFailed)
        for (const std::string& line : weakerLimitLines(options, outcome)) say(line);
    if (run.record) {
        // The place was judged writable before the run; a write that fails
        // now leaves no record, and the exit says so: a harness must not
        // read a success whose record is missing or stale.
        auto s = writeRecord(*run.record, resultJson(policy, outcome));
        if (!s) {
            say("cannot write the result: " + s.error().describe() +
                (result.exit_code == 0 ? " (exit 1, though the command succeeded)" : ""));
            return result.exit_code == 0 ? 1 : result.exit_code;
        }
    }
    return result.exit_code;
}

}  // namespace stockade
