// A profile (stockade.profile/v1) as plain data. Parsing validates everything
// and names the JSON path of each problem; nothing else sees JSON.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "runtime/policy/policy.h"

namespace stockade {

enum class Lifetime { Oneshot, Service };
enum class OutputMode { Capture, Log };

struct Profile {
    std::string name;
    std::string description;
    std::vector<std::string> system_dirs;
    std::vector<std::string> etc_entries;
    uint64_t tmp_bytes = 0;
    bool sys = false;
    // Rootless: also map what /etc/subuid and /etc/subgid grant the caller.
    bool map_subids = false;
    WorktreeMaskRules worktree_masks;   // filesystem.worktree (runtime/plan/worktree_masks.h)
    std::vector<std::string> env_pass;  // copied from the caller when set
    std::vector<std::string> env_pass_interactive;  // only when stdin is a terminal
    std::map<std::string, std::string> env_set;
    NetworkMode network = NetworkMode::None;
    Limits limits;
    std::vector<std::string> require;
    std::string seccomp;
    LandlockMode landlock = LandlockMode::BestEffort;
    Tier min_tier = Tier::Full;  // "min_tier": the lowest tier a run accepts
    Lifetime lifetime = Lifetime::Oneshot;
    OutputMode output = OutputMode::Capture;

    bool operator==(const Profile&) const = default;
};

// Parses and validates one profile document. `name` is used in messages.
Result<Profile> parseProfile(const std::string& name, const std::string& json_text);

// NAME is looked up among the installed profiles, then the embedded ones; a
// value containing '/' or ending in ".json" is a file.
Result<Profile> loadProfile(const std::string& name_or_file);

// The embedded profile `name` as parseProfile makes it from its JSON, built
// by code generated at build time (runtime/policy/tools/prebuild_profiles.cpp):
// no parse and no checks on the run path. nullopt for any other name.
std::optional<Profile> prebuiltProfile(std::string_view name);

// The fully resolved profile as JSON text (for `stockade profile show`).
std::string profileToJson(const Profile& profile);

// The guarantees and limits that `require` may name.
const std::vector<std::string>& knownRequirements();

// "full" or "landlock" (--min-tier, "min_tier"); an error naming the
// accepted values otherwise.
Result<Tier> parseTier(const std::string& text);

// The guarantees of knownRequirements() that `tier` cannot give (the lower
// tier has no namespace at all): a policy that requires one of them and
// accepts that tier is refused, naming both.
std::vector<std::string> requirementsBeyondTier(Tier tier, const std::vector<std::string>& require);

}  // namespace stockade
