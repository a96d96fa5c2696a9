// Compiles a SeccompPolicy into a classic BPF program, in the parent, before
// the clone: libseccomp allocates and may fail, which the child must not.
// The child only hands the program to the kernel (install_in_child.h).
//
// Names: each name is looked up for the native architecture. A name the
// kernel has on some other architecture only ("chown32", "vm86" on x86_64) is
// skipped and listed in `skipped_names`, so that one policy, like Docker's,
// can serve several architectures. A name no architecture has is an error
// naming it, because it is almost always a typo that would otherwise leave a
// call on the default action. Names newer than the libseccomp we link are
// looked up in stockade's own table of the x86_64 numbers (filter.cpp).
#pragma once

#include <linux/filter.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "seccomp/policy.h"

namespace stockade::seccomp {

struct CompiledFilter {
    std::vector<sock_filter> program;
    // The highest syscall number the policy names; any higher number answers
    // ENOSYS (policy.h, step 2). -1 when the policy names nothing.
    int highest_known_nr = -1;
    // Names that exist only on other architectures, left out.
    std::vector<std::string> skipped_names;

    // Points into `program`: valid while this object lives and is not moved.
    sock_fprog fprog() const;
};

Result<CompiledFilter> compileFilter(const SeccompPolicy& policy);

// `first` then `second`, as one program: each of `first`'s answers that lets
// the call through (ALLOW, LOG) becomes a jump to `second`, which decides;
// any other answer of `first` stands, whatever `second` would say (unlike
// two stacked filters, where the kernel takes the most restrictive). A call
// runs only if both allow it, and neither's conditional rules are decided in
// an order set by the other's (libseccomp orders a policy's conditions
// itself). Refused beyond BPF_MAXINSNS.
Result<std::vector<sock_filter>> chainPrograms(const std::vector<sock_filter>& first,
                                               const std::vector<sock_filter>& second);

// `first` (empty: no filter of its own) then privilegedFileGuard()
// (policy.h), as one program. No answer of `first` lets a call run without
// the guard deciding: ALLOW and LOG jump to it, ERRNO, TRAP and KILL never
// run the call, a policy's SCMP_ACT_TRACE is imported as ENOSYS (a traced
// call would run once a tracer of the sandbox's own had seen it), and a
// notified refusal is answered, never continued.
Result<std::vector<sock_filter>> withPrivilegedFileGuard(const std::vector<sock_filter>& first);

enum class SyscallNameKind {
    Native,             // exists on this architecture; `nr` is its number
    OtherArchitecture,  // exists, but not here
    Unknown,            // no architecture has it
};
struct SyscallLookup {
    SyscallNameKind kind = SyscallNameKind::Unknown;
    int nr = -1;
};

// How compileFilter reads a name; importers use it to point at a bad name.
SyscallLookup lookupSyscall(std::string_view name);

}  // namespace stockade::seccomp
