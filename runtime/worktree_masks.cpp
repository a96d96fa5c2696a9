#include "runtime/worktree_masks.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <string_view>
#include <unordered_map>

#include "base/unique_fd.h"
#include "namespaces/mount_plan.h"
#include "runtime/child_plan.h"
#include "runtime/text_safety.h"

namespace stockade {

namespace {

constexpr size_t kMaxPatternBytes = 1024;
constexpr size_t kMaxAlternatives = 256;  // after {a,b} expansion, per pattern
// A directory whose path below the worktree is longer is not walked: its
// names could not be covered within PATH_MAX.
constexpr size_t kMaxWalkedPath = 3072;
constexpr const char* kRepoPrefix = "/repo/";
constexpr const char* kMaskDir = ".stockade-mask-dir";
constexpr const char* kMaskFile = ".stockade-mask-file";

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

struct Glob {
    std::string text;
    bool literal = true;
    std::string prefix;  // what a match must start with
    std::string suffix;  // and end with
};

Glob compileGlob(const std::string& text) {
    Glob g;
    g.text = text;
    size_t first = 0;
    while (first < text.size() && !isGlobMeta(text[first])) ++first;
    g.literal = first == text.size();
    if (g.literal) return g;
    g.prefix = text.substr(0, first);
    size_t star = text.rfind('*');
    if (star != std::string::npos && star + 1 < text.size() && star > 0 && text[star - 1] != '\\' &&
        std::none_of(text.begin() + static_cast<long>(star) + 1, text.end(), isGlobMeta))
        g.suffix = text.substr(star + 1);
    return g;
}

bool globMatches(const Glob& g, const std::string& name) {
    if (g.literal) return g.text == name;
    if (!name.starts_with(g.prefix) || !name.ends_with(g.suffix)) return false;
    return fnmatch(g.text.c_str(), name.c_str(), 0) == 0;
}

struct CompiledPattern {
    const std::string* source;  // as the operator wrote it
    bool anchored = false;      // "/repo/...": from the worktree's top only
    std::vector<Glob> components;
};

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
        if (!rest.starts_with(kRepoPrefix))
            return Error::message("an absolute pattern must start with /repo/");
        out.anchored = true;
        rest = rest.substr(std::string_view(kRepoPrefix).size());
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

// Patterns indexed by their last component: a literal one by a hash
// lookup, a glob only when the name has its literal prefix and suffix, so
// a 50,000-entry node_modules costs one lookup per name, not one fnmatch
// per name per pattern.
class PatternSet {
  public:
    explicit PatternSet(const std::vector<std::string>& sources) {
        for (const std::string& source : sources) {
            auto alternatives = expandAlternatives(source);
            if (!alternatives) continue;  // checked when the policy was built
            for (const std::string& one : *alternatives) {
                auto split = splitPattern(one);
                if (!split) continue;
                CompiledPattern p{&source, split->anchored, {}};
                for (const std::string& c : split->components)
                    p.components.push_back(compileGlob(c));
                size_t index = patterns_.size();
                if (p.components.back().literal)
                    by_last_[p.components.back().text].push_back(index);
                else
                    globs_.push_back(index);
                patterns_.push_back(std::move(p));
            }
        }
    }

    bool empty() const { return patterns_.empty(); }

    // The pattern that matches `name` inside the directory whose components
    // are `dir` (from the worktree's top), or null.
    const std::string* match(const std::vector<std::string>& dir, const std::string& name) const {
        if (auto it = by_last_.find(name); it != by_last_.end())
            for (size_t index : it->second)
                if (matchesAbove(patterns_[index], dir)) return patterns_[index].source;
        for (size_t index : globs_) {
            const CompiledPattern& p = patterns_[index];
            if (globMatches(p.components.back(), name) && matchesAbove(p, dir)) return p.source;
        }
        return nullptr;
    }

  private:
    // The components before the last against the end of `dir`.
    static bool matchesAbove(const CompiledPattern& p, const std::vector<std::string>& dir) {
        size_t above = p.components.size() - 1;
        if (p.anchored ? dir.size() != above : dir.size() < above) return false;
        for (size_t i = 0; i < above; ++i)
            if (!globMatches(p.components[above - 1 - i], dir[dir.size() - 1 - i])) return false;
        return true;
    }

