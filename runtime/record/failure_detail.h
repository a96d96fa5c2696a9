// Why a command that failed may have failed, where the sandbox is the
// likely cause and no seccomp denial says so: the record's `detail`
// (docs/contract.md, "detail"). Two kinds, as sure as their evidence:
//
// - A bound the supervisor saw reached: from the kernel's own accounting
//   (the memory and pids cgroups' event counters, the CPU time accounted
//   against RLIMIT_CPU), or from the signal alone (SIGXFSZ, which a command
//   can also send itself). The file size bound also where the output
//   reports EFBIG, which a command that ignores SIGXFSZ gets: the bound is
//   the supervisor's fact, that the command met it the output's word.
// - A fact of the sandbox's layout (a read-only mount, a name the layout
//   does not hold) that a path named in the command's own output meets.
//   The kernel tells the supervisor nothing of a failed open or write
//   without a cost on every call, so the failure itself is the command's
//   word, marked as such (evidence "stderr" or "stdout"); the layout fact
//   is judged from the supervisor's own mount plan, never from the text,
//   so no output can make the record claim one that does not hold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/policy/policy.h"
#include "runtime/supervisor/layout_summary.h"
#include "runtime/supervisor/sandbox.h"

namespace stockade {

struct BoundDetail {
    std::string limit;      // file_size | cpu_time | memory | pids
    std::string mechanism;  // RLIMIT_FSIZE | RLIMIT_CPU | cgroup2 | cgroup1
    uint64_t value = 0;
    std::string unit;  // bytes | seconds | processes
    // signal | cpu_accounting | cgroup_events; stderr | stdout for EFBIG
    // reported by a command that ignores SIGXFSZ
    std::string evidence;
    std::string text;
};

struct LayoutDetail {
    std::string fact;         // read_only | absent
    std::string error;        // EROFS | ENOENT: what the output said
    std::string path;         // as the output named it
    std::string layout_path;  // the layout entry that decides it: "/usr", "/dev", "/"
    std::string layout_kind;  // read_only_mount | masked | sandbox_root | devices
    std::string evidence;     // stderr | stdout
    std::string text;
};

struct FailureDetail {
    std::vector<BoundDetail> bounds;
    std::vector<LayoutDetail> layout;
    bool empty() const { return bounds.empty() && layout.empty(); }
};

// Nothing for a command that passed, or one that did not run.
FailureDetail explainFailure(const Policy& policy, const SandboxOutcome& outcome,
                             const std::string& reason);

// The layout facts that paths named beside "Read-only file system" or "No
// such file or directory" (or EROFS, ENOENT) in `text` meet; `stream` is
// the evidence to name. At most `limit`, each (fact, path) once.
std::vector<LayoutDetail> layoutEvidence(const std::vector<LayoutEntry>& layout,
                                         const std::string& text, const std::string& stream,
                                         size_t limit);

}  // namespace stockade
