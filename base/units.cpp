#include "base/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace stockade {

namespace {

Error expected(std::string_view what, std::string_view text) {
    return Error::message("expected " + std::string(what) + ", got \"" + std::string(text) + "\"");
}

}  // namespace

Result<uint64_t> parseCount(std::string_view text) {
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value == 0)
        return expected("a positive integer", text);
    return value;
}

Result<uint64_t> parseSize(std::string_view text) {
    const char* what = "a size like \"512m\" or a byte count";
    if (text.empty()) return expected(what, text);
    uint64_t shift = 0;
    std::string_view digits = text;
    switch (std::tolower(static_cast<unsigned char>(text.back()))) {
        case 'k':
            shift = 10;
            break;
        case 'm':
            shift = 20;
            break;
        case 'g':
            shift = 30;
            break;
        case 't':
            shift = 40;
            break;
        default:
            break;
    }
    if (shift != 0) digits.remove_suffix(1);
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || value == 0)
        return expected(what, text);
    if (value > (std::numeric_limits<uint64_t>::max() >> shift))
        return Error::message("size \"" + std::string(text) + "\" is too large");
    return value << shift;
}

Result<uint64_t> parseSecondsAsMs(std::string_view text) {
    const char* what = "seconds like \"30\" or \"1.5\"";
    if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.'))
        return expected(what, text);
    double seconds = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(seconds) ||
        seconds <= 0 || seconds > 1e9)
        return expected(what, text);
    // Through whole microseconds first: 2.007 * 1000 is 2007.0000000000002
    // in binary floating point, which a plain ceil would make 2008.
    auto us = static_cast<uint64_t>(std::llround(seconds * 1e6));
    uint64_t ms = (us + 999) / 1000;
    return ms == 0 ? 1 : ms;
}

}  // namespace stockade
