// Paths as the sandbox sees them.
#pragma once

#include <string>

#include "base/error.h"

namespace stockade {

// Normalizes an absolute path lexically ("/a/./b//c/" -> "/a/b/c"); ".." is
// an error, not something to resolve.
Result<std::string> normalizeSandboxPath(const std::string& path);

}  // namespace stockade
