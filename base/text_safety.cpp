#include "base/text_safety.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace stockade {

namespace {

// What a terminal acts on rather than shows: C0 and DEL, C1 (U+009B is a
// CSI on its own for terminals that honour 8-bit controls), and the
// bidirectional controls that reorder how the rest of a line is displayed.
bool actsOnTerminal(uint32_t cp) {
    return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E ||
           cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

void appendHex(std::string& out, const char* format, unsigned value) {
    char buf[16];
    int n = std::snprintf(buf, sizeof(buf), format, value);
    out.append(buf, static_cast<size_t>(n));
}

const std::string_view kReplacement = "\xEF\xBF\xBD";

}  // namespace

// Unicode Table 3-7 (well-formed UTF-8 byte sequences): the second byte's
// range depends on the first, which rules out overlong forms, surrogates and
// anything above U+10FFFF.
Utf8Sequence utf8SequenceAt(std::string_view text, size_t at) {
    auto c = static_cast<unsigned char>(text[at]);
    if (c < 0x80) return {1, true, false, c};
    size_t continuation;
    uint32_t cp;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        continuation = 1;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        continuation = 2;
        cp = c & 0x0F;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        continuation = 3;
        cp = c & 0x07;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return {1, false, false, 0};
    }
    for (size_t k = 1; k <= continuation; ++k) {
        if (at + k >= text.size()) return {k, false, true, 0};
        auto b = static_cast<unsigned char>(text[at + k]);
        if (b < lo || b > hi) return {k, false, false, 0};
        cp = (cp << 6) | (b & 0x3F);
        lo = 0x80;
        hi = 0xBF;
    }
    return {continuation + 1, true, false, cp};
}

bool isValidUtf8(std::string_view text) {
    for (size_t i = 0; i < text.size();) {
        if (static_cast<unsigned char>(text[i]) < 0x80) {
            ++i;
            continue;
        }
        Utf8Sequence s = utf8SequenceAt(text, i);
        if (!s.valid) return false;
        i += s.length;
    }
    return true;
}

std::string validUtf8(std::string_view text) {
    if (isValidUtf8(text)) return std::string(text);
    std::string out;
    out.reserve(text.size() + 8);
    for (size_t i = 0; i < text.size();) {
        Utf8Sequence s = utf8SequenceAt(text, i);
        if (s.valid)
            out.append(text.substr(i, s.length));
        else
            out.append(kReplacement);
        i += s.length;
    }
    return out;
}

std::string jsonText(const nlohmann::json& doc, int indent) {
    // nlohmann's replace handler substitutes U+FFFD per maximal subpart, the
    // rule of validUtf8() (tests/unit/text_safety_test.cpp holds them to
    // it); strict would throw type_error 316 on the first stray byte.
    std::string text = doc.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
    // The dump escapes C0 itself; what else acts on a terminal can only sit
    // inside a string here, where \uXXXX is the same character.
    std::string out;
    size_t copied = 0;
    for (size_t i = 0; i < text.size();) {
        auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x7F) {
            ++i;
            continue;
        }
        Utf8Sequence s = utf8SequenceAt(text, i);
        if (s.valid && actsOnTerminal(s.code_point)) {
            out.append(text, copied, i - copied);
            appendHex(out, "\\u%04x", s.code_point);
            copied = i + s.length;
        }
        i += s.length;
    }
    if (copied == 0) return text;
    out.append(text, copied, std::string::npos);
    return out;
}

std::string escapeForTerminal(std::string_view text, Newlines newlines) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        Utf8Sequence s = utf8SequenceAt(text, i);
        if (!s.valid) {
            for (size_t k = 0; k < s.length; ++k)
                appendHex(out, "\\x%02x", static_cast<unsigned char>(text[i + k]));
        } else if (!actsOnTerminal(s.code_point)) {
            out.append(text.substr(i, s.length));
        } else if ((s.code_point == '\n' || s.code_point == '\t') && newlines == Newlines::Keep) {
            out += static_cast<char>(s.code_point);
        } else if (s.code_point == '\n') {
            out += "\\n";
        } else if (s.code_point == '\t') {
            out += "\\t";
        } else if (s.code_point == '\r') {
            out += "\\r";
        } else if (s.code_point < 0x80) {
            appendHex(out, "\\x%02x", s.code_point);
        } else {
            appendHex(out, "\\u%04x", s.code_point);
        }
        i += s.length;
    }
    return out;
}

size_t completeUtf8Prefix(std::string_view text) {
    // A character is at most 4 bytes: only the last 3 can be an unfinished one.
    size_t from = text.size() > 3 ? text.size() - 3 : 0;
    for (size_t i = from; i < text.size(); ++i) {
        auto c = static_cast<unsigned char>(text[i]);
        if (c < 0xC2 || c > 0xF4) continue;
        Utf8Sequence s = utf8SequenceAt(text, i);
        if (s.truncated) return i;
    }
    return text.size();
}

}  // namespace stockade
