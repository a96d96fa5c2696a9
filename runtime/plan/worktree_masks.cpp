#include "runtime/plan/worktree_masks.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <malloc.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "base/text_safety.h"
#include "base/unique_fd.h"
#include "namespaces/mount_plan.h"
#include "namespaces/syscalls.h"
#include "runtime/child/child_plan.h"
#include "runtime/plan/walk_cache.h"
#include "runtime/plan/worktree_listing.h"
#include "runtime/policy/mask_patterns.h"

namespace stockade {

namespace {

// A directory whose path below the worktree is longer is not walked: its
// names could not be covered within PATH_MAX.
constexpr size_t kMaxWalkedPath = 3072;
// Links followed from one hidden or read-only name, as the kernel's own
// bound on one lookup (MAXSYMLINKS).
constexpr int kMaxLinksFollowed = 40;
constexpr const char* kMaskDir = ".stockade-mask-dir";
constexpr const char* kMaskFile = ".stockade-mask-file";

// "a/b/../c" -> "a/c"; nullopt when it climbs above the worktree.
std::optional<std::string> lexicallyBeneath(const std::string& path) {
    std::vector<std::string> parts;
    for (const std::string& c : pathComponents(path)) {
        if (c.empty() || c == ".") continue;
        if (c == "..") {
            if (parts.empty()) return std::nullopt;
            parts.pop_back();
        } else {
            parts.push_back(c);
        }
    }
    std::string out;
    for (const std::string& c : parts) out += (out.empty() ? "" : "/") + c;
    return out;
}

struct PendingDir {
    std::string relative;
    uint32_t depth;           // of the directory's own entries: 1 for the top
    bool under_kept = false;  // in a read-only directory (DirListing::under_kept)
};

// "/a/b/../c" -> "/a/c", from the host's root ("/.." is "/").
std::string lexicallyAbsolute(const std::string& path) {
    std::vector<std::string> parts;
    for (const std::string& c : pathComponents(path)) {
        if (c.empty() || c == ".") continue;
        if (c == "..") {
            if (!parts.empty()) parts.pop_back();
        } else {
            parts.push_back(c);
        }
    }
    std::string out;
    for (const std::string& c : parts) out += "/" + c;
    return out.empty() ? "/" : out;
}

// The path the kernel gives the held directory (its d_path), "" when it
// has none a link could name (deleted, or outside the caller's root).
std::string heldDirectoryPath(int fd) {
    char path[PATH_MAX];
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = readlink(link.c_str(), path, sizeof path - 1);
    if (n <= 0 || path[0] != '/') return "";
    const std::string out(path, static_cast<size_t>(n));
    if (out.ends_with(" (deleted)")) return "";
    return out;
}

// What the directories waiting to be listed may hold of the supervisor's
// memory (their paths): a tree made to be wide and deep is refused, not
// walked into the supervisor's exhaustion.
constexpr size_t kMaxPendingBytes = size_t{64} << 20;

// CLOCK_REALTIME - CLOCK_BOOTTIME is read with two calls: a step back below
// this is their jitter, not the clock's (as walk_cache.cpp judges it).
constexpr int64_t kClockJitterNs = 5'000'000;

// How far before the walk a directory's ctime must be for an unchanged
// ctime to mean unchanged entries. A filesystem stamps a change with its
// clock's coarse time (a jiffy; a second on some), so a change in the same
// tick as the walk's fstat could keep the ctime the walk saw; a ctime older
// than the walk by more than the coarsest granularity (and a leap second)
// cannot be given again by a later change. Where the kernel keeps multigrain
// timestamps (Linux 6.13+: ext4, XFS, Btrfs, tmpfs) the fstat itself makes
// the next change fine-grained; this rule does not rely on it.
constexpr time_t kSettledSeconds = 2;

bool settledBefore(const timespec& ctime, const timespec& walk_start) {
    return ctime.tv_sec + kSettledSeconds < walk_start.tv_sec;
}

// Test hooks: with `variable`=<ms> in stockade's own environment, sleeps that
// long. STOCKADE_TEST_PAUSE_BEFORE_WALK_CHECK: after each walk, before the
// check that the tree held still, so a test can move things as a writer
// racing the walk would; STOCKADE_TEST_PAUSE_AFTER_WALK: after that check,
// before the plan's mounts, so a test can swap what the walk judged before
// the child covers it. They only delay (like STOCKADE_TEST_PAUSE_AFTER_OPEN,
// base/host_path.h).
void pauseForTests(const char* variable) {
    const char* value = getenv(variable);
    if (!value || !*value) return;
    const long ms = strtol(value, nullptr, 10);
    if (ms <= 0 || ms > 60000) return;
    timespec ts{ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

// The top-level .git itself, or a name in it.
bool inTopGit(const MaskedName& m) {
    return m.relative == ".git" || m.relative.starts_with(".git/");
}

bool byPath(const MaskedName& a, const MaskedName& b) {
    return a.relative < b.relative;
}

// The directories above the read-only names, each made a mount point
// (MountKind::PinBeneath), sorted shallowest first. rename(2) and rmdir(2)
// refuse a mount point: without the pins, a sandbox could move a directory
// aside with the read-only name on it (`mv .github old`) and make the name
// anew where it was, for the next agent or CI run to find the sandbox's
// .github/workflows, AGENTS.md or nested .git at the operator's path. Not
// pinned: the worktree's top (a mount), a directory covered itself (a
// mount, and nothing beneath a read-only one moves), the read-only
// top-level .git. The directories above hidden names only where
// `pin_hidden`: a hide or show pattern names directories (`config/
// master.key`, `/repo/deploy/*.key`, `--show examples/.env`), so that a
// rename above a secret (`mv config conf1g`, `mv backend examples`) would
// take it out of its pattern, or into a shown one, for the next run. With
// bare names only, the secret moves with its cover and is still hidden
// wherever it lands, and a hidden name made anew where one was is reported
// (noteCreatedMaskedNames), as any other file the sandbox writes could be.
// A pin is a mount of its own, so a rename(2) across it fails with EXDEV
// (threat-model.md). Each is the directory the walk judged, by device and
// inode, as the covers.
Result<std::vector<ns::MountOp>> pinsAbove(
    int worktree_fd, const std::vector<std::pair<const MaskedName*, bool>>& covered,
    bool top_git_read_only, bool pin_hidden, const WorktreeMaskReport& report) {
    std::unordered_set<std::string> names;
    for (const auto& [name, hidden] : covered) names.insert(name->relative);
    std::vector<std::string> dirs;
    std::unordered_set<std::string> seen;
    for (const auto& [name, hidden] : covered) {
        if (hidden && !pin_hidden) continue;
        const std::string& relative = name->relative;
        for (size_t slash = relative.find('/'); slash != std::string::npos;
             slash = relative.find('/', slash + 1)) {
            std::string above = relative.substr(0, slash);
            if (names.count(above) || (top_git_read_only && above == ".git")) break;
            if (seen.insert(above).second) dirs.push_back(std::move(above));
        }
    }
    if (dirs.size() > kMaxPinnedDirs)
        return Error::message("the names of the worktree held in place lie in more than " +
                              std::to_string(kMaxPinnedDirs) +
                              " directories, each held in place by a mount; refusing rather "
                              "than leave some movable");
    auto depth = [](const std::string& rel) { return std::count(rel.begin(), rel.end(), '/'); };
    std::stable_sort(dirs.begin(), dirs.end(),
                     [&](const auto& a, const auto& b) { return depth(a) < depth(b); });
    std::vector<ns::MountOp> pins;
    pins.reserve(dirs.size());
    for (const std::string& dir : dirs) {
        // As the walk judged it (its record, or the kept walk it reused);
        // stated again only where neither holds it.
        struct stat st {};
        const WalkedDir* judged = nullptr;
        for (const WalkedDirs* walk : {report.walked.get(), report.kept.get()})
            if (walk && !judged)
                if (auto at = walk->find(dir); at != walk->end()) judged = &at->second;
        if (judged) {
            st.st_dev = judged->dev;
            st.st_ino = judged->ino;
        } else {
            UniqueFd fd = openBeneathWorktree(worktree_fd, dir, O_PATH | O_DIRECTORY | O_NOFOLLOW,
                                              RESOLVE_NO_SYMLINKS);
            if (!fd || fstat(fd.get(), &st) < 0)
                return Error::fromErrno("open /repo/" + escapeForTerminal(dir) +
                                        " to hold it in place");
        }
        pins.push_back({.kind = ns::MountKind::PinBeneath,
                        .target = "repo/" + dir,
                        .anchor = "repo",
                        .target_is_dir = true,
                        .verify_identity = true,
                        .expect_dev = static_cast<unsigned long>(st.st_dev),
                        .expect_ino = static_cast<unsigned long>(st.st_ino),
                        .description = "hold /repo/" + escapeForTerminal(dir) + " in place"});
    }
    return pins;
}

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
    std::unordered_set<std::string> covered;
    std::erase_if(scan.hidden, [&](const MaskedName& m) {
        return beneathHidden(m) || !covered.insert(m.relative).second;
    });
    std::erase_if(scan.read_only, [&](const MaskedName& m) {
        return beneathHidden(m) || covered.count(m.relative) > 0;
    });
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
    // that path (absolute, or relative and climbing out of the worktree and
    // back in), and a host reader following it lands there.
    const std::string host_path = heldDirectoryPath(root.get());
    // Where the link at `relative` leads in the worktree, read as the text
    // it holds (never followed): the path below the top ("" for the top
    // itself), or nullopt when it leads out of it. Inside the sandbox
    // "/repo/..." is the worktree; on the host, its own path is. A path
    // out of the worktree that is itself a link back into it is not
    // followed (threat-model.md).
    auto linkTarget = [&](const std::string& relative) -> Result<std::optional<std::string>> {
        char target[PATH_MAX];
        const ssize_t n = readlinkat(root.get(), relative.c_str(), target, sizeof target - 1);
        if (n < 0)
            return Error::fromErrno("readlink(\"/repo/" + escapeForTerminal(relative) + "\")");
        const std::string link(target, static_cast<size_t>(n));
        if (link == "/repo" || link.starts_with(kMaskRepoPrefix))
            return lexicallyBeneath(link.size() > 5 ? link.substr(6) : "");
        const size_t slash = relative.rfind('/');
        const std::string from = slash == std::string::npos ? "" : relative.substr(0, slash);
        if (!link.starts_with("/"))
            if (auto inside = lexicallyBeneath(from.empty() ? link : from + "/" + link))
                return inside;
        if (host_path.empty()) return std::optional<std::string>();
        const std::string absolute = lexicallyAbsolute(
            link.starts_with("/") ? link
                                  : host_path + "/" + (from.empty() ? "" : from + "/") + link);
        if (absolute == host_path) return std::optional<std::string>("");
        if (host_path == "/") return std::optional<std::string>(absolute.substr(1));
        if (absolute.starts_with(host_path + "/"))
            return std::optional<std::string>(absolute.substr(host_path.size() + 1));
        return std::optional<std::string>();
    };
    std::unordered_set<std::string> kept_names, hidden_targets;
    // What the link at `relative` leads to in the worktree, kept read-only
    // (`hide` false) or hidden with it: a write follows a link, and so does
    // a host reader (an agent reading AGENTS.md, the host's git running a
    // hook linked from .git/hooks, a tool writing the operator's secret to
    // a .env an earlier sandbox made a link).
    // A target that is a link is covered as itself and followed in turn,
    // up to the kernel's own bound on links in one lookup.
    std::function<Status(const std::string&, bool, int)> coverTarget =
        [&](const std::string& relative, bool hide, int links) -> Status {
        if (links > kMaxLinksFollowed)
            return Error::message("/repo/" + escapeForTerminal(relative) + " is one of more than " +
                                  std::to_string(kMaxLinksFollowed) +
                                  " links in a row from a hidden or read-only name: refusing "
                                  "rather than leave where they lead uncovered");
        auto inside = linkTarget(relative);
        if (!inside) return inside.error();
        if (!*inside) return okStatus();  // out of the worktree: the sandbox cannot reach it
        const std::string shown = "/repo/" + escapeForTerminal(relative);
        const char* what = hide ? " is hidden" : " is kept read-only";
        if ((*inside)->empty()) return Error::message(shown + what + " but links to /repo itself");
        UniqueFd to =
            openBeneathWorktree(root.get(), **inside, O_PATH | O_NOFOLLOW, RESOLVE_NO_SYMLINKS);
        struct stat at;
        if (!to || fstat(to.get(), &at) < 0) {
            // Nothing there: a write through a read-only link would make
            // it; a hidden link's cover is not written through, and a file
            // made there later is covered by the run that finds it.
            if (hide && errno == ENOENT) return okStatus();
            return Error::message(
                shown + what + " but links to /repo/" + escapeForTerminal(**inside) +
                (errno == ENOENT ? ", which does not exist (a write through the link would make it)"
                                 : ", which is reached only through another link") +
                ": refusing rather than leave it " + (hide ? "readable" : "writable") + " (" +
                (hide ? "--show" : "--writable") + " the name, or link it to a file)");
        }
        if (!(hide ? hidden_targets : kept_names).insert(**inside).second) return okStatus();
        if (Status s = add(hide ? scan.hidden : scan.read_only,
                           {**inside, S_ISDIR(at.st_mode), at.st_dev, at.st_ino});
            !s)
            return s;
        if (!S_ISLNK(at.st_mode)) return okStatus();
        return coverTarget(**inside, hide, links + 1);
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
                    cut("unlistable");
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
            // A node's address outlives the map's rehashing.
            const bool settled = dir.have_st && settledBefore(dir.st.st_ctim, walk_start);
            if (dir.outcome == DirListing::Outcome::Unchanged)
                ++scan.reused;
            else if (settled)
                ++scan.listed_settled;
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
                if (walked && (e.hidden || e.kept || e.is_dir || e.link_in_kept))
                    walked->names.push_back({e.name, e.hidden, e.kept, e.is_dir, e.link_in_kept});
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
                    if (e.hidden) {
                        if (Status s =
                                add(scan.hidden, {relative, e.is_dir, e.st.st_dev, e.st.st_ino});
                            !s)
                            return s.error();
                        if (S_ISLNK(e.st.st_mode))
                            if (Status s = coverTarget(relative, true, 1); !s) return s.error();
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
    dropCoveredTwice(scan);
    return scan;
}

namespace {

// The rule each device of the walk's directories is judged by: the
// worktree's own, and any mounted inside it (listOne walks into mounts), each
// looked at once through a directory of it opened beneath the worktree.
SteadyRule steadyRuleFor(int worktree_fd, const WorktreeScan& scan) {
    SteadyRule rule;
    rule.coarse_start = scan.walk_start_coarse;
    for (VisitedDir d : scan.visited) {
        const dev_t dev = d->second.dev;
        if (std::any_of(rule.devices.begin(), rule.devices.end(),
                        [&](const DeviceRule& r) { return r.dev == dev; }))
            continue;
        const UniqueFd fd = openBeneathWorktree(
            worktree_fd, d->first, O_PATH | O_DIRECTORY | O_NOFOLLOW, RESOLVE_NO_SYMLINKS);
        // Not opened (gone, swapped): a device judged by the clock, which
        // the restat of that very directory then fails.
        const bool local = !fd || worktreeCtimeIsLocal(fd.get());
        rule.devices.push_back(
            {dev, local, fd && local && worktreeCtimeIsExactAfterQuery(fd.get())});
    }
    return rule;
}

// Waits (ppoll, not a sleep a test's hook could be taken for) until the
// coarse clock has passed the ctime of every directory `rule` judged by it,
// and `seen` (the coarse clock when the check failed: a change it met has no
// later ctime), so that the next walk can trust them if they hold still; at
// most 2 s. A ctime further ahead than that (a clock stepped back) is not
// waited for: the walks go round and the run is refused.
void waitPastJudgedCtimes(const WorktreeScan& scan, const SteadyRule& rule, timespec seen) {
    auto later = [](const timespec& a, const timespec& b) {
        return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
    };
    timespec latest = seen;
    bool seconds = false;
    for (VisitedDir d : scan.visited) {
        const WalkedDir& was = d->second;
        const auto dev = std::find_if(rule.devices.begin(), rule.devices.end(),
                                      [&](const DeviceRule& r) { return r.dev == was.dev; });
        if (dev == rule.devices.end() || !dev->local || (dev->exact && was.has_btime)) continue;
        if (!was.has_btime) seconds = true;
        if (later(was.ctime, latest)) latest = was.ctime;
    }
    // Stamped in whole seconds, the next walk must begin in a later second.
    if (seconds) latest.tv_nsec = 999'999'999;
    timespec tick{0, 1'000'000};
    clock_getres(CLOCK_REALTIME_COARSE, &tick);
    timespec deadline{};
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += 2;
    while (true) {
        timespec now{}, mono{};
        clock_gettime(CLOCK_REALTIME_COARSE, &now);
        clock_gettime(CLOCK_MONOTONIC, &mono);
        if (later(now, latest) || later(mono, deadline)) return;
        if (latest.tv_sec > now.tv_sec + 2) return;  // not to be waited for
        timespec wait = tick;
        ppoll(nullptr, 0, &wait, nullptr);
    }
}

}  // namespace

Result<WorktreeScan> scanWorktreeHeldStill(int worktree_fd, const WorktreeMaskRules& rules,
                                           const WalkedDirs* before, WalkedDirs* record,
                                           bool record_unchanged) {
    struct stat top;
    if (fstat(worktree_fd, &top) < 0) return Error::fromErrno("fstat the worktree");
    std::string changed;
    for (int attempt = 1;; ++attempt) {
        // The record is this walk's alone: what an earlier one judged of a
        // tree that moved is not carried.
        if (record) record->clear();
        auto scan = scanWorktree(worktree_fd, rules, before, record, nullptr, record_unchanged);
        if (!scan) return scan;
        // A test's writer moves things here, as one racing the walk would.
        pauseForTests("STOCKADE_TEST_PAUSE_BEFORE_WALK_CHECK");
        // A walk cut short is refused anyway; without a record nothing was
        // noted to check (every caller gives one).
        if (!scan->truncated_by.empty() || !record) return scan;
        const SteadyRule steady = steadyRuleFor(worktree_fd, *scan);
        const bool judged = std::any_of(steady.devices.begin(), steady.devices.end(),
                                        [](const DeviceRule& r) { return r.local; });
        // A directory or matching name gone while it was walked is a tree
        // that moved, whatever its ctimes are worth. Where no directory's
        // ctime is the local kernel's (NFS, FUSE, overlayfs...) nothing else
        // can be judged: the walk stands as it is.
        std::string where;
        if (scan->vanished > 0) {
            where = "a directory or a matching name vanished while it was walked";
        } else if (!judged) {
            return scan;
        } else if (scan->unstated > 0) {
            where = "a directory could not be stated";
        } else {
            changed.clear();
            if (!allUnchanged(worktree_fd, top.st_dev, scan->visited, &steady, &changed))
                where = "the last: /repo/" + escapeForTerminal(changed);
            // Read after the restat: a clock stepped back during the walk or
            // the check could give a new ctime an old one's value.
            else if (walkClockOffsetNs() < scan->clock_offset_ns - kClockJitterNs)
                where = "the wall clock stepped back";
        }
        if (where.empty()) return scan;
        timespec seen{};
        clock_gettime(CLOCK_REALTIME_COARSE, &seen);
        if (attempt == kWalkAttempts) {
            return Error::message(
                "the worktree kept changing while it was walked for the names to hide or keep "
                "read-only (" +
                std::to_string(kWalkAttempts) + " walks; " + where +
                "): another process is writing it; run again when it holds still");
        }
        // A directory changed in the tick (or, stamped in whole seconds,
        // the second) the walk began in has a ctime that clock has not yet
        // passed: the next walk, once it has, can judge it.
        waitPastJudgedCtimes(*scan, steady, seen);
    }
}

Status addWorktreeMasks(const Policy& policy, int worktree_fd, bool top_git_read_only,
                        ChildPlan& plan, std::optional<WorktreeMaskReport>& found) {
    const WorktreeMaskRules& rules = policy.fs.worktree_masks;
    if (rules.hide.empty() && rules.read_only.empty()) return okStatus();
    // A big tree's walk allocates and frees a depth's listings, the kept
    // walk and its file, several hundred KiB each: from fresh mmap(2) chunks
    // and a trimmed heap, every page of them is faulted in anew each time,
    // and a page fault is dear under a hypervisor (perf: the largest item of
    // a warm walk's cost). Kept in the heap, freed pages are used again.
    // Bounded: at most 16 MiB of freed memory stays in each malloc arena
    // (the walk's threads have their own). M_MMAP_THRESHOLD set by hand also
    // ends glibc's own adjustment of it for the rest of the process.
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    mallopt(M_TRIM_THRESHOLD, 16 << 20);
    auto walked = std::make_shared<WalkedDirs>();
    // The walk kept from an earlier run, if one may be trusted: the
    // directories it lists unchanged are not read (walk_cache.h).
    const WalkCacheKey key{policy.fs.state_dir ? policy.fs.state_dir->get() : -1, worktree_fd,
                           &rules};
    // Read before the kept walk is judged: a step back after it is one the
    // check after the run must see (the larger of this and the walk's own).
    const int64_t clock_offset_ns = walkClockOffsetNs();
    std::shared_ptr<const WalkedDirs> kept = loadWalkCache(key);
    // Only what is read is recorded: the walk after the run looks in the
    // kept walk for the rest.
    auto scan = scanWorktreeHeldStill(worktree_fd, rules, kept.get(), walked.get(), !kept);
    if (!scan) return scan.error().withContext("walk the worktree for hidden names");
    // Past the check: a test's swap here is one the child's checks must meet.
    pauseForTests("STOCKADE_TEST_PAUSE_AFTER_WALK");
    WorktreeMaskReport report;
    report.top_git_protected = top_git_read_only;
    // The top-level .git is read-only as a whole (addGitProtection): its
    // read-only names need no mount of their own. Its hidden ones do: a
    // sandbox that could once write there (none was there, it made one) may
    // have moved the worktree's secrets into it.
    if (top_git_read_only) std::erase_if(scan->read_only, inTopGit);
    report.walked = std::move(walked);
    if (kept) report.kept = std::move(kept);
    if (scan->visited_whole) report.visited = std::move(scan->visited);
    report.walk_start = scan->walk_start;
    report.clock_offset_ns = std::max(clock_offset_ns, scan->clock_offset_ns);
    report.listed_settled = scan->listed_settled;
    report.reused = scan->reused;
    report.entries = scan->entries;
    report.unlistable = scan->unlistable;
    report.truncated_by = scan->truncated_by;
    report.hidden_count = scan->hidden.size();
    report.read_only_count = scan->read_only.size();
    // A walk that stopped short covers only what it saw, and what it did not
    // see is what a sandbox before this one could have moved out of its
    // sight (deeper than max_depth, into a directory closed to its owner,
    // behind a flood of entries): the run is refused, never narrowed.
    if (!scan->truncated_by.empty()) {
        // A call that failed for want of an fd or memory says nothing of
        // the tree: named as the call, like every other refusal (issue 15).
        if (scan->incomplete_call)
            return Error::message("walk the worktree for the names to hide or keep read-only: " +
                                  scan->incomplete);
        const std::string& bound = scan->truncated_by;
        std::string why = !scan->incomplete.empty()
                              ? scan->incomplete
                              : "it stopped at its " + bound + " bound after " +
                                    std::to_string(scan->entries) + " entries";
        std::string fix = bound == "max_entries" || bound == "max_depth"
                              ? "raise filesystem.worktree." + bound + " in the profile"
                          : bound == "path_length" ? "shorten the worktree's deepest paths"
                          : bound == "memory" ? "the tree is too wide and deep to walk; trim it"
                                              : "make it listable, or remove it";
        return Error::message(
            "the worktree could not be walked whole for the names to hide or "
            "keep read-only: " +
            why + " (" + fix + ")");
    }
    if (scan->linked_count)
        std::fprintf(stderr,
                     "stockade: %llu hidden or read-only file(s) have other names in the worktree "
                     "(the first: %s): hard links are not covered with them\n",
                     static_cast<unsigned long long>(scan->linked_count),
                     escapeForTerminal(scan->linked.front()).c_str());
    report.linked_count = scan->linked_count;
    report.linked = std::move(scan->linked);

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
        report.covered.push_back(m);
    };
    // Read-only names and hidden ones in one order, shallowest first (a link's
    // target comes after the link in the walk, wherever it is).
    std::vector<std::pair<const MaskedName*, bool>> ordered;
    for (const MaskedName& m : scan->hidden) ordered.push_back({&m, true});
    for (const MaskedName& m : scan->read_only) ordered.push_back({&m, false});
    auto depth = [](const std::string& rel) { return std::count(rel.begin(), rel.end(), '/'); };
    std::stable_sort(ordered.begin(), ordered.end(), [&](const auto& a, const auto& b) {
        return depth(a.first->relative) < depth(b.first->relative);
    });
    const bool pin_hidden = MaskPatternSet(rules.hide).namesDirectories() ||
                            MaskPatternSet(rules.show).namesDirectories();
    auto pins = pinsAbove(worktree_fd, ordered, top_git_read_only, pin_hidden, report);
    if (!pins) return pins.error();
    // Each pin before the names beneath it: its target ("repo/" + the
    // directory) is no deeper than they are.
    size_t next_pin = 0;
    for (const auto& [name, hidden] : ordered) {
        for (; next_pin < pins->size() && depth((*pins)[next_pin].target) <= depth(name->relative);
             ++next_pin)
            ns::addOp(plan.mounts, std::move((*pins)[next_pin]));
        add(*name, hidden);
    }
    std::sort(report.covered.begin(), report.covered.end(), byPath);
    found = std::move(report);
    return okStatus();
}

void noteCreatedMaskedNames(const Policy& policy, WorktreeMaskReport& report) {
    if (!policy.fs.worktree_held) return;
    // Only the directories that changed are listed again (WalkedDirs), so a
    // big worktree does not pay for a second full walk, and the bounds are
    // the first walk's.
    const int worktree_fd = policy.fs.worktree_held.get();
    // Every directory the walk before the run judged is still the same inode
    // with the same settled ctime: none gained, lost or swapped a name, and
    // a directory not judged then is reached only through a name one of them
    // gained, so no name was created anywhere the walk goes (the walk below
    // would find exactly the names covered). One statx a directory, no
    // listing, no record built.
    // Only where the kernel stamps those ctimes itself, as for the kept
    // walk (walk_cache.h): not NFS, FUSE or overlayfs, nor another device
    // mounted inside the worktree.
    // A wall clock stepped back during the run could make a new ctime equal
    // one judged before it: then no ctime is trusted, and the walk is whole.
    const bool clock_stepped_back = walkClockOffsetNs() < report.clock_offset_ns - kClockJitterNs;
    const WalkedDirs* before = clock_stepped_back ? nullptr : report.walked.get();
    const WalkedDirs* kept = clock_stepped_back ? nullptr : report.kept.get();
    struct stat worktree_st;
    if (!clock_stepped_back && !report.visited.empty() && fstat(worktree_fd, &worktree_st) == 0 &&
        worktreeCtimeIsLocal(worktree_fd) &&
        allUnchanged(worktree_fd, worktree_st.st_dev, report.visited)) {
        if (policy.fs.state_dir && report.listed_settled > 0) {
            // What the walk before read is kept for the next run: its
            // record, whole without a kept walk, or merged with the kept one.
            const WalkCacheKey key{policy.fs.state_dir->get(), worktree_fd,
                                   &policy.fs.worktree_masks};
            if (!report.kept) {
                saveWalkCache(key, *report.walked, report.clock_offset_ns);
            } else {
                // A directory taken from the kept walk is kept again judged
                // by this run's clock, the one saved with it, not with the
                // `settled` an earlier run's clock gave it (scanWorktree).
                WalkedDirs whole;
                whole.reserve(report.visited.size());
                for (VisitedDir d : report.visited) {
                    WalkedDir again = d->second;
                    again.settled = again.settled && settledBefore(again.ctime, report.walk_start);
                    whole.emplace(d->first, std::move(again));
                }
                saveWalkCache(key, whole, report.clock_offset_ns);
            }
        }
        return;
    }
    // With no kept walk the walk before read everything, so this one will
    // likely be kept: recorded now rather than by another pass.
    WalkedDirs walked;
    // What it records was judged by the clock of this walk or of the one
    // before the run: the larger offset is the one a later step back is
    // measured from.
    int64_t clock_offset_ns = report.clock_offset_ns;
    const bool record_now = policy.fs.state_dir && !kept;
    auto scan = scanWorktree(worktree_fd, policy.fs.worktree_masks, before,
                             record_now ? &walked : nullptr, kept);
    if (scan) clock_offset_ns = std::max(clock_offset_ns, scan->clock_offset_ns);
    // Kept for the next run when a walk read a settled directory: this walk
    // is the later one, so a directory the run changed long enough ago is
    // settled in it. Beside a kept walk the record is made by one more pass
    // of fstatat, paid only then (a run of a tree nothing changed writes
    // nothing).
    if (scan && scan->truncated_by.empty() && policy.fs.state_dir &&
        report.listed_settled + scan->listed_settled > 0) {
        bool whole = record_now;
        if (!whole) {
            auto again = scanWorktree(worktree_fd, policy.fs.worktree_masks, before, &walked, kept);
            whole = again && again->truncated_by.empty();
            if (again) clock_offset_ns = std::max(clock_offset_ns, again->clock_offset_ns);
        }
        if (whole)
            saveWalkCache({policy.fs.state_dir->get(), worktree_fd, &policy.fs.worktree_masks},
                          walked, clock_offset_ns);
    }
    if (!scan || !scan->truncated_by.empty()) {
        // What was not examined may hold names the run made: the next run's
        // walk is whole or refused, this note is not.
        std::fprintf(stderr,
                     "stockade: the check for names the run created stopped short (%s); the next "
                     "run walks the whole worktree again\n",
                     !scan ? escapeForTerminal(scan.error().describe()).c_str()
                           : scan->truncated_by.c_str());
        if (!scan) return;
    }
    for (const auto* list : {&scan->hidden, &scan->read_only})
        for (const MaskedName& m : *list) {
            // Covered before the run, the very inode: not new. The same path
            // with another inode was made anew there (its directory moved
            // aside with the cover on the first).
            auto at = std::lower_bound(report.covered.begin(), report.covered.end(), m, byPath);
            if (at != report.covered.end() && at->relative == m.relative && at->dev == m.dev &&
                at->ino == m.ino)
                continue;
            // Read-only with the whole top-level .git, not covered alone.
            if (report.top_git_protected && list == &scan->read_only && inTopGit(m)) continue;
            ++report.created_count;
            if (report.created.size() < kReportedMaskNames)
                report.created.push_back("/repo/" + m.relative);
        }
    if (report.created_count)
        std::fprintf(stderr,
                     "stockade: the run created %llu hidden or read-only name(s) in the worktree "
                     "(the first: %s); later runs cover them too\n",
                     static_cast<unsigned long long>(report.created_count),
                     escapeForTerminal(report.created.front()).c_str());
}

}  // namespace stockade
