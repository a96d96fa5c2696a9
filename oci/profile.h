// stockade's default profile for an OCI container: what the spec asks, and
// on top of it stockade's own default-deny seccomp filter, no capabilities
// and no_new_privs. A spec without seccomp runs without a filter, as under
// runc; the profile applies only when the bundle's annotation asks for it or
// the runtime's own configuration does (--default-profile, or
// /etc/stockade/oci.json), never because stockade would prefer it.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "oci/config.h"

namespace stockade::oci {

inline constexpr const char* kProfileAnnotation = "run.oci.stockade.profile";
inline constexpr const char* kProfileDefault = "default";
inline constexpr const char* kRuntimeConfigPath = "/etc/stockade/oci.json";
// Names another runtime config file (tests, a packaged runtime elsewhere).
inline constexpr const char* kRuntimeConfigEnv = "STOCKADE_OCI_CONFIG";

// The runtime's own choice for every container: `flag` (--default-profile:
// "default" or "none") when given, else the config file's "defaultProfile"
// (a missing file: none). The file must be a regular file, owned by root or
// the caller and writable by no one else: whoever could write it would
// decide the filter of every container.
Result<std::string> runtimeDefaultProfile(const std::string& flag);

// The profile a container gets: "" (the spec as written) or "default",
// from the annotation or the runtime's default. The annotation can only add
// the profile, never lift the runtime's: its one accepted value is
// "default". Refused (naming the field): a spec that asks for capabilities
// under the profile, since granting them would weaken the profile and
// dropping them would silently change the spec.
Result<std::string> containerProfile(const Config& config, const std::string& runtime_default);

}  // namespace stockade::oci
