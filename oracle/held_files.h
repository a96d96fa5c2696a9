// A fingerprint of the held-test directory: what every entry in it is, so
// that the oracle can show the run left the held test as it found it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "oracle/safe_read.h"

namespace stockade::oracle {

struct HeldLimits {
    WalkLimits walk;
    uint64_t max_file_bytes = 256ull << 20;
    uint64_t max_total_bytes = 1024ull << 20;
};

// Path (relative, '/'-separated) to what is there:
//   regular file  -> the SHA-256 of its content, 64 hex digits
//   symlink       -> "symlink:" + the link text (never followed)
//   directory     -> "directory"
//   anything else -> "fifo", "socket", "character-device", "block-device"
// plus, for all but symlinks, " mode:" and the octal permission bits, so a
// chmod shows as a change. Passing a bound is an Error naming it.
Result<std::map<std::string, std::string>> hashTree(const std::string& dir,
                                                    const HeldLimits& limits = {});

// The paths whose fingerprint differs, or that exist on one side only, in
// bytewise order.
std::vector<std::string> changedPaths(const std::map<std::string, std::string>& before,
                                      const std::map<std::string, std::string>& after);

}  // namespace stockade::oracle
