// The result record (SPEC §6, stockade.result/v1): built from the policy and
// the outcome, written atomically. JSON stays inside result.cpp.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/policy/policy.h"
#include "runtime/supervisor/sandbox.h"

namespace stockade {

struct SandboxResult {
    std::string status;  // passed | failed | timed_out | blocked | cancelled | error
    std::optional<std::string> reason;
    int exit_code = 0;  // what `stockade run` exits with
};

SandboxResult classify(const SandboxOutcome& outcome);

// The whole record as JSON text.
std::string resultJson(const Policy& policy, const SandboxOutcome& outcome);
// A record for a run refused before anything started (bad input, missing
// requirement): status blocked or error, exit 125.
std::string refusalJson(const std::string& name, const std::string& profile,
                        const std::vector<std::string>& command, const std::string& status,
                        const std::string& reason, const std::string& stage,
                        const std::string& message);

// Writes through a temporary file in the same directory and rename(2), so a
// reader sees the old file or the whole new one, never half of it. For
// stockade's own state files; a --result or --verdict goes through
// record_path.h, which also keeps it out of the sandbox's reach.
Status writeFileAtomically(const std::string& path, const std::string& content);

}  // namespace stockade
