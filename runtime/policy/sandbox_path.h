// Paths as the sandbox sees them, and how paths nest.
#pragma once

#include <string>

#include "base/error.h"

namespace stockade {

// Normalizes an absolute path lexically ("/a/./b//c/" -> "/a/b/c"); ".." is
// an error, not something to resolve.
Result<std::string> normalizeSandboxPath(const std::string& path);

// Whether normalized absolute `path` is `dir` or lies below it ("/repo/x" is
// under "/repo", "/repository" is not; everything is under "/").
bool isUnder(const std::string& path, const std::string& dir);

}  // namespace stockade
