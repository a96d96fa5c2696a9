// G4, child side: empty capability sets, cleared bounding and ambient sets,
// locked securebits, no_new_privs. Async-signal-safe; raw prctl/capset so no
// library state (libcap's cap_t carries a mutex and allocates) is involved.
#pragma once

#include <cstdint>

namespace stockade {

// An OCI container's capabilities (process.capabilities), as bit masks by
// capability number.
struct CapabilitySets {
    uint64_t bounding = 0;
    uint64_t effective = 0;
    uint64_t permitted = 0;
    uint64_t inheritable = 0;
    uint64_t ambient = 0;
};

// Lets setresuid() keep capabilities, so the child can become the sandbox's
// uid before it builds the filesystem view (the kernel would otherwise clear
// them on the uid change, capabilities(7) "Effect of user ID changes").
int keepCapabilitiesAcrossSetuidInChild() noexcept;

// Drops everything; returns 0 or an errno and sets *failed_step to 0 for
// securebits, 1 for the capability sets.
int dropAllPrivilegesInChild(int last_cap, int* failed_step) noexcept;

// An OCI container's sets instead of none: securebits back to the kernel's
// defaults (as a runc container has them), the bounding set cut to
// `sets.bounding`, the other sets as given, ambient raised. Returns 0 or an
// errno and sets *failed_step as dropAllPrivilegesInChild does.
int keepOnlyCapabilitiesInChild(int last_cap, const CapabilitySets& sets,
                                int* failed_step) noexcept;

int setNoNewPrivsInChild() noexcept;
// The lower tier, rootless: what a process without CAP_SETPCAP can shed, the
// ambient set and every capability it holds (capset may always lower). The
// bounding set stays (dropping from it needs CAP_SETPCAP); no_new_privs,
// set next, keeps any execve from gaining from it. Returns 0 or an errno.
int dropUnprivilegedInChild() noexcept;

}  // namespace stockade
