#include "serve/ready_pattern.h"

#include <re2/re2.h>

namespace stockade {

namespace {

// Shown as typed, but for bytes that are not printable ASCII: the message
// goes to a terminal and into the result record, whose JSON must be UTF-8.
std::string printable(std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string shown;
    for (char c : text) {
        unsigned char u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7f)
            shown += c;
        else
            shown += {'\\', 'x', kHex[u >> 4], kHex[u & 15]};
    }
    return shown;
}

std::string quoted(const std::string& expression) {
    return "--ready-pattern: \"" + printable(expression) + "\"";
}

// RE2's words for a refusal, with what an ECMAScript or PCRE user needs to
// know beside them.
Error refusal(const std::string& expression, const RE2& re) {
    std::string why = printable(re.error());
    switch (re.error_code()) {
        case RE2::ErrorBadPerlOp:
        case RE2::ErrorBadEscape:
            why += " (RE2 syntax: no lookaround, no backreferences, no \\Z or \\h)";
            break;
        case RE2::ErrorRepeatSize:
            why += " (RE2 allows a repetition count up to 1000, nested counts included)";
            break;
        case RE2::ErrorPatternTooLarge:
            why += " (its program needs more than the " +
                   std::to_string(ReadyPattern::kMaxMemory >> 20) + " MiB allowed)";
            break;
        default:
            break;
    }
    return Error::message(quoted(expression) + " is not a usable RE2 expression: " + why);
}

// A match at one place may depend on the characters either side of it, and
// an empty match on nothing else (^ $ \b \B \A \z look one character each
// way; a line holds no newline): so the empty string is matchable at all iff
// it is in one of these nine contexts.
bool matchesEmpty(const RE2& re) {
    for (std::string_view before : {"", "a", " "})
        for (std::string_view after : {"", "a", " "}) {
            const std::string text = std::string(before) + std::string(after);
            if (re.Match(text, before.size(), before.size(), RE2::ANCHOR_BOTH, nullptr, 0))
                return true;
        }
    return false;
}

}  // namespace

Result<ReadyPattern> ReadyPattern::compile(const std::string& expression) {
    if (expression.empty())
        return Error::message("--ready-pattern: the pattern is empty (every line would match)");
    RE2::Options options;  // UTF-8, case-sensitive, leftmost-first, Perl classes
    options.set_log_errors(false);
    options.set_max_mem(kMaxMemory);
    RE2 alone(expression, options);
    if (!alone.ok()) return refusal(expression, alone);
    if (matchesEmpty(alone))
        return Error::message(quoted(expression) +
                              " matches the empty string, so every line would do (say what "
                              "must be there: .+ rather than .*)");
    // The guards make "word-bounded" part of the one linear pass: the match
    // starts at the line's start, after a non-word character, or where a
    // word boundary is (its first character is then not a word character,
    // or the one before is not); the same, mirrored, at its end. `\W` works
    // by code point and `\b` by ASCII byte, as the old test of each byte
    // did. A `\Q` left open would swallow the closing guard: closed first.
    const bool open_quote = RE2(expression + "\\E", options).ok();
    auto bounded = std::make_unique<RE2>(
        "(?:^|\\W|\\b)(?:" + expression + (open_quote ? "\\E" : "") + ")(?:$|\\W|\\b)", options);
    if (!bounded->ok()) return refusal(expression, *bounded);
    return ReadyPattern(std::move(bounded));
}

ReadyPattern::ReadyPattern(std::unique_ptr<RE2> bounded) : bounded_(std::move(bounded)) {
    line_.reserve(kWindow);
}
ReadyPattern::ReadyPattern(ReadyPattern&&) noexcept = default;
ReadyPattern& ReadyPattern::operator=(ReadyPattern&&) noexcept = default;
ReadyPattern::~ReadyPattern() = default;

bool ReadyPattern::matchesLine(std::string_view line) const {
    bytes_matched_ += line.size();
    return RE2::PartialMatch(line, *bounded_);
}

void ReadyPattern::lookAtLine() {
    looked_ = line_.size();
    matched_ = matchesLine(line_);
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
            // An unfinished line already looked at whole was matched as if
            // it ended there: its end changes nothing.
            if (line_.size() > looked_) lookAtLine();
            line_.clear();
            looked_ = 0;
        } else if (line_.size() < kWindow) {
            line_ += c;
        }
    }
    // A prompt-like line without its newline yet ("ready in 300 ms" then a
    // spinner) still counts; looked at again only once it has doubled, so a
    // server that dribbles bytes costs a constant per byte.
    if (!matched_ && line_.size() > looked_ && line_.size() >= 2 * looked_) lookAtLine();
    return matched_;
}

bool ReadyPattern::settle() {
    if (!matched_ && line_.size() > looked_) lookAtLine();
    return matched_;
}

}  // namespace stockade
