#include "oracle/git_ignore.h"

#include <cctype>
#include <cstring>
#include <optional>

namespace stockade::oracle {

namespace {

// wildmatch.c's results. The two ABORT values stop the backtracking of outer
// '*'s early, which keeps matching polynomial.
enum WildResult { kMatch = 0, kNoMatch = 1, kAbortAll = -1, kAbortToStarStar = -2 };

bool isGlobSpecial(unsigned char c) {
    return c == '*' || c == '?' || c == '[' || c == '\\';
}

// Whether c belongs to the [:name:] class of length len at s; -1 for a name
// git does not know (which aborts the whole match, as in git).
int inCharClass(const unsigned char* s, int len, unsigned char c) {
    auto is = [&](const char* name) {
        return static_cast<int>(std::strlen(name)) == len &&
               std::memcmp(s, name, static_cast<size_t>(len)) == 0;
    };
    if (is("alnum")) return std::isalnum(c) != 0;
    if (is("alpha")) return std::isalpha(c) != 0;
    if (is("blank")) return c == ' ' || c == '\t';
    if (is("cntrl")) return std::iscntrl(c) != 0;
    if (is("digit")) return std::isdigit(c) != 0;
    if (is("graph")) return std::isgraph(c) != 0;
    if (is("lower")) return std::islower(c) != 0;
    if (is("print")) return std::isprint(c) != 0;
    if (is("punct")) return std::ispunct(c) != 0;
    if (is("space")) return std::isspace(c) != 0;
    if (is("upper")) return std::isupper(c) != 0;
    if (is("xdigit")) return std::isxdigit(c) != 0;
    return -1;
}

// Calls of doWild allowed for one match. git's matcher is exponential in the
// number of "**" for some patterns ("**/**/**/..." against a deep path), and
// the patterns come from the party under test; ordinary patterns need a few
// dozen calls.
constexpr long kWildBudget = 200000;

// A line-by-line port of dowild() from git's wildmatch.c (without
// WM_CASEFOLD), with a budget of calls. Both strings are NUL-terminated.
int doWild(const unsigned char* p, const unsigned char* text, bool pathname, long& budget) {
    if (--budget < 0) return kAbortAll;
    const unsigned char* pattern = p;
    unsigned char p_ch;
    for (; (p_ch = *p) != '\0'; text++, p++) {
        unsigned char t_ch = *text;
        if (t_ch == '\0' && p_ch != '*') return kAbortAll;
        switch (p_ch) {
            case '\\':
                // A literal match with the next character; "\" at the end
                // compares NUL with the text and fails there.
                p_ch = *++p;
                [[fallthrough]];
            default:
                if (t_ch != p_ch) return kNoMatch;
                continue;
            case '?':
                if (pathname && t_ch == '/') return kNoMatch;
                continue;
            case '*': {
                bool match_slash;
                if (*++p == '*') {
                    const unsigned char* prev_p = p - 2;
                    while (*++p == '*') {
                    }
                    if ((prev_p < pattern || *prev_p == '/') &&
                        (*p == '\0' || *p == '/' || (p[0] == '\\' && p[1] == '/'))) {
                        // "**/" may match no directory at all: try the rest
                        // of the pattern right here first.
                        if (p[0] == '/' && doWild(p + 1, text, pathname, budget) == kMatch)
                            return kMatch;
                        match_slash = true;
                    } else {
                        match_slash = !pathname;
                    }
                } else {
                    match_slash = !pathname;
                }
                if (*p == '\0') {
                    // A trailing "**" matches everything; a trailing "*" only
                    // what has no more '/'.
                    if (!match_slash && std::strchr(reinterpret_cast<const char*>(text), '/'))
                        return kNoMatch;
                    return kMatch;
                }
                if (!match_slash && *p == '/') {
                    // One '*' followed by '/' matches up to the next '/'.
                    const char* slash = std::strchr(reinterpret_cast<const char*>(text), '/');
                    if (slash == nullptr) return kNoMatch;
                    text = reinterpret_cast<const unsigned char*>(slash);
                    break;  // the for loop consumes the '/'
                }
                for (;;) {
                    if (t_ch == '\0') break;
                    // After '*' comes a literal: skip ahead to where it occurs.
                    if (!isGlobSpecial(*p)) {
                        p_ch = *p;
                        while ((t_ch = *text) != '\0' && (match_slash || t_ch != '/')) {
                            if (t_ch == p_ch) break;
                            text++;
                        }
                        if (t_ch != p_ch) return match_slash ? kAbortAll : kAbortToStarStar;
                    }
                    int matched = doWild(p, text, pathname, budget);
                    if (matched != kNoMatch) {
                        if (!match_slash || matched != kAbortToStarStar) return matched;
                    } else if (!match_slash && t_ch == '/') {
                        return kAbortToStarStar;
                    }
                    t_ch = *++text;
                }
                return kAbortAll;
            }
            case '[': {
                p_ch = *++p;
                if (p_ch == '^') p_ch = '!';
                bool negated = p_ch == '!';
                if (negated) p_ch = *++p;
                unsigned char prev_ch = 0;
                bool matched = false;
                do {
                    if (p_ch == '\0') return kAbortAll;
                    if (p_ch == '\\') {
                        p_ch = *++p;
                        if (p_ch == '\0') return kAbortAll;
                        if (t_ch == p_ch) matched = true;
                    } else if (p_ch == '-' && prev_ch && p[1] && p[1] != ']') {
                        p_ch = *++p;
                        if (p_ch == '\\') {
                            p_ch = *++p;
                            if (p_ch == '\0') return kAbortAll;
                        }
                        if (t_ch <= p_ch && t_ch >= prev_ch) matched = true;
                        p_ch = 0;  // so that prev_ch becomes 0: no range may follow
                    } else if (p_ch == '[' && p[1] == ':') {
                        const unsigned char* s = p += 2;
                        for (; (p_ch = *p) != '\0' && p_ch != ']'; p++) {
                        }
                        if (p_ch == '\0') return kAbortAll;
                        int len = static_cast<int>(p - s) - 1;
                        if (len < 0 || p[-1] != ':') {
                            // No ":]": the '[' was an ordinary member.
                            p = s - 2;
                            p_ch = '[';
                            if (t_ch == p_ch) matched = true;
                            continue;
                        }
                        int in_class = inCharClass(s, len, t_ch);
                        if (in_class < 0) return kAbortAll;
                        if (in_class) matched = true;
                        p_ch = 0;
                    } else if (t_ch == p_ch) {
                        matched = true;
                    }
                } while (prev_ch = p_ch, (p_ch = *++p) != ']');
                if (matched == negated || (pathname && t_ch == '/')) return kNoMatch;
                continue;
            }
        }
    }
    return *text ? kNoMatch : kMatch;
}

// dir.c's trim_trailing_spaces: unescaped trailing spaces go, "\ " stays.
void trimTrailingSpaces(std::string& line) {
    size_t last_space = std::string::npos;
    for (size_t i = 0; i < line.size(); ++i) {
        if (line[i] == ' ') {
            if (last_space == std::string::npos) last_space = i;
        } else if (line[i] == '\\') {
            if (++i == line.size()) return;
            last_space = std::string::npos;
        } else {
            last_space = std::string::npos;
        }
    }
    if (last_space != std::string::npos) line.resize(last_space);
}

}  // namespace

std::optional<bool> wildmatch(std::string_view pattern, std::string_view text, bool pathname) {
    // git works on C strings; a NUL inside either ends it there as well.
    std::string p(pattern.substr(0, pattern.find('\0')));
    std::string t(text.substr(0, text.find('\0')));
    long budget = kWildBudget;
    int result = doWild(reinterpret_cast<const unsigned char*>(p.c_str()),
                        reinterpret_cast<const unsigned char*>(t.c_str()), pathname, budget);
    if (budget < 0) return std::nullopt;
    return result == kMatch;
}

Result<IgnoreList> IgnoreList::parse(std::string_view content, std::string base) {
    IgnoreList list;
    list.base_ = std::move(base);
    size_t line_number = 0;
    while (!content.empty()) {
        size_t end = content.find('\n');
        std::string line(content.substr(0, end));
        content.remove_prefix(end == std::string_view::npos ? content.size() : end + 1);
        ++line_number;
        // As dir.c: one CR before the LF goes (files edited on Windows), the
        // line ends at a NUL, comments and blank lines match nothing.
        if (!line.empty() && line.back() == '\r') line.pop_back();
        line.resize(std::min(line.size(), line.find('\0')));
        if (line.empty() || line[0] == '#') continue;
        trimTrailingSpaces(line);
        if (line.size() > kMaxPatternBytes)
            return Error::message("line " + std::to_string(line_number) + " holds a pattern of " +
                                  std::to_string(line.size()) + " bytes, more than " +
                                  std::to_string(kMaxPatternBytes));
        Pattern pattern;
        std::string_view text = line;
        if (!text.empty() && text[0] == '!') {
            pattern.negative = true;
            text.remove_prefix(1);
        }
        if (!text.empty() && text.back() == '/') {
            pattern.must_be_dir = true;
            text.remove_suffix(1);
        }
        pattern.basename_only = text.find('/') == std::string_view::npos;
        // A leading '/' only anchors the pattern to base; dir.c drops it.
        if (!pattern.basename_only && text[0] == '/') text.remove_prefix(1);
        pattern.text = text;
        list.patterns_.push_back(std::move(pattern));
    }
    return list;
}

IgnoreList::Match IgnoreList::match(std::string_view path, bool is_dir) const {
    std::string_view basename = path.substr(path.rfind('/') + 1);
    // A path outside base is untouched by the anchored patterns (dir.c's
    // match_pathname); basename patterns apply anywhere the list is consulted.
    bool beneath_base = path.size() > base_.size() && path.substr(0, base_.size()) == base_;
    std::string_view relative = beneath_base ? path.substr(base_.size()) : std::string_view();
    for (auto it = patterns_.rbegin(); it != patterns_.rend(); ++it) {
        if (it->must_be_dir && !is_dir) continue;
        if (!it->basename_only && !beneath_base) continue;
        std::optional<bool> matched = it->basename_only ? wildmatch(it->text, basename, false)
                                                        : wildmatch(it->text, relative, true);
        if (!matched) return Match::TooCostly;
        if (*matched) return it->negative ? Match::Included : Match::Excluded;
    }
    return Match::None;
}

}  // namespace stockade::oracle
