// `stockade serve`, `stop`, `ps` and `logs` (SPEC §7), given parsed options.
// Each returns the process exit code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/policy/run_options.h"

namespace stockade {

struct ServeOptions {
    RunOptions run;  // profile defaults to dev-server
    std::string port;
    std::optional<std::string> ready_pattern;
    std::string ready_timeout = "60";
    bool detach = false;
    std::string net_backend = "auto";  // direct where it holds, else userspace; or name one
};

int serveCommand(const ServeOptions& options);
// NAME, or the server on `port` when NAME is empty.
int stopCommand(const std::string& name, const std::optional<std::string>& port);
int psCommand(bool json);
// The log with control characters shown as escapes (\n and \t kept), or
// with `raw` the bytes as they came.
int logsCommand(const std::string& name, bool follow, bool raw);

}  // namespace stockade
