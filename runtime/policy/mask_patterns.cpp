#include "runtime/policy/mask_patterns.h"

#include <fnmatch.h>

#include <algorithm>
#include <string_view>

#include "base/text_safety.h"

namespace stockade {

namespace {

constexpr size_t kMaxPatternBytes = 1024;
constexpr size_t kMaxAlternatives = 256;  // after {a,b} expansion, per pattern
bool isGlobMeta(char c) {
    return c == '*' || c == '?' || c == '[' || c == '\\';
}

// Checks one component's glob syntax; returns the problem, or "".
std::string globProblem(std::string_view glob) {
    if (glob.empty()) return "an empty component";
    if (glob == "." || glob == "..") return "a \"" + std::string(glob) + "\" component";
    if (glob.find("**") != std::string_view::npos)
        return "\"**\" (an unanchored pattern already matches at any depth)";
    for (size_t i = 0; i < glob.size(); ++i) {
        if (glob[i] == '\\') {
            if (++i == glob.size()) return "a trailing \\";
        } else if (glob[i] == '[') {
            size_t j = i + 1;
            if (j < glob.size() && (glob[j] == '!' || glob[j] == '^')) ++j;
            if (j < glob.size() && glob[j] == ']') ++j;
            while (j < glob.size() && glob[j] != ']') ++j;
            if (j == glob.size()) return "an unclosed [";
            i = j;
        }
    }
    return "";
}

// "auth.{json,toml}" -> "auth.json", "auth.toml"; one level, no nesting.
Result<std::vector<std::string>> expandAlternatives(const std::string& pattern) {
    size_t open = std::string::npos;
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '\\') {
            ++i;
        } else if (pattern[i] == '{') {
            open = i;
            break;
        } else if (pattern[i] == '}') {
            return Error::message("a } without its {");
        }
    }
    if (open == std::string::npos) return std::vector<std::string>{pattern};
    size_t close = std::string::npos;
    for (size_t i = open + 1; i < pattern.size(); ++i) {
        if (pattern[i] == '\\') {
            ++i;
        } else if (pattern[i] == '{') {
            return Error::message("nested { }");
        } else if (pattern[i] == '/') {
            return Error::message("a / inside { }");
        } else if (pattern[i] == '}') {
            close = i;
            break;
        }
    }
    if (close == std::string::npos) return Error::message("an unclosed {");
    std::vector<std::string> choices;
    std::string inner = pattern.substr(open + 1, close - open - 1);
    size_t start = 0;
    for (size_t i = 0; i <= inner.size(); ++i) {
        if (i < inner.size() && inner[i] == '\\') {
            ++i;
            continue;
        }
        if (i == inner.size() || inner[i] == ',') {
            choices.push_back(inner.substr(start, i - start));
            start = i + 1;
        }
    }
    std::vector<std::string> out;
    for (const std::string& choice : choices) {
        auto rest =
            expandAlternatives(pattern.substr(0, open) + choice + pattern.substr(close + 1));
        if (!rest) return rest.error();
        for (std::string& r : *rest) out.push_back(std::move(r));
        if (out.size() > kMaxAlternatives)
            return Error::message("more than " + std::to_string(kMaxAlternatives) +
                                  " alternatives");
    }
    return out;
}

MaskGlob compileGlob(const std::string& text) {
    MaskGlob g;
    g.text = text;
    size_t first = 0;
    while (first < text.size() && !isGlobMeta(text[first])) ++first;
    g.literal = first == text.size();
    if (g.literal) return g;
    g.prefix = text.substr(0, first);
    size_t star = text.rfind('*');
    // A bracket expression may hold the '*' (or the suffix's characters):
    // no suffix is taken from a glob with one, fnmatch alone decides.
    if (text.find('[') == std::string::npos && star != std::string::npos &&
        star + 1 < text.size() && star > 0 && text[star - 1] != '\\' &&
        std::none_of(text.begin() + static_cast<long>(star) + 1, text.end(), isGlobMeta))
        g.suffix = text.substr(star + 1);
    return g;
}

bool globMatches(const MaskGlob& g, const std::string& name) {
    if (g.literal) return g.text == name;
    if (!name.starts_with(g.prefix) || !name.ends_with(g.suffix)) return false;
    return fnmatch(g.text.c_str(), name.c_str(), 0) == 0;
}

struct Split {
    bool anchored = false;
    std::vector<std::string> components;
};

// Splits and checks one pattern (after {} expansion).
Result<Split> splitPattern(const std::string& pattern) {
    Split out;
    std::string rest = pattern;
    if (rest.starts_with("/")) {
        if (rest == "/repo" || rest == "/repo/" || rest == "/")
            return Error::message("it would hide /repo itself");
        if (!rest.starts_with(kMaskRepoPrefix))
            return Error::message("an absolute pattern must start with /repo/");
        out.anchored = true;
        rest = rest.substr(std::string_view(kMaskRepoPrefix).size());
    }
    if (rest.ends_with("/"))
        return Error::message("a trailing / (a pattern names entries of any type)");
    size_t start = 0;
    while (true) {
        size_t slash = rest.find('/', start);
        std::string component =
            rest.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
        if (std::string problem = globProblem(component); !problem.empty())
            return Error::message("it has " + problem);
        out.components.push_back(component);
        if (slash == std::string::npos) break;
        start = slash + 1;
    }
    return out;
}

