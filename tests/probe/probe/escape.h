// How stockade-probe prints bytes on its one-line `key=value` output. Header
// only, because the host-side harness escapes what it reads itself with the
// same function to compare it with what the probe printed.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace probe {

// Bytes as one printable line: \n, \t, \\, \0 and \xNN escaped.
inline std::string escape(std::string_view bytes) {
    std::string out;
    for (const unsigned char c : bytes) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\0') {
            out += "\\0";
        } else if (c < 0x20 || c >= 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

}  // namespace probe
