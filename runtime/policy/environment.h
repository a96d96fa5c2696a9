// The sandbox's environment (G7): empty but for the profile's allowlist and
// what --env adds. Secret-shaped names (SPEC §5) are refused when copied from
// the caller unless explicitly allowed. The list of shapes lives here only.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace stockade {

// True when NAME looks like it holds a credential (SPEC §5).
bool isSecretShaped(std::string_view name);

// The shapes isSecretShaped matches, upper-cased, for `stockade profile
// secret-names`: clients check the same list instead of keeping a copy.
struct SecretShapes {
    std::span<const std::string_view> substrings, names, prefixes, suffixes;
};
SecretShapes secretShapes();

struct EnvironmentRequest {
    std::vector<std::string> pass;              // copied from the caller when set
    std::vector<std::string> pass_interactive;  // copied only when interactive
    std::map<std::string, std::string> set;     // profile defaults
    std::vector<std::string> cli_env;           // --env KEY=VALUE or --env KEY, in order
    std::vector<std::string> allow_secret;      // --allow-secret KEY
    bool interactive = false;
};

// Builds the final KEY=VALUE list. `caller` is the caller's environment.
Result<std::vector<std::string>> buildEnvironment(const EnvironmentRequest& request,
                                                  const std::map<std::string, std::string>& caller);

// The caller's environment as a map (from environ).
std::map<std::string, std::string> callerEnvironment();

}  // namespace stockade
