// The default policy's filter, compiled at build time by
// seccomp/tools/embed_default_filter.cpp (the same compileFilter() the
// runtime would call). Linked into the runtime, not into stockade_seccomp.
#pragma once

#include <linux/filter.h>

#include <span>

namespace stockade::seccomp {

std::span<const sock_filter> defaultProgram();

}  // namespace stockade::seccomp
