// Reads a seccomp policy written in the OCI runtime-spec format
// (linux.seccomp) or Docker's superset of it, so users can bring the profiles
// they already have. Every error names the JSON path of what is wrong:
//   /syscalls/3/action: expected one of SCMP_ACT_ALLOW, ..., got "FOO"
// What is supported, and how stockade's reading differs from Docker's, is in
// docs/seccomp.md ("Bringing a Docker or OCI profile").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "seccomp/policy.h"

namespace stockade::seccomp {

struct KernelVersion {
    int major = 0;
    int minor = 0;
};

// What Docker's per-rule `includes`/`excludes` filters are judged against.
// The defaults describe a stockade sandbox on this host.
struct OciImportOptions {
    // Go's name for the architecture ("amd64"); empty: this host's.
    std::string arch;
    // The sandbox's capabilities: none (SPEC G4), so a rule that needs
    // CAP_SYS_ADMIN is left out, as Docker leaves it out without that cap.
    std::vector<std::string> capabilities;
    // For `minKernel`; nullopt: the running kernel, from uname(2).
    std::optional<KernelVersion> kernel;
    // An OCI runtime's reading (oci/config.cpp): a second unconditional
    // action for a call already given one is dropped, as libseccomp drops it
    // for runc and crun (podman's default profile allows setns, then denies
    // it), and its names listed in `dropped`; otherwise it is refused.
    bool keep_first_unconditional = false;
    std::vector<std::string>* dropped = nullptr;
};

Result<SeccompPolicy> importOciSeccomp(std::string_view json_text,
                                       const OciImportOptions& options = {});

// Reads `path` and imports it; errors start with the path.
Result<SeccompPolicy> loadOciSeccompFile(const std::string& path,
                                         const OciImportOptions& options = {});

}  // namespace stockade::seccomp
