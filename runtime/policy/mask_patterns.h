// The worktree's hide and read-only patterns (issue 21): their syntax,
// checked when a profile is read or a policy built, and their matching by
// path component, which the worktree walk (runtime/plan/worktree_masks.h)
// applies to every name it examines.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "runtime/policy/policy.h"

namespace stockade {

// An anchored pattern starts so: it matches from the worktree's top only.
inline constexpr const char* kMaskRepoPrefix = "/repo/";

// One pattern's syntax: '/'-separated components, each a glob (*, ?, [...],
// \ escapes, {a,b} alternatives); matched against the last components of a
// path at any depth, or with a leading "/repo/" against the whole path
// below the worktree. `option` names where it came from, for the message.
Status checkMaskPattern(const std::string& option, const std::string& pattern);

// Refuses rules whose patterns are malformed, and a hide pattern that would
// hide the directory the command starts in (or one above it).
Status checkMaskRules(const WorktreeMaskRules& rules, const std::string& workdir);

// "a/b/c" -> {"a", "b", "c"}.
std::vector<std::string> pathComponents(const std::string& relative);

// One glob component, with what a match must start and end with, so that
// most names are turned down without fnmatch.
struct MaskGlob {
    std::string text;
    bool literal = true;
    std::string prefix;
    std::string suffix;
};

// Patterns indexed by their last component: a literal one by a hash
// lookup, a glob only when the name has its literal prefix and suffix, so
// a 50,000-entry node_modules costs one lookup per name, not one fnmatch
// per name per pattern. Patterns that do not check are left out (the
// policy refused them already).
class MaskPatternSet {
  public:
    explicit MaskPatternSet(const std::vector<std::string>& sources);

    bool empty() const { return patterns_.empty(); }

    // Whether a pattern names a directory as well as the name (anchored,
    // or of more than one component): what it matches then depends on the
    // names of the directories above, which a rename changes.
    bool namesDirectories() const;

    // The pattern that matches `name` inside the directory whose components
    // are `dir` (from the worktree's top), or null.
    const std::string* match(const std::vector<std::string>& dir, const std::string& name) const;

    // The pattern that names `name` inside `dir` as one of the directories
    // above what it matches (`.github` for `.github/workflows`, `config` in
    // the top for `/repo/config/master.key`), or null: a link there would
    // take a later write of the name elsewhere, where the pattern does not
    // reach.
    // Patterns `except` lists as written (an exemption: `--writable
    // .github/workflows`) are passed over.
    const std::string* onTheWay(const std::vector<std::string>& dir, const std::string& name,
                                const MaskPatternSet* except = nullptr) const;

    // Whether `source` is one of the patterns, as written.
    bool lists(const std::string& source) const;

  private:
    struct Compiled {
        const std::string* source;  // as the operator wrote it
        bool anchored = false;      // "/repo/...": from the worktree's top only
        std::vector<MaskGlob> components;
    };
    static bool matchesAbove(const Compiled& p, const std::vector<std::string>& dir);

    std::vector<Compiled> patterns_;
    std::unordered_map<std::string, std::vector<size_t>> by_last_;
    std::vector<size_t> globs_;
    std::vector<size_t> naming_dirs_;  // of more than one component
};

}  // namespace stockade
