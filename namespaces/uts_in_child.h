// UTS namespace, child side (G9): the sandbox's own hostname.
#pragma once

#include <cstddef>

namespace stockade::ns {

// `refuse`: answer as if the kernel had refused sethostname with the errno
// already set (base/fault_injection.h, for tests of the error line).
int setHostnameInChild(const char* name, size_t length, bool refuse = false) noexcept;

}  // namespace stockade::ns
