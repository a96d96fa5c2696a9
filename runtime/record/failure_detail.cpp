#include "runtime/record/failure_detail.h"

#include <signal.h>

#include <algorithm>
#include <cctype>

namespace stockade {

namespace {

// Longer paths are cut from the record, not judged: no layout entry is
// that deep, and the text is the sandbox's.
constexpr size_t kMaxPath = 256;

std::string lower(const std::string& s) {
    std::string out = s;
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

bool isWordChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// `word` in `line` (lower case) with no letter, digit or '_' on either side.
bool hasWord(const std::string& line, const std::string& word) {
    for (size_t at = line.find(word); at != std::string::npos; at = line.find(word, at + 1)) {
        bool left = at == 0 || !isWordChar(line[at - 1]);
        bool right = at + word.size() >= line.size() || !isWordChar(line[at + word.size()]);
        if (left && right) return true;
    }
    return false;
}

// The error a line of output reports, in the words of strerror(3) (glibc,
// coreutils, the shells, Python) or by its name (Node's "EROFS: ...").
const char* errorOf(const std::string& line) {
    std::string l = lower(line);
    if (l.find("read-only file system") != std::string::npos || hasWord(l, "erofs")) return "EROFS";
    if (l.find("no such file or directory") != std::string::npos || hasWord(l, "enoent"))
        return "ENOENT";
    return nullptr;
}

// A byte that may precede a path: the start, a space, a quote, a bracket,
// '=' or ':' ("cannot touch '/usr/x'", "[Errno 30] ...: '/usr/x'",
// "open '/dev/sda'", "cat: /dev/sda: ..."). 0x98 and 0x9c end the UTF-8
// quotes U+2018 and U+201C, which coreutils uses in a UTF-8 locale.
bool opensPath(const std::string& line, size_t at) {
    if (at == 0) return true;
    unsigned char c = static_cast<unsigned char>(line[at - 1]);
    if (c == 0x98 || c == 0x9c) return at >= 3 && static_cast<unsigned char>(line[at - 3]) == 0xe2;
    return std::isspace(c) ||
           std::string("'\"`([{<=:,").find(static_cast<char>(c)) != std::string::npos;
}

bool endsPath(unsigned char c) {
    return c < 0x20 || c == 0x7f || c == 0xe2 || std::isspace(c) ||
           std::string("'\"`)]}>:;,").find(static_cast<char>(c)) != std::string::npos;
}

std::vector<std::string> pathsIn(const std::string& line) {
    std::vector<std::string> out;
    for (size_t at = line.find('/'); at != std::string::npos; at = line.find('/', at + 1)) {
        if (!opensPath(line, at)) continue;
        size_t end = at;
        while (end < line.size() && !endsPath(static_cast<unsigned char>(line[end]))) ++end;
        std::string path = line.substr(at, end - at);
        while (path.size() > 1 && path.back() == '.') path.pop_back();  // a sentence's end
        if (path.size() <= kMaxPath) out.push_back(path);
        at = end > at ? end - 1 : at;
    }
    return out;
}

const char* kindName(LayoutKind kind) {
    switch (kind) {
        case LayoutKind::ReadOnlyTree:
            return "read_only_mount";
        case LayoutKind::EmptyTree:
            return "masked";
        case LayoutKind::Directory:
            return "sandbox_root";
        case LayoutKind::Devices:
            return "devices";
        default:
            return "";
    }
}

std::string layoutText(const LayoutDetail& d) {
    std::string said = d.error == "EROFS" ? "Read-only file system" : "No such file or directory";
    std::string fact;
    if (d.fact == "read_only") {
        fact = d.layout_kind == "sandbox_root"
                   ? "the sandbox's root, where " + d.path + " would be, is read-only"
                   : d.layout_path + " is a read-only mount in this sandbox";
    } else if (d.layout_kind == "masked") {
        fact = d.layout_path + " is hidden in this sandbox (an empty read-only mount)";
    } else if (d.layout_kind == "devices") {
        fact = "stockade placed no device at " + d.path +
               " (/dev holds null, zero, full, random, urandom, tty, pts, ptmx and shm)";
    } else {
        fact = "the sandbox's layout holds nothing at " + d.path + " (" + d.layout_path +
               " holds only what stockade placed there)";
    }
    return "the command's " + d.evidence + " reports \"" + said + "\" for " + d.path + ", and " +
           fact + "; the failure is the command's own word, the layout fact stockade's";
}

// Whether a line of `text` reports EFBIG: what a write past RLIMIT_FSIZE
// gets in a program that ignores SIGXFSZ (Python does).
bool reportsFileTooLarge(const std::string& text) {
    std::string l = lower(text);
    return l.find("file too large") != std::string::npos || hasWord(l, "efbig");
}

std::string signalName(int sig) {
    if (sig == SIGXCPU) return "SIGXCPU";
    if (sig == SIGKILL) return "SIGKILL";
    return "signal " + std::to_string(sig);
}

}  // namespace

std::vector<LayoutDetail> layoutEvidence(const std::vector<LayoutEntry>& layout,
                                         const std::string& text, const std::string& stream,
                                         size_t limit) {
    std::vector<LayoutDetail> out;
    if (layout.empty()) return out;  // no plan of its own to judge against
    size_t at = 0;
    while (at < text.size() && out.size() < limit) {
        size_t end = text.find_first_of("\r\n", at);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(at, end - at);
        at = end + 1;
        const char* error = errorOf(line);
        if (!error) continue;
        bool erofs = std::string(error) == "EROFS";
        for (const std::string& path : pathsIn(line)) {
            auto answer = judgePath(layout, path);
            if (!answer) continue;
            bool read_only = answer->kind == LayoutKind::ReadOnlyTree ||
                             answer->kind == LayoutKind::EmptyTree ||
                             answer->kind == LayoutKind::Directory;
            // Absent: below a directory that holds only what the plan put
            // there (the read-only root, /dev), or below a hidden name.
            bool absent =
                (answer->kind == LayoutKind::Directory || answer->kind == LayoutKind::Devices ||
                 answer->kind == LayoutKind::EmptyTree) &&
                answer->where != path && answer->where + "/" != path;
            if (erofs ? !read_only : !absent) continue;
            LayoutDetail d{.fact = erofs ? "read_only" : "absent",
                           .error = error,
                           .path = path,
                           .layout_path = answer->where,
                           .layout_kind = kindName(answer->kind),
                           .evidence = stream};
            bool seen = std::any_of(out.begin(), out.end(), [&](const LayoutDetail& o) {
                return o.fact == d.fact && o.path == d.path;
            });
            if (seen) break;
            d.text = layoutText(d);
            out.push_back(std::move(d));
            break;  // one path per line: the one the error is about
        }
    }
    return out;
}

FailureDetail explainFailure(const Policy& policy, const SandboxOutcome& o,
                             const std::string& reason) {
    FailureDetail detail;
    bool ran = o.ending == Ending::Exited || o.ending == Ending::Signaled;
    if (!ran || (o.ending == Ending::Exited && o.exit_code == 0)) return detail;
    auto mechanism = [&](const char* key) {
        auto it = o.enforced.find(key);
        return it == o.enforced.end() ? std::string() : it->second;
    };
    // The cgroups' own event counters, which nothing inside can write.
    std::string memory = mechanism("memory");
    if (o.oom_killed && policy.limits.memory_bytes && memory.starts_with("cgroup"))
        detail.bounds.push_back(
            {"memory", memory, *policy.limits.memory_bytes, "bytes", "cgroup_events",
             "the memory bound (" + memory + ", " + std::to_string(*policy.limits.memory_bytes) +
                 " bytes) was reached: the cgroup counted an out-of-memory kill"});
    std::string pids = mechanism("pids");
    if (o.pids_limit_hit && policy.limits.pids && pids.starts_with("cgroup"))
        detail.bounds.push_back({"pids", pids, *policy.limits.pids, "processes", "cgroup_events",
                                 "the process bound (" + pids + ", " +
                                     std::to_string(*policy.limits.pids) +
                                     " processes) was reached: the cgroup counted a refused fork"});
    if (reason == "cpu_time" && o.cpu_limit_ms != 0)
        detail.bounds.push_back(
            {"cpu_time", "RLIMIT_CPU", o.cpu_limit_ms / 1000, "seconds", "cpu_accounting",
             "the CPU time bound (RLIMIT_CPU, " + std::to_string(o.cpu_limit_ms / 1000) +
                 " s) was reached: the command died of " + signalName(o.signal) + " with " +
                 std::to_string(o.cpu_ms) + " ms of CPU time accounted"});
    if (o.ending == Ending::Signaled && o.signal == SIGXFSZ && policy.limits.file_size_bytes)
        detail.bounds.push_back(
            {"file_size", "RLIMIT_FSIZE", *policy.limits.file_size_bytes, "bytes", "signal",
             "the file size bound (RLIMIT_FSIZE, " +
                 std::to_string(*policy.limits.file_size_bytes) +
                 " bytes): the command died of SIGXFSZ, which the kernel sends a write past it "
                 "(a command can also send it itself)"});
    // EFBIG instead of the signal: the bound is the profile's, that the
    // command met it is the output's word (marked so).
    if (policy.limits.file_size_bytes && detail.bounds.empty())
        for (const char* stream : {"stderr", "stdout"}) {
            const StreamSummary& s =
                std::string(stream) == "stderr" ? o.stderr_summary : o.stdout_summary;
            if (!reportsFileTooLarge(s.tail)) continue;
            detail.bounds.push_back(
                {"file_size", "RLIMIT_FSIZE", *policy.limits.file_size_bytes, "bytes", stream,
                 "the command's " + std::string(stream) +
                     " reports \"File too large\" (EFBIG), what a write past the file size bound "
                     "(RLIMIT_FSIZE, " +
                     std::to_string(*policy.limits.file_size_bytes) +
                     " bytes) gets where SIGXFSZ is ignored; the failure is the command's own "
                     "word, the bound stockade's"});
            break;
        }
    // The output's last lines, stderr first: where a failing program says why.
    constexpr size_t kMaxLayoutFacts = 4;
    detail.layout = layoutEvidence(o.layout, o.stderr_summary.tail, "stderr", kMaxLayoutFacts);
    if (detail.layout.size() < kMaxLayoutFacts)
        for (LayoutDetail& d : layoutEvidence(o.layout, o.stdout_summary.tail, "stdout",
                                              kMaxLayoutFacts - detail.layout.size())) {
            bool seen = std::any_of(
                detail.layout.begin(), detail.layout.end(),
                [&](const LayoutDetail& e) { return e.fact == d.fact && e.path == d.path; });
            if (!seen) detail.layout.push_back(std::move(d));
        }
    return detail;
}

}  // namespace stockade