    std::vector<CompiledPattern> patterns_;
    std::unordered_map<std::string, std::vector<size_t>> by_last_;
    std::vector<size_t> globs_;
};

std::vector<std::string> componentsOf(const std::string& relative) {
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

UniqueFd openDirBeneath(int root_fd, const std::string& relative) {
    open_how how{};
    how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    long fd =
        syscall(SYS_openat2, root_fd, relative.empty() ? "." : relative.c_str(), &how, sizeof(how));
    return UniqueFd(fd < 0 ? -1 : static_cast<int>(fd));
}

struct PendingDir {
    std::string relative;
    uint32_t depth;      // of the directory's own entries: 1 for the top
    bool inside_dotgit;  // a .git directory: its entries are examined, not walked
};

}  // namespace

Status checkMaskPattern(const std::string& option, const std::string& pattern) {
    if (auto s = checkOne(pattern); !s)
        return Error::message(option + " \"" + escapeForTerminal(pattern) +
                              "\": not a usable pattern: " + s.error().text());
    return okStatus();
}

Status checkMaskRules(const WorktreeMaskRules& rules, const std::string& workdir) {
    if (rules.max_depth == 0 || rules.max_entries == 0)
        return Error::message("the worktree walk's bounds must be positive");
    if (!workdir.starts_with(kRepoPrefix)) return okStatus();
    PatternSet hide(rules.hide), show(rules.show);
    std::vector<std::string> components = componentsOf(workdir.substr(6));
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

Result<WorktreeScan> scanWorktree(int worktree_fd, const WorktreeMaskRules& rules,
                                  bool skip_top_git) {
    const PatternSet hide(rules.hide), read_only(rules.read_only), show(rules.show),
        writable(rules.writable);
    WorktreeScan scan;
    UniqueFd root = openDirBeneath(worktree_fd, "");
    if (!root) return Error::fromErrno("open the worktree for its walk");
    std::deque<PendingDir> pending{{"", 1, false}};
    std::vector<char> buffer(1 << 16);
    while (!pending.empty() && scan.truncated_by.empty()) {
        PendingDir dir = std::move(pending.front());
        pending.pop_front();
        UniqueFd fd = dir.relative.empty() ? openDirBeneath(root.get(), "")
                                           : openDirBeneath(root.get(), dir.relative);
        if (!fd) {
            // Gone, swapped for a link, or not ours to list: what cannot be
            // listed here is not walked (docs/threat-model.md).
            ++scan.unlistable;
            continue;
        }
        ++scan.directories;
        const std::vector<std::string> above = componentsOf(dir.relative);
        while (scan.truncated_by.empty()) {
            long n = syscall(SYS_getdents64, fd.get(), buffer.data(), buffer.size());
            if (n < 0) {
                ++scan.unlistable;
                break;
            }
            if (n == 0) break;
            for (long off = 0; off < n;) {
                auto* d = reinterpret_cast<struct dirent64*>(buffer.data() + off);
                off += d->d_reclen;
                const std::string name = d->d_name;
                if (name == "." || name == "..") continue;
                if (++scan.entries > rules.max_entries) {
                    scan.entries = rules.max_entries;
                    scan.truncated_by = "max_entries";
                    break;
                }
                auto relative = [&] {
                    return dir.relative.empty() ? name : dir.relative + "/" + name;
                };
                bool is_dir = d->d_type == DT_DIR;
                bool hidden = hide.match(above, name) && !show.match(above, name);
                bool kept = !hidden && read_only.match(above, name) && !writable.match(above, name);
                if (hidden || kept || d->d_type == DT_UNKNOWN) {
                    struct stat st;
                    if (fstatat(fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
                    is_dir = S_ISDIR(st.st_mode);
                    if (hidden || kept)
                        (hidden ? scan.hidden : scan.read_only)
                            .push_back({relative(), is_dir, st.st_dev, st.st_ino});
                    if (scan.hidden.size() + scan.read_only.size() > kMaxMaskedNames)
                        return Error::message("the worktree holds more than " +
                                              std::to_string(kMaxMaskedNames) +
                                              " names to hide or keep read-only (the latest: " +
                                              escapeForTerminal(relative()) +
                                              "); refusing rather than leave some uncovered");
                }
                if (!is_dir || hidden || dir.inside_dotgit) continue;
                if (skip_top_git && dir.relative.empty() && name == ".git") continue;
                if (dir.depth >= rules.max_depth) {
                    if (scan.truncated_by.empty()) scan.truncated_by = "max_depth";
                    continue;
                }
                std::string path = relative();
                if (path.size() > kMaxWalkedPath) {
                    if (scan.truncated_by.empty()) scan.truncated_by = "path_length";
                    continue;
                }
                pending.push_back({std::move(path), dir.depth + 1, name == ".git"});
            }
        }
    }
    // A depth or path-length cut ends no walk: the rest of the tree is still
    // examined, and the cut is reported.
    return scan;
}

Status addWorktreeMasks(const Policy& policy, int worktree_fd, ChildPlan& plan) {
    const WorktreeMaskRules& rules = policy.fs.worktree_masks;
    if (rules.hide.empty() && rules.read_only.empty()) return okStatus();
    auto scan = scanWorktree(worktree_fd, rules);
    if (!scan) return scan.error().withContext("walk the worktree for hidden names");
    WorktreeMaskReport report;
    report.entries = scan->entries;
    report.unlistable = scan->unlistable;
    report.truncated_by = scan->truncated_by;
    report.hidden_count = scan->hidden.size();
    report.read_only_count = scan->read_only.size();
    if (!scan->truncated_by.empty())
        std::fprintf(
            stderr,
            "stockade: the worktree walk stopped at its %s bound after %llu entries; "
            "names beyond it are not hidden (raise filesystem.worktree.%s)\n",
            scan->truncated_by.c_str(), static_cast<unsigned long long>(scan->entries),
            scan->truncated_by == "path_length" ? "max_depth" : scan->truncated_by.c_str());

    if (!scan->hidden.empty()) {
        // The covers: an empty directory and an empty file in the sandbox's
        // own root, which nothing untrusted can reach while it is built.
        ns::addOp(plan.mounts, {.kind = ns::MountKind::Directory,
                                .target = kMaskDir,
                                .description = "create the directory that covers hidden names"});
        ns::addOp(plan.mounts, {.kind = ns::MountKind::File,
                                .target = kMaskFile,
                                .target_is_dir = false,
                                .description = "create the file that covers hidden names"});
    }
    // Walk order, shallowest first: a read-only directory is bound before a
    // cover beneath it, and the recursive bind carries nothing stale.
    auto add = [&](const MaskedName& m, bool hidden) {
        ns::MountOp op{.kind = hidden ? ns::MountKind::MaskBeneath : ns::MountKind::ReadOnlyBeneath,
                       .target = "repo/" + m.relative,
                       .data = hidden
                                   ? plan.mounts.staging + "/" + (m.is_dir ? kMaskDir : kMaskFile)
                                   : std::string(),
                       .anchor = "repo",
                       .target_is_dir = m.is_dir,
                       .verify_identity = true,
                       .expect_dev = static_cast<unsigned long>(m.dev),
                       .expect_ino = static_cast<unsigned long>(m.ino),
                       .description = (hidden ? "hide /repo/" : "make /repo/") +
                                      escapeForTerminal(m.relative) + (hidden ? "" : " read-only")};
        ns::addOp(plan.mounts, std::move(op));
        std::vector<std::string>& shown = hidden ? report.hidden : report.read_only;
        if (shown.size() < kReportedMaskNames) shown.push_back("/repo/" + m.relative);
        report.covered.push_back(m.relative);
    };
    // Read-only names and hidden ones in one walk order.
    size_t h = 0, r = 0;
    auto depth = [](const std::string& rel) { return std::count(rel.begin(), rel.end(), '/'); };
    while (h < scan->hidden.size() || r < scan->read_only.size()) {
        bool take_hidden = r == scan->read_only.size() ||
                           (h < scan->hidden.size() &&
                            depth(scan->hidden[h].relative) <= depth(scan->read_only[r].relative));
        if (take_hidden)
            add(scan->hidden[h++], true);
        else
            add(scan->read_only[r++], false);
    }
    std::sort(report.covered.begin(), report.covered.end());
    plan.masks = std::move(report);
    return okStatus();
}

void noteCreatedMaskedNames(const Policy& policy, WorktreeMaskReport& report) {
    if (!policy.fs.worktree_held) return;
    // Breadth first and bounded lower than the walk before the run: the
    // shallow names (a planted AGENTS.md) are checked, and a big worktree
    // does not pay for a second full walk.
    WorktreeMaskRules rules = policy.fs.worktree_masks;
    rules.max_entries = std::min<uint64_t>(rules.max_entries, kCreatedWalkEntries);
    auto scan = scanWorktree(policy.fs.worktree_held.get(), rules);
    if (!scan) return;
    for (const auto* list : {&scan->hidden, &scan->read_only})
        for (const MaskedName& m : *list) {
            if (std::binary_search(report.covered.begin(), report.covered.end(), m.relative))
                continue;
            ++report.created_count;
            if (report.created.size() < kReportedMaskNames)
                report.created.push_back("/repo/" + m.relative);
        }
    if (report.created_count)
        std::fprintf(stderr,
                     "stockade: the run created %llu hidden or read-only name(s) in the worktree "
                     "(the first: %s); later runs hide them too\n",
                     static_cast<unsigned long long>(report.created_count),
                     escapeForTerminal(report.created.front()).c_str());
}

}  // namespace stockade