Status checkOne(const std::string& pattern) {
    if (pattern.empty()) return Error::message("it is empty");
    if (pattern.size() > kMaxPatternBytes)
        return Error::message("it is longer than " + std::to_string(kMaxPatternBytes) + " bytes");
    if (pattern.find('\0') != std::string::npos) return Error::message("it holds a NUL byte");
    auto alternatives = expandAlternatives(pattern);
    if (!alternatives) return Error::message("it has " + alternatives.error().text());
    for (const std::string& one : *alternatives)
        if (auto split = splitPattern(one); !split) return split.error();
    return okStatus();
}

}  // namespace

std::vector<std::string> pathComponents(const std::string& relative) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start < relative.size()) {
        size_t slash = relative.find('/', start);
        if (slash == std::string::npos) slash = relative.size();
        out.push_back(relative.substr(start, slash - start));
        start = slash + 1;
    }
    return out;
}

Status checkMaskPattern(const std::string& option, const std::string& pattern) {
    if (auto s = checkOne(pattern); !s)
        return Error::message(option + " \"" + escapeForTerminal(pattern) +
                              "\": not a usable pattern: " + s.error().text());
    return okStatus();
}

Status checkMaskRules(const WorktreeMaskRules& rules, const std::string& workdir) {
    if (rules.max_depth == 0 || rules.max_entries == 0)
        return Error::message("the worktree walk's bounds must be positive");
    if (!workdir.starts_with(kMaskRepoPrefix)) return okStatus();
    MaskPatternSet hide(rules.hide), show(rules.show);
    std::vector<std::string> components =
        pathComponents(workdir.substr(std::string_view(kMaskRepoPrefix).size()));
    std::vector<std::string> above;
    for (const std::string& name : components) {
        if (const std::string* p = hide.match(above, name); p && !show.match(above, name))
            return Error::message("--workdir " + workdir + ": the hide pattern \"" +
                                  escapeForTerminal(*p) + "\" would hide it (--show " +
                                  escapeForTerminal(*p) + " exempts it)");
        above.push_back(name);
    }
    return okStatus();
}

MaskPatternSet::MaskPatternSet(const std::vector<std::string>& sources) {
    for (const std::string& source : sources) {
        auto alternatives = expandAlternatives(source);
        if (!alternatives) continue;  // checked when the policy was built
        for (const std::string& one : *alternatives) {
            auto split = splitPattern(one);
            if (!split) continue;
            Compiled p{&source, split->anchored, {}};
            for (const std::string& c : split->components) p.components.push_back(compileGlob(c));
            size_t index = patterns_.size();
            if (p.components.size() > 1) naming_dirs_.push_back(index);
            if (p.components.back().literal)
                by_last_[p.components.back().text].push_back(index);
            else
                globs_.push_back(index);
            patterns_.push_back(std::move(p));
        }
    }
}

bool MaskPatternSet::namesDirectories() const {
    return std::any_of(patterns_.begin(), patterns_.end(),
                       [](const Compiled& p) { return p.anchored || p.components.size() > 1; });
}

const std::string* MaskPatternSet::match(const std::vector<std::string>& dir,
                                         const std::string& name) const {
    if (auto it = by_last_.find(name); it != by_last_.end())
        for (size_t index : it->second)
            if (matchesAbove(patterns_[index], dir)) return patterns_[index].source;
    for (size_t index : globs_) {
        const Compiled& p = patterns_[index];
        if (globMatches(p.components.back(), name) && matchesAbove(p, dir)) return p.source;
    }
    return nullptr;
}

const std::string* MaskPatternSet::onTheWay(const std::vector<std::string>& dir,
                                            const std::string& name,
                                            const MaskPatternSet* except) const {
    for (size_t index : naming_dirs_) {
        const Compiled& p = patterns_[index];
        if (except && except->lists(*p.source)) continue;
        // `name` as component k, one before the last at most; the k before
        // it against the end of `dir` (the whole of it when anchored).
        for (size_t k = 0; k + 1 < p.components.size(); ++k) {
            if (p.anchored ? dir.size() != k : dir.size() < k) continue;
            if (!globMatches(p.components[k], name)) continue;
            bool above = true;
            for (size_t i = 0; i < k && above; ++i)
                above = globMatches(p.components[k - 1 - i], dir[dir.size() - 1 - i]);
            if (above) return p.source;
        }
    }
    return nullptr;
}

bool MaskPatternSet::lists(const std::string& source) const {
    return std::any_of(patterns_.begin(), patterns_.end(),
                       [&](const Compiled& p) { return *p.source == source; });
}

// The components before the last against the end of `dir`.
bool MaskPatternSet::matchesAbove(const Compiled& p, const std::vector<std::string>& dir) {
    size_t above = p.components.size() - 1;
    if (p.anchored ? dir.size() != above : dir.size() < above) return false;
    for (size_t i = 0; i < above; ++i)
        if (!globMatches(p.components[above - 1 - i], dir[dir.size() - 1 - i])) return false;
    return true;
}

}  // namespace stockade
