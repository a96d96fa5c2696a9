// The worktree walk (worktree_masks.h, scanWorktree): the directories listed
// depth by depth (worktree_listing.h), each name judged by the rules in walk
// order, and where a hidden or read-only name is a link, what it leads to
// in the worktree covered with it.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/text_safety.h"
#include "base/unique_fd.h"
#include "runtime/plan/walk_cache.h"
#include "runtime/plan/worktree_links.h"
#include "runtime/plan/worktree_listing.h"
#include "runtime/plan/worktree_masks.h"
#include "runtime/plan/worktree_walk_clock.h"
#include "runtime/policy/mask_patterns.h"

namespace stockade {

namespace {

// A directory whose path below the worktree is longer is not walked: its
// names could not be covered within PATH_MAX.
constexpr size_t kMaxWalkedPath = 3072;
// Links followed from one hidden or read-only name, as the kernel's own
// bound on one lookup (MAXSYMLINKS).
constexpr int kMaxLinksFollowed = 40;

struct PendingDir {
    std::string relative;
    uint32_t depth;           // of the directory's own entries: 1 for the top
    bool under_kept = false;  // in a read-only directory (DirListing::under_kept)
};

// What the directories waiting to be listed may hold of the supervisor's
// memory (their paths): a tree made to be wide and deep is refused, not
// walked into the supervisor's exhaustion.
constexpr size_t kMaxPendingBytes = size_t{64} << 20;

// A name beneath a hidden directory is covered with it (a hidden link's
// target may be a directory the walk went into), and a name is covered
// once: hidden where it is both hidden and read-only (a hidden link's
// target may be either, or a name the walk found itself).
void dropCoveredTwice(WorktreeScan& scan) {
    if (scan.hidden.empty()) return;
    std::vector<std::string> hidden_dirs;
    for (const MaskedName& m : scan.hidden)
        if (m.is_dir) hidden_dirs.push_back(m.relative + "/");
    auto beneathHidden = [&](const MaskedName& m) {
        return std::any_of(hidden_dirs.begin(), hidden_dirs.end(),
                           [&](const std::string& dir) { return m.relative.starts_with(dir); });
    };
    // The first of a name is kept, held in place if any of its copies is.
    std::unordered_map<std::string, size_t> first;
    for (size_t i = 0; i < scan.hidden.size(); ++i) {
        auto [at, fresh] = first.emplace(scan.hidden[i].relative, i);
        if (!fresh) scan.hidden[at->second].pin_above |= scan.hidden[i].pin_above;
    }
    std::unordered_set<std::string> covered;
    std::erase_if(scan.hidden, [&](const MaskedName& m) {
        return beneathHidden(m) || !covered.insert(m.relative).second;
    });
    std::erase_if(scan.read_only, [&](const MaskedName& m) {
        return beneathHidden(m) || covered.count(m.relative) > 0;
    });
}

// A directory whose links the walk judges after it is done: one kept
// read-only because a link leads there (`hide` false: the links in it keep
// their targets read-only, as in a directory a pattern keeps read-only),
// or one hidden (`hide`: the links in it have their targets hidden). A
// host tool writing `.aws/credentials` follows a link an earlier sandbox
// made there, as it follows a hidden name that is a link itself.
struct LinkDir {
    std::string relative;
    bool hide = false;
};

// The links in each directory of `dirs` and in every directory below them,
// each given to `cover` with the directory's `hide`, and so on for the
// directories that adds, each once. Each directory is listed as the walk
// lists one in a read-only directory (listDirectories, DirListing::
// under_kept: the same refusals of a directory of the caller's it may not
// list or one it may write into but not list, the same entry count, never
// from an earlier walk), and nothing of it but its links and directories
// is judged. Past max_depth below the directory, the walk is cut.
Status coverLinksBeneath(int root_fd, const ListingRules& walk_rules, uint32_t max_depth,
                         std::vector<LinkDir>& dirs,
                         const std::function<Status(const std::string&, bool, int)>& cover,
                         std::atomic<uint64_t>& seen, WorktreeScan& scan) {
    const ListingRules rules{
        walk_rules.hide, walk_rules.read_only,  walk_rules.show, walk_rules.writable, nullptr,
        nullptr,         walk_rules.max_entries};
    std::unordered_set<std::string> done;
    while (!dirs.empty()) {
        const bool hide = dirs.back().hide;
        std::vector<DirListing> level(1);
        level[0].relative = dirs.back().relative;
        dirs.pop_back();
        while (!level.empty()) {
            std::erase_if(level, [&](const DirListing& d) {
                return !done.insert(std::string(hide ? "h" : "r") + d.relative).second;
            });
            for (DirListing& d : level) d.under_kept = true;
            listDirectories(root_fd, rules, level, seen);
            std::vector<DirListing> next;
            size_t pending_bytes = 0;  // what `next` holds, bounded as in the walk
            for (const DirListing& dir : level) {
                switch (dir.outcome) {
                    case DirListing::Outcome::NotListed:
                        scan.truncated_by = "memory";
                        return okStatus();
                    case DirListing::Outcome::Incomplete:
                        scan.incomplete = dir.problem;
                        scan.incomplete_call = dir.problem_errno != 0;
                        scan.truncated_by = "unlistable";
                        return okStatus();
                    case DirListing::Outcome::Gone:
                        if (dir.vanished) ++scan.vanished;
                        continue;
                    case DirListing::Outcome::Unchanged:
                    case DirListing::Outcome::Listed:
                        break;
                }
                if (dir.over_bound) {
                    scan.truncated_by = "max_entries";
                    return okStatus();
                }
                for (const ListedEntry& e : dir.interesting) {
                    const std::string at = dir.relative + "/" + e.name;
                    if (e.stat_errno == ENOENT) {
                        ++scan.vanished;
                        continue;
                    }
                    if (e.stat_errno)
                        return Error::fromErrno("fstatat(\"/repo/" + escapeForTerminal(at) + "\")",
                                                e.stat_errno);
                    if (e.link_in_kept) {
                        if (Status s = cover(at, hide, 1); !s) return s;
                    } else if (e.is_dir) {
                        if (dir.depth >= max_depth || at.size() > kMaxWalkedPath) {
                            scan.truncated_by =
                                dir.depth >= max_depth ? "max_depth" : "path_length";
                            return okStatus();
                        }
                        pending_bytes += at.size();
                        if (pending_bytes > kMaxPendingBytes) {
                            scan.truncated_by = "memory";
                            return okStatus();
                        }
                        DirListing below;
                        below.relative = at;
                        below.depth = dir.depth + 1;
                        next.push_back(std::move(below));
                    }
                }
            }
            level = std::move(next);
        }
    }
    return okStatus();
}

}  // namespace

Result<WorktreeScan> scanWorktree(int worktree_fd, const WorktreeMaskRules& rules,
                                  const WalkedDirs* before, WalkedDirs* record,
                                  const WalkedDirs* kept, bool record_unchanged) {
    const MaskPatternSet hide(rules.hide), read_only(rules.read_only), show(rules.show),
        writable(rules.writable);
    WorktreeScan scan;
    UniqueFd root = openDirBeneath(worktree_fd, "");
    if (!root) return Error::fromErrno("open the worktree for its walk");
    // The clock's offset first, then the coarse clock: a step back between
    // them is one the check after the walk sees (scanWorktreeHeldStill).
    const WalkClock clock = readWalkClock();
    clock_gettime(CLOCK_REALTIME_COARSE, &scan.walk_start_coarse);
    const timespec walk_start = clock.now;
    scan.walk_start = clock.now;
    scan.clock_offset_ns = clock.offset_ns;
    std::vector<PendingDir> level{{"", 1}};
    size_t pending_bytes = 0;
    // A cut ends the walk: what lies beyond it was not examined, and the
    // caller refuses to run on a partial cover (addWorktreeMasks).
    auto cut = [&](const char* bound) {
        if (scan.truncated_by.empty()) scan.truncated_by = bound;
    };
    auto add = [&](std::vector<MaskedName>& list, MaskedName name) -> Status {
        list.push_back(std::move(name));
        if (scan.hidden.size() + scan.read_only.size() > kMaxMaskedNames)
            return Error::message("the worktree holds more than " +
                                  std::to_string(kMaxMaskedNames) +
                                  " names to hide or keep read-only (the latest: " +
                                  escapeForTerminal(list.back().relative) +
                                  "); refusing rather than leave some uncovered");
        return okStatus();
    };
    // The worktree as the host names it: a link may name a place in it by
    // that path (worktree_links.h).
    const std::string host_path = heldDirectoryPath(root.get());
    std::unordered_set<std::string> kept_names, hidden_targets;
    // Directories hidden, and kept read-only because a link leads to them:
    // the links in them are judged once the walk is done (coverLinksBeneath).
    std::vector<LinkDir> link_dirs;
    // What the link at `relative` leads to in the worktree, kept read-only
    // (`hide` false) or hidden with it (worktree_links.h: a writer and a
    // host reader both follow it). A target that is a link is covered as
    // itself and followed in turn, up to the kernel's own bound on links
    // in one lookup. A hidden target's directories are held in place
    // (MaskedName::pin_above): it is hidden for the link, not for a name a
    // rename would keep.
    std::function<Status(const std::string&, bool, int)> coverTarget =
        [&](const std::string& relative, bool hide, int links) -> Status {
        const std::string shown = "/repo/" + escapeForTerminal(relative);
        const std::string what = hide ? " is hidden" : " is kept read-only";
        const std::string fix = std::string(": refusing rather than leave it ") +
                                (hide ? "readable" : "writable") + " (" +
                                (hide ? "--show" : "--writable") +
                                " the name, or link it by a path inside the worktree)";
        if (links > kMaxLinksFollowed)
            return Error::message(shown + " is one of more than " +
                                  std::to_string(kMaxLinksFollowed) +
                                  " links in a row from a hidden or read-only name" + fix);
        auto leads = linkLeadsOf(root.get(), host_path, relative, rules.mounted, hide);
        if (!leads) return Error::message(shown + what + " but " + leads.error().describe() + fix);
        // None: out of the worktree, and of every place the sandbox reaches.
        for (const LinkLead& lead : *leads) {
            if (lead.kind == LinkLead::Kind::Missing) {
                // A write through a read-only link would make it; a hidden
                // link's cover is not written through, and a file made
                // there later is covered by the run that finds it.
                if (hide) continue;
                return Error::message(shown + what + " but links to /repo/" +
                                      escapeForTerminal(lead.relative) +
                                      ", which does not exist (a write through the link would "
                                      "make it)" +
                                      fix);
            }
            if (lead.relative.empty())
                return Error::message(shown + what + " but links to /repo itself" + fix);
            const struct stat& at = lead.st;
            if (!(hide ? hidden_targets : kept_names).insert(lead.relative).second) continue;
            if (Status s = add(hide ? scan.hidden : scan.read_only,
                               {lead.relative, S_ISDIR(at.st_mode), at.st_dev, at.st_ino, hide});
                !s)
                return s;
            if (S_ISDIR(at.st_mode)) link_dirs.push_back({lead.relative, hide});
            // Another name of the same file is not covered with it: said.
            if (!S_ISDIR(at.st_mode) && at.st_nlink > 1) {
                ++scan.linked_count;
                if (scan.linked.size() < kReportedMaskNames)
                    scan.linked.push_back("/repo/" + lead.relative);
            }
            if (S_ISLNK(at.st_mode))
                if (Status s = coverTarget(lead.relative, hide, links + 1); !s) return s;
        }
        return okStatus();
    };
    // A read-only name, and where it is a link, what it leads to.
    auto keepReadOnly = [&](const std::string& relative, const struct stat& st) -> Status {
        if (!kept_names.insert(relative).second) return okStatus();
        if (Status s = add(scan.read_only, {relative, S_ISDIR(st.st_mode), st.st_dev, st.st_ino});
            !s)
            return s;
        if (!S_ISLNK(st.st_mode)) return okStatus();
        return coverTarget(relative, false, 1);
    };
    // Depth by depth: the directories of one depth are listed together
    // (listDirectories, on several threads where there are many), then
    // judged here one by one in the order a single queue would take them.
    const ListingRules listing_rules{hide, read_only,        show, writable, before,
                                     kept, rules.max_entries};
    std::atomic<uint64_t> seen{0};
    while (!level.empty() && scan.truncated_by.empty()) {
        std::vector<DirListing> listed(level.size());
        for (size_t i = 0; i < level.size(); ++i) {
            listed[i].relative = std::move(level[i].relative);
            listed[i].depth = level[i].depth;
            listed[i].under_kept = level[i].under_kept;
        }
        level.clear();
        pending_bytes = 0;
        listDirectories(root.get(), listing_rules, listed, seen);
        for (DirListing& dir : listed) {
            if (!scan.truncated_by.empty()) break;
            switch (dir.outcome) {
                case DirListing::Outcome::NotListed:
                    scan.incomplete = "/repo/" + escapeForTerminal(dir.relative) +
                                      " was not listed (out of memory)";
                    cut("memory");
                    continue;
                case DirListing::Outcome::Incomplete:
                    scan.incomplete = dir.problem;
                    scan.incomplete_call = dir.problem_errno != 0;
                    cut(dir.case_folding ? "case_folding" : "unlistable");
                    continue;
                case DirListing::Outcome::Gone:
                    if (dir.vanished)
                        ++scan.vanished;
                    else
                        ++scan.unlistable;
                    scan.visited_whole = false;
                    continue;
                case DirListing::Outcome::Unchanged:  // judged as read: the names kept
                case DirListing::Outcome::Listed:
                    break;
            }
            scan.entries += dir.entries;
            if (scan.entries > rules.max_entries || dir.over_bound) {
                scan.entries = rules.max_entries;
                cut("max_entries");
                break;
            }
            const bool settled = dir.have_st && settledBefore(dir.st.st_ctim, walk_start);
            if (dir.outcome == DirListing::Outcome::Unchanged)
                ++scan.reused;
            else if (settled)
                ++scan.listed_settled;
            // A node's address outlives the map's rehashing: `visited`
            // keeps it, and `walked` names the new one for its names.
            WalkedDir* walked = nullptr;
            if (record && dir.outcome == DirListing::Outcome::Unchanged) {
                if (record_unchanged) {
                    // Seen unchanged by this walk, so judged by its clock:
                    // recorded with the earlier walk's `settled`, it would be
                    // kept under this walk's clock offset, and small steps
                    // back, each within the jitter, could add up run after
                    // run to more than the margin.
                    WalkedDir again = dir.unchanged->second;
                    again.settled = settled;
                    const auto at = record->insert_or_assign(dir.relative, std::move(again)).first;
                    scan.visited.push_back(&*at);
                } else {
                    scan.visited.push_back(dir.unchanged);
                }
            } else if (record && dir.have_st) {
                const auto at = record
                                    ->insert_or_assign(dir.relative, WalkedDir{dir.st.st_dev,
                                                                               dir.st.st_ino,
                                                                               dir.st.st_ctim,
                                                                               settled,
                                                                               dir.entries,
                                                                               {},
                                                                               dir.btime,
                                                                               dir.has_btime})
                                    .first;
                walked = &at->second;
                scan.visited.push_back(&*at);
            } else {
                scan.visited_whole = false;
                if (!dir.have_st) ++scan.unstated;
            }
            for (ListedEntry& e : dir.interesting) {
                const std::string relative =
                    dir.relative.empty() ? e.name : dir.relative + "/" + e.name;
                // A name of unknown type that is neither matched nor a
                // directory tells a later walk nothing.
                if (walked && (e.hidden || e.kept || e.is_dir || e.link_in_kept || e.on_way))
                    walked->names.push_back(
                        {e.name, e.hidden, e.kept, e.is_dir, e.link_in_kept, e.on_way != nullptr});
                if (e.examined) {
                    if (e.stat_errno) {
                        // Gone since it was read: nothing to cover or walk.
                        // A matching one gone is a tree that moved while it
                        // was walked: the check after the walk walks again.
                        if (e.stat_errno == ENOENT) {
                            if (e.hidden || e.kept) ++scan.vanished;
                            continue;
                        }
                        scan.incomplete =
                            "/repo/" + escapeForTerminal(relative) +
                            " matches but cannot be examined: " + errnoName(e.stat_errno);
                        cut("unexaminable");
                        break;
                    }
                    // A link where a pattern names a directory: what the
                    // host writes there later (the operator adding
                    // .github/workflows/ci.yml to a .github an earlier run
                    // made a link) lands where the pattern does not reach,
                    // writable or shown from then on (a red team's,
                    // 2026-12-07). Refused, naming it, never followed.
                    if (e.on_way) {
                        scan.incomplete = "/repo/" + escapeForTerminal(relative) +
                                          " is a symbolic link where the pattern \"" +
                                          escapeForTerminal(*e.on_way) +
                                          "\" names a directory: what is written through it "
                                          "would land where the pattern does not reach";
                        cut("link_on_pattern");
                        break;
                    }
                    if (e.hidden) {
                        if (Status s =
                                add(scan.hidden, {relative, e.is_dir, e.st.st_dev, e.st.st_ino});
                            !s)
                            return s.error();
                        if (S_ISLNK(e.st.st_mode))
                            if (Status s = coverTarget(relative, true, 1); !s) return s.error();
                        if (S_ISDIR(e.st.st_mode)) link_dirs.push_back({relative, true});
                    }
                    if (e.kept)
                        if (Status s = keepReadOnly(relative, e.st); !s) return s.error();
                    if (e.link_in_kept && !e.hidden && !e.kept)
                        if (Status s = coverTarget(relative, false, 1); !s) return s.error();
                    // Another name of the same file is not covered with it.
                    if ((e.hidden || e.kept) && !e.is_dir && e.st.st_nlink > 1) {
                        ++scan.linked_count;
                        if (scan.linked.size() < kReportedMaskNames)
                            scan.linked.push_back("/repo/" + relative);
                    }
                }
                if (!e.is_dir || e.hidden) continue;
                if (dir.depth >= rules.max_depth) {
                    cut("max_depth");
                    break;
                }
                if (relative.size() > kMaxWalkedPath) {
                    cut("path_length");
                    break;
                }
                pending_bytes += relative.size();
                if (pending_bytes > kMaxPendingBytes) {
                    cut("memory");
                    break;
                }
                level.push_back({relative, dir.depth + 1, dir.under_kept || e.kept});
            }
        }
    }
    if (scan.truncated_by.empty())
        if (Status s = coverLinksBeneath(root.get(), listing_rules, rules.max_depth, link_dirs,
                                         coverTarget, seen, scan);
            !s)
            return s.error();
    dropCoveredTwice(scan);
    return scan;
}

}  // namespace stockade
