// The default policy's filter, compiled at build time by
// seccomp/tools/embed_default_filter.cpp (the same compileFilter() the
// runtime would call). Linked into the runtime, not into stockade_seccomp.
#pragma once

#include <linux/filter.h>

#include <span>

namespace stockade::seccomp {

// Refusals answered by the kernel with EPERM.
std::span<const sock_filter> defaultProgram();
// The same policy with every refusal sent to the supervisor's listener
// (seccomp/denials.h), which answers EPERM and counts it. Never installed
// without a listener: unanswered, a refusal would read as ENOSYS.
std::span<const sock_filter> defaultNotifiedProgram();

}  // namespace stockade::seccomp
