#include "base/error.h"

#include <string.h>

namespace stockade {

std::string errnoName(int err) {
    if (const char* name = strerrorname_np(err)) return name;
    return "errno " + std::to_string(err);
}

std::string Error::describe() const {
    if (errno_ == 0) return text_;
    return text_ + ": " + errnoName(errno_);
}

}  // namespace stockade
