// The profiles of profiles/*.json, compiled into the binary (see
// cmake/embed_profiles.cmake), so a bare binary needs no installed files.
#pragma once

#include <string_view>
#include <vector>

namespace stockade {

struct EmbeddedProfile {
    std::string_view name;
    std::string_view json;
};

const std::vector<EmbeddedProfile>& embeddedProfiles();

}  // namespace stockade
