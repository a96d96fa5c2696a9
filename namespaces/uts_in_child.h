// UTS namespace, child side (G9): the sandbox's own hostname.
#pragma once

#include <cstddef>

namespace stockade::ns {

int setHostnameInChild(const char* name, size_t length) noexcept;

}  // namespace stockade::ns
