// For the tool that makes the prebuilt profiles only: before they exist,
// loadProfile finds none and parses each embedded profile's JSON.
#include "runtime/policy/profile.h"

namespace stockade {

std::optional<Profile> prebuiltProfile(std::string_view) {
    return std::nullopt;
}

}  // namespace stockade
