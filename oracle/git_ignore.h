// Git's ignore rules (gitignore(5)), so that the worktree's tree id is the one
// `git add -A && git write-tree` gives: `git add -A` leaves out untracked
// paths that .gitignore or .git/info/exclude exclude, and never looks inside
// an excluded directory. Matching is a port of git's wildmatch.c and the
// pattern handling of dir.c (git 2.39), case-sensitive as git is on Linux.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace stockade::oracle {

// git's wildmatch(): '*', '?', '[...]' (with '!'/'^' negation, ranges and
// [:classes:]), '\' escapes and, when `pathname` is set (WM_PATHNAME), '**'
// that crosses directories while '*' and '?' stop at '/'. nullopt when the
// match would cost more than a fixed budget of steps: git's algorithm is
// exponential for some patterns, and these patterns come from the party
// under test, so stockade gives up (and says so) where git would grind.
std::optional<bool> wildmatch(std::string_view pattern, std::string_view text, bool pathname);

// The patterns of one ignore file, which apply beneath `base`.
class IgnoreList {
  public:
    // TooCostly: a pattern took more than wildmatch's budget; the answer is
    // unknown and must not be guessed.
    enum class Match { None, Excluded, Included, TooCostly };

    // `base` is the directory the file sits in, relative to the worktree
    // root: "" for the root (and for .git/info/exclude), else "dir/sub/". A
    // pattern longer than kMaxPatternBytes is an Error naming its line: git
    // would take it, stockade bounds the matcher's recursion instead.
    static Result<IgnoreList> parse(std::string_view content, std::string base);

    // The verdict of the last pattern that matches `path` (relative to the
    // worktree root, no trailing '/'), or None.
    Match match(std::string_view path, bool is_dir) const;

    bool empty() const { return patterns_.empty(); }

    static constexpr size_t kMaxPatternBytes = 4096;

  private:
    struct Pattern {
        std::string text;            // without '!', and without a trailing '/'
        bool negative = false;       // "!pattern" re-includes
        bool must_be_dir = false;    // "pattern/" matches directories only
        bool basename_only = false;  // no '/' inside: matches the last component at any depth
    };
    std::string base_;
    std::vector<Pattern> patterns_;
};

}  // namespace stockade::oracle
