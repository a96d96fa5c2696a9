// UTS namespace, child side (G9): the sandbox's own hostname and NIS
// domain name.
#pragma once

#include <cstddef>

namespace stockade::ns {

// `name` (`length` bytes) as the hostname unless empty, and `domain` as the
// domain name unless null. `refuse`: answer as if the kernel had refused
// sethostname with the errno already set (base/fault_injection.h, for tests
// of the error line).
int setHostnameInChild(const char* name, size_t length, const char* domain, size_t domain_length,
                       bool refuse = false) noexcept;

}  // namespace stockade::ns
