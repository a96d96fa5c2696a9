#include "runtime/record/result.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/text_safety.h"
#include "base/unique_fd.h"
#include "runtime/record/failure_detail.h"

namespace stockade {

namespace {

using nlohmann::json;

constexpr const char* kSchema = "stockade.result/v1";

json streamJson(const StreamSummary& s) {
    return {{"bytes", s.bytes}, {"sha256", s.sha256}, {"tail", s.tail}, {"truncated", s.truncated}};
}

json nullable(const std::optional<std::string>& v) {
    return v ? json(*v) : json(nullptr);
}

json enforcedJson(const std::map<std::string, std::string>& enforced) {
    json out = json::object();
    for (const char* ns : {"user_ns", "mount_ns", "pid_ns", "net_ns", "ipc_ns", "uts_ns",
                           "cgroup_ns", "no_new_privs"})
        out[ns] = enforced.count(ns) > 0;
    for (const char* key : {"seccomp", "capabilities", "memory", "pids", "cpu_time", "landlock"}) {
        auto it = enforced.find(key);
        out[key] = it == enforced.end() ? json(nullptr) : json(it->second);
    }
    return out;
}

// The bound that ended the command, where its signal says which: SIGXFSZ is
// RLIMIT_FSIZE's (a write past the file size bound), SIGXCPU and the SIGKILL
// that follows it are RLIMIT_CPU's. Null for any other ending. `reason`
// stays what it was ("signal", "cpu_time"); this names the bound and its
// value, so that a test runner can tell a bound from a crash. cpu_time is
// classify()'s verdict from the CPU the kernel accounted, so a command that
// raises SIGXCPU itself is not named; SIGXFSZ is named by its signal alone,
// and one raised by the command itself reads the same.
json boundJson(const Policy& policy, const SandboxOutcome& o, const SandboxResult& r) {
    if (o.ending != Ending::Signaled) return nullptr;
    if (o.signal == SIGXFSZ && policy.limits.file_size_bytes)
        return {{"limit", "file_size"},
                {"rlimit", "RLIMIT_FSIZE"},
                {"value", *policy.limits.file_size_bytes},
                {"unit", "bytes"}};
    if (r.reason == "cpu_time" && o.cpu_limit_ms != 0)
        return {{"limit", "cpu_time"},
                {"rlimit", "RLIMIT_CPU"},
                {"value", o.cpu_limit_ms / 1000},
                {"unit", "seconds"}};
    return nullptr;
}

// The record's `detail`: bounds first (the kernel's word), then layout
// facts met by paths the output named (the command's word, so marked).
json detailJson(const FailureDetail& d) {
    json out = json::array();
    for (const BoundDetail& b : d.bounds)
        out.push_back({{"kind", "bound"},
                       {"limit", b.limit},
                       {"mechanism", b.mechanism},
                       {"value", b.value},
                       {"unit", b.unit},
                       {"evidence", b.evidence},
                       {"text", b.text}});
    for (const LayoutDetail& l : d.layout)
        out.push_back({{"kind", "layout"},
                       {"fact", l.fact},
                       {"error", l.error},
                       {"path", l.path},
                       {"layout_path", l.layout_path},
                       {"layout_kind", l.layout_kind},
                       {"evidence", l.evidence},
                       {"text", l.text}});
    return out;
}

}  // namespace

SandboxResult classify(const SandboxOutcome& o) {
    // A bound that stopped a command that did not succeed is the cause, read
    // from the kernel's own accounting (cgroup events, the signal), not
    // inferred from "it died of SIGKILL".
    bool ran = o.ending == Ending::Exited || o.ending == Ending::Signaled;
    if (ran && !(o.ending == Ending::Exited && o.exit_code == 0)) {
        if (o.oom_killed) return {"blocked", "memory_limit", o.exit_code};
        if (o.pids_limit_hit) return {"blocked", "pids_limit", o.exit_code};
        // RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL from the kernel a
        // second later for a command that ignores it. The CPU time used tells
        // either from the same signal sent by the command itself (`kill -XCPU
        // $$`), with a tenth of a second for the accounting's granularity.
        if (o.ending == Ending::Signaled && (o.signal == SIGXCPU || o.signal == SIGKILL) &&
            o.cpu_limit_ms != 0 && o.cpu_ms + 100 >= o.cpu_limit_ms)
            return {"blocked", "cpu_time", o.exit_code};
    }
    switch (o.ending) {
        case Ending::Exited:
            if (o.exit_code == 0) return {"passed", std::nullopt, 0};
            return {"failed", "nonzero_exit", o.exit_code};
        case Ending::Signaled:
            if (o.signal == SIGSYS) return {"failed", "seccomp", o.exit_code};
            return {"failed", "signal", o.exit_code};
        case Ending::NotFound:
            return {"error", "not_found", 127};
        case Ending::NotExecutable:
            return {"error", "not_executable", 126};
        case Ending::TimedOut:
            return {"timed_out", "timeout", 124};
        case Ending::OutputLimit:
            return {"blocked", "output_limit", 128 + SIGKILL};
        case Ending::Cancelled:
            return {"cancelled", "aborted", 128 + (o.cancel_signal ? o.cancel_signal : SIGTERM)};
        case Ending::SetupFailed:
            return {"error", "sandbox_unavailable", 125};
        case Ending::Refused:
            return {"blocked", "sandbox_unavailable", 125};
        case Ending::NotReady:
            return {"blocked", "not_ready", 124};
    }
    return {"error", "sandbox_unavailable", 125};
}

std::string resultJson(const Policy& policy, const SandboxOutcome& o) {
    SandboxResult r = classify(o);
    // A tail is raw bytes, and the command, a name or an error message may
    // hold bytes of the sandbox's choosing: jsonText() makes every string
    // valid UTF-8 (base/text_safety.h), while `sha256` still covers the
    // exact bytes of each stream.
    const StreamSummary& out = o.stdout_summary;
    const StreamSummary& err = o.stderr_summary;
    json doc;
    doc["schema"] = kSchema;
    doc["name"] = policy.name;
    doc["profile"] = policy.profile_name;
    doc["command"] = policy.command;
    doc["status"] = r.status;
    doc["reason"] = nullable(r.reason);
    if (json bound = boundJson(policy, o, r); !bound.is_null()) doc["bound"] = bound;
    if (FailureDetail detail = explainFailure(policy, o, r.reason.value_or("")); !detail.empty())
        doc["detail"] = detailJson(detail);
    bool ran = o.ending == Ending::Exited || o.ending == Ending::Signaled;
    doc["exit_code"] = ran || o.ending == Ending::NotFound || o.ending == Ending::NotExecutable
                           ? json(o.exit_code)
                           : json(nullptr);
    doc["signal"] = o.signal ? json(o.signal) : json(nullptr);
    doc["duration_ms"] = o.duration_ms;
    doc["cpu_ms"] = o.cpu_ms;
    doc["supervisor_cpu_ms"] = o.supervisor_cpu_ms;
    doc["peak_memory_bytes"] = o.peak_memory_bytes;
    doc["stdout"] = streamJson(out);
    doc["stderr"] = streamJson(err);
    doc["stragglers_killed"] = o.stragglers_killed;
    doc["host_uid"] = o.host_uid ? json(*o.host_uid) : json(nullptr);
    doc["host_gid"] = o.host_gid ? json(*o.host_gid) : json(nullptr);
    if (o.denials_reported) {
        json denials = json::array();
        for (const auto& [name, count] : o.denials)
            denials.push_back({{"syscall", name}, {"count", count}});
        doc["denials"] = denials;
    }
    doc["tier"] = o.tier ? json(tierName(*o.tier)) : json(nullptr);
    doc["enforced"] = enforcedJson(o.enforced);
    doc["degraded"] = o.degraded;
    if (o.git)
        doc["git"] = {{"file", o.git->file},
                      {"gitdir", o.git->status},
                      {"exposed", o.git->exposed.empty() ? json(nullptr) : json(o.git->exposed)},
                      {"reason", o.git->reason.empty() ? json(nullptr) : json(o.git->reason)}};
    if (o.masks) {
        // Names only, never content; the first few of each kind, so an
        // operator sees why a test could not read its .env.
        const WorktreeMaskReport& m = *o.masks;
        doc["worktree_masks"] = {
            {"hidden", {{"count", m.hidden_count}, {"first", m.hidden}}},
            {"read_only", {{"count", m.read_only_count}, {"first", m.read_only}}},
            {"created", {{"count", m.created_count}, {"first", m.created}}},
            {"linked", {{"count", m.linked_count}, {"first", m.linked}}},
            {"entries_examined", m.entries},
            {"unlistable", m.unlistable},
            {"directories_reused", m.reused},
            {"truncated_by", m.truncated_by.empty() ? json(nullptr) : json(m.truncated_by)}};
        if (!m.created_unchecked.empty())
            doc["worktree_masks"]["created_unchecked"] = m.created_unchecked;
    }
    if (o.ending == Ending::SetupFailed || o.ending == Ending::Refused ||
        o.ending == Ending::NotFound || o.ending == Ending::NotExecutable)
        doc["error"] = {
            {"stage", o.ending == Ending::SetupFailed || o.ending == Ending::Refused ? o.error_stage
                                                                                     : "exec"},
            {"message", (o.error_message.empty() ? o.error_stage : o.error_message) +
                            (o.tier_advice.empty() ? "" : " (" + o.tier_advice + ")")},
            {"errno", o.error_errno}};
    else
        doc["error"] = nullptr;
    return jsonText(doc, 2) + "\n";
}

std::string refusalJson(const std::string& name, const std::string& profile,
                        const std::vector<std::string>& command, const std::string& status,
                        const std::string& reason, const std::string& stage,
                        const std::string& message) {
    StreamSummary empty = OutputCapture().finish();
    json doc;
    doc["schema"] = kSchema;
    doc["name"] = name;
    doc["profile"] = profile;
    doc["command"] = command;
    doc["status"] = status;
    doc["reason"] = reason;
    doc["exit_code"] = nullptr;
    doc["signal"] = nullptr;
    doc["duration_ms"] = 0;
    doc["cpu_ms"] = 0;
    doc["supervisor_cpu_ms"] = 0;
    doc["peak_memory_bytes"] = 0;
    doc["stdout"] = streamJson(empty);
    doc["stderr"] = streamJson(empty);
    doc["stragglers_killed"] = 0;
    doc["host_uid"] = nullptr;
    doc["host_gid"] = nullptr;
    doc["tier"] = nullptr;  // refused before any sandbox was attempted
    doc["enforced"] = enforcedJson({});
    doc["degraded"] = json::array();
    doc["error"] = {{"stage", stage}, {"message", message}, {"errno", 0}};
    return jsonText(doc, 2) + "\n";
}

Status writeFileAtomically(const std::string& path, const std::string& content) {
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd) return Error::fromErrno("open(\"" + tmp + "\")");
    const char* p = content.data();
    size_t left = content.size();
    while (left > 0) {
        ssize_t n = write(fd.get(), p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int err = n < 0 ? errno : EIO;
            unlink(tmp.c_str());
            return Error::fromErrno("write(\"" + tmp + "\")", err);
        }
        p += n;
        left -= static_cast<size_t>(n);
    }
    // No fsync: rename(2) already gives readers all or nothing; durability
    // across a host crash is not worth a disk flush on every run.
    if (close(fd.release()) < 0) {
        int err = errno;
        unlink(tmp.c_str());
        return Error::fromErrno("close(\"" + tmp + "\")", err);
    }
    if (rename(tmp.c_str(), path.c_str()) < 0) {
        int err = errno;
        unlink(tmp.c_str());
        return Error::fromErrno("rename(\"" + tmp + "\" -> \"" + path + "\")", err);
    }
    return okStatus();
}

}  // namespace stockade
