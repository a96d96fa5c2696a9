// Helpers shared by runtime/host_*.cpp, the files behind `stockade check`
// (host_check.h); not part of its API.
#pragma once

#include <chrono>
#include <cstdint>

namespace stockade::host_check_detail {

using Clock = std::chrono::steady_clock;

inline uint64_t microsSince(Clock::time_point start) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
}

}  // namespace stockade::host_check_detail
