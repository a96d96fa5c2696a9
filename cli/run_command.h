// `stockade run` and `stockade profile`, given already-parsed options.
// Return the process exit code.
#pragma once

#include <string>
#include <vector>

#include "runtime/policy/run_options.h"

namespace stockade {

int runCommand(const RunOptions& options);

int profileShowCommand(const std::string& name_or_file);
int profileCheckCommand(const std::string& file);
// `stockade check`: exit 0 when the profile can run here as required, 1 when not.
// `require`: --require lists, added to the profile's own requirements.
int checkCommand(const std::string& profile, bool json,
                 const std::vector<std::string>& require = {});

}  // namespace stockade
