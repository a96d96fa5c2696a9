#include "runtime/result.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/unique_fd.h"

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

// A tail is raw bytes; JSON needs UTF-8. Invalid sequences become U+FFFD so
// the record always parses, while `sha256` still covers the exact bytes.
std::string validUtf8(const std::string& in) {
    std::string out;
    out.reserve(in.size());
    size_t i = 0;
    while (i < in.size()) {
        unsigned char c = static_cast<unsigned char>(in[i]);
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        bool ok = len > 0 && i + len <= in.size();
        for (size_t k = 1; ok && k < len; ++k)
            ok = (static_cast<unsigned char>(in[i + k]) >> 6) == 2;
        if (ok) {
            out.append(in, i, len);
            i += len;
        } else {
            out += "\xEF\xBF\xBD";
            ++i;
        }
    }
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
        // second later for a command that ignores it; the CPU time used
        // tells the second case from any other SIGKILL.
        if (o.ending == Ending::Signaled &&
            (o.signal == SIGXCPU ||
             (o.signal == SIGKILL && o.cpu_limit_ms && o.cpu_ms >= o.cpu_limit_ms)))
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
    StreamSummary out = o.stdout_summary, err = o.stderr_summary;
    out.tail = validUtf8(out.tail);
    err.tail = validUtf8(err.tail);
    json doc;
    doc["schema"] = kSchema;
    doc["name"] = policy.name;
    doc["profile"] = policy.profile_name;
    doc["command"] = policy.command;
    doc["status"] = r.status;
    doc["reason"] = nullable(r.reason);
    bool ran = o.ending == Ending::Exited || o.ending == Ending::Signaled;
    doc["exit_code"] = ran || o.ending == Ending::NotFound || o.ending == Ending::NotExecutable
                           ? json(o.exit_code)
                           : json(nullptr);
    doc["signal"] = o.signal ? json(o.signal) : json(nullptr);
    doc["duration_ms"] = o.duration_ms;
    doc["cpu_ms"] = o.cpu_ms;
    doc["peak_memory_bytes"] = o.peak_memory_bytes;
    doc["stdout"] = streamJson(out);
    doc["stderr"] = streamJson(err);
    doc["stragglers_killed"] = o.stragglers_killed;
    if (o.denials_reported) {
        json denials = json::array();
        for (const auto& [name, count] : o.denials)
            denials.push_back({{"syscall", name}, {"count", count}});
        doc["denials"] = denials;
    }
    doc["enforced"] = enforcedJson(o.enforced);
    doc["degraded"] = o.degraded;
    if (o.ending == Ending::SetupFailed || o.ending == Ending::Refused ||
        o.ending == Ending::NotFound || o.ending == Ending::NotExecutable)
        doc["error"] = {
            {"stage", o.ending == Ending::SetupFailed || o.ending == Ending::Refused ? o.error_stage
                                                                                     : "exec"},
            {"message", o.error_message.empty() ? o.error_stage : o.error_message},
            {"errno", o.error_errno}};
    else
        doc["error"] = nullptr;
    return doc.dump(2) + "\n";
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
    doc["peak_memory_bytes"] = 0;
    doc["stdout"] = streamJson(empty);
    doc["stderr"] = streamJson(empty);
    doc["stragglers_killed"] = 0;
    doc["enforced"] = enforcedJson({});
    doc["degraded"] = json::array();
    doc["error"] = {{"stage", stage}, {"message", message}, {"errno", 0}};
    return doc.dump(2) + "\n";
}

namespace {

Status writeAll(int fd, const std::string& content, const std::string& what) {
    const char* p = content.data();
    size_t left = content.size();
    while (left > 0) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return Error::fromErrno("write(\"" + what + "\")", n < 0 ? errno : EIO);
        p += n;
        left -= static_cast<size_t>(n);
    }
    return okStatus();
}

// /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N: the fd stockade
// already holds, written as a shell writes a redirection to them, rather
// than opened again (which a pipe owned by someone else refuses).
std::optional<int> heldFd(const std::string& path) {
    if (path == "/dev/stdout") return 1;
    if (path == "/dev/stderr") return 2;
    for (std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
        if (!path.starts_with(prefix)) continue;
        const std::string digits = path.substr(prefix.size());
        if (digits.empty() || digits.size() > 9 ||
            digits.find_first_not_of("0123456789") != std::string::npos)
            return std::nullopt;
        return std::stoi(digits);
    }
    return std::nullopt;
}

}  // namespace

Status writeRecord(const std::string& path, const std::string& content) {
    if (std::optional<int> fd = heldFd(path)) return writeAll(*fd, content, path);
    // A symlink or something that is not a file (a FIFO, a device, a
    // shell's >(…) under another name) is written through, as the caller
    // meant: a rename would replace the link or the node itself.
    struct stat st;
    if (lstat(path.c_str(), &st) < 0 || S_ISREG(st.st_mode)) return writeFileAtomically(path, content);
    // Followed only when the caller or root made the link, as
    // fs.protected_symlinks would have it in a sticky /tmp: another user's
    // link must not aim a root stockade's write at a file of its choosing.
    if (S_ISLNK(st.st_mode) && st.st_uid != geteuid() && st.st_uid != 0)
        return Error::message(path + " is a symlink owned by uid " + std::to_string(st.st_uid) +
                              "; not followed");
    struct stat target;
    const int found = stat(path.c_str(), &target) == 0 ? 0 : errno;
    const bool regular = found == 0 && S_ISREG(target.st_mode);
    // A link to a file yet to be made: made where it points.
    const bool dangling = S_ISLNK(st.st_mode) && found == ENOENT;
    // Non-blocking open: a FIFO nobody reads is an error (ENXIO), not a hang.
    UniqueFd fd(open(path.c_str(),
                     O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (regular ? O_TRUNC : 0) |
                         (dangling ? O_CREAT : 0),
                     0644));
    if (!fd) return Error::fromErrno("open(\"" + path + "\")");
    int flags = fcntl(fd.get(), F_GETFL);
    if (flags >= 0) fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
    return writeAll(fd.get(), content, path);
}

Status writeFileAtomically(const std::string& path, const std::string& content) {
    uint64_t nonce = 0;
    if (getrandom(&nonce, sizeof(nonce), 0) != static_cast<ssize_t>(sizeof(nonce)))
        return Error::fromErrno("getrandom()");
    char suffix[32];
    std::snprintf(suffix, sizeof(suffix), ".tmp.%016llx", static_cast<unsigned long long>(nonce));
    const std::string tmp = path + suffix;
    auto fail = [&](const std::string& call, int err) {
        unlink(tmp.c_str());
        unlink(path.c_str());
        return Error::fromErrno(call, err);
    };
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        int err = errno;
        unlink(path.c_str());
        return Error::fromErrno("open(\"" + tmp + "\")", err);
    }
    if (Status written = writeAll(fd, content, tmp); !written) {
        close(fd);
        unlink(tmp.c_str());
        unlink(path.c_str());
        return written;
    }
    // No fsync: rename(2) already gives readers all or nothing; durability
    // across a host crash is not worth a disk flush on every run.
    if (close(fd) < 0) return fail("close(\"" + tmp + "\")", errno);
    if (rename(tmp.c_str(), path.c_str()) < 0)
        return fail("rename(\"" + tmp + "\" -> \"" + path + "\")", errno);
    return okStatus();
}

}  // namespace stockade
