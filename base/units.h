// The units of SPEC §2: SIZE is a byte count with an optional binary suffix
// (k, m, g, t); SEC is seconds, fractions allowed.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/error.h"

namespace stockade {

// "512m" -> 536870912. Zero, negatives, overflow and junk are errors.
Result<uint64_t> parseSize(std::string_view text);
// "1.5" -> 1500 (milliseconds). Zero, negatives and junk are errors.
Result<uint64_t> parseSecondsAsMs(std::string_view text);
// A positive integer count ("512").
Result<uint64_t> parseCount(std::string_view text);

}  // namespace stockade
