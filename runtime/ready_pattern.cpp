#include "runtime/ready_pattern.h"

namespace stockade {

namespace {

bool isWord(char c) {
    unsigned char u = static_cast<unsigned char>(c);
    return (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || u == '_';
}

}  // namespace

Result<ReadyPattern> ReadyPattern::compile(const std::string& expression) {
    if (expression.empty()) return Error::message("--ready-pattern: empty pattern");
    try {
        return ReadyPattern(std::regex(expression, std::regex::ECMAScript | std::regex::optimize));
    } catch (const std::regex_error& e) {
        return Error::message("--ready-pattern: \"" + expression +
                              "\" is not a valid regular expression (" + e.what() + ")");
    }
}

bool ReadyPattern::matchesLine(const std::string& line) const {
    for (auto it = std::sregex_iterator(line.begin(), line.end(), re_);
         it != std::sregex_iterator(); ++it) {
        size_t begin = static_cast<size_t>(it->position(0));
        size_t end = begin + static_cast<size_t>(it->length(0));
        if (end == begin) continue;
        bool left = begin == 0 || !isWord(line[begin - 1]) || !isWord(line[begin]);
        bool right = end == line.size() || !isWord(line[end]) || !isWord(line[end - 1]);
        if (left && right) return true;
    }
    return false;
}

bool ReadyPattern::feed(const char* data, size_t size) {
    if (matched_) return true;
    for (size_t i = 0; i < size && !matched_; ++i) {
        char c = data[i];
        // ECMA-48 escapes: CSI (ESC [ ... final 0x40-0x7E), OSC (ESC ] ...
        // BEL or ESC \), and two-byte ESC x. Colours would otherwise glue an
        // "m" to the first word of a line.
        switch (escape_) {
            case Escape::Started:
                escape_ = c == '[' ? Escape::Csi : c == ']' ? Escape::Osc : Escape::None;
                continue;
            case Escape::Csi:
                if (c >= 0x40 && c <= 0x7e) escape_ = Escape::None;
                continue;
            case Escape::Osc:
                if (c == '\a' || c == '\\') escape_ = Escape::None;
                continue;
            case Escape::None:
                break;
        }
        if (c == '\x1b') {
            escape_ = Escape::Started;
        } else if (c == '\n' || c == '\r') {
            matched_ = matchesLine(line_);
            line_.clear();
        } else if (line_.size() < kMaxLine) {
            line_ += c;
        }
    }
    // A prompt-like line without its newline yet ("ready in 300 ms" then
    // a spinner) still counts.
    if (!matched_ && !line_.empty()) matched_ = matchesLine(line_);
    return matched_;
}

}  // namespace stockade
