#include "runtime/plan/worktree_masks.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "base/text_safety.h"
#include "base/unique_fd.h"
#include "namespaces/mount_plan.h"
#include "runtime/child/child_plan.h"
#include "runtime/plan/walk_cache.h"
#include "runtime/plan/worktree_listing.h"
#include "runtime/plan/worktree_walk_clock.h"
#include "runtime/policy/mask_patterns.h"

namespace stockade {

namespace {

constexpr const char* kMaskDir = ".stockade-mask-dir";
constexpr const char* kMaskFile = ".stockade-mask-file";

// The top-level .git itself, or a name in it.
bool inTopGit(const MaskedName& m) {
    return m.relative == ".git" || m.relative.starts_with(".git/");
}

bool byPath(const MaskedName& a, const MaskedName& b) {
    return a.relative < b.relative;
}

// The directories above the read-only names (and some hidden ones, below),
// each made a mount point (MountKind::PinBeneath), sorted shallowest first. rename(2) and rmdir(2)
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
// (noteCreatedMaskedNames), as any other file the sandbox writes could be;
// but a name hidden because a hidden link leads to it (MaskedName::
// pin_above) matches no pattern of its own, so its directories are held
// whatever the patterns are.
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
        if (hidden && !pin_hidden && !name->pin_above) continue;
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

}  // namespace

Status addWorktreeMasks(const Policy& policy, int worktree_fd, bool top_git_read_only,
                        ChildPlan& plan, std::optional<WorktreeMaskReport>& found) {
    if (policy.fs.worktree_masks.hide.empty() && policy.fs.worktree_masks.read_only.empty())
        return okStatus();
    // The rules the walk judges by: the policy's, with what the plan adds.
    // The top-level .git the plan binds read-only (addGitProtection) is a
    // read-only directory whatever the patterns say, so the links in it
    // (a hook the host's git runs) keep their targets read-only; and a link
    // may lead to a place the sandbox reaches by a --mount.
    WorktreeMaskRules rules = policy.fs.worktree_masks;
    if (top_git_read_only) rules.read_only.push_back("/repo/.git");
    for (const ExtraMount& m : policy.fs.mounts)
        rules.mounted.push_back({m.target, m.source, m.writable});
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
    report.rules = rules;
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
                          : bound == "link_on_pattern" ? "make it a directory, or remove it"
                          : bound == "case_folding"
                              ? "empty it and clear the attribute (chattr -F), or run on a copy"
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
            const WalkCacheKey key{policy.fs.state_dir->get(), worktree_fd, &report.rules};
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
    auto scan =
        scanWorktree(worktree_fd, report.rules, before, record_now ? &walked : nullptr, kept);
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
            auto again = scanWorktree(worktree_fd, report.rules, before, &walked, kept);
            whole = again && again->truncated_by.empty();
            if (again) clock_offset_ns = std::max(clock_offset_ns, again->clock_offset_ns);
        }
        if (whole)
            saveWalkCache({policy.fs.state_dir->get(), worktree_fd, &report.rules}, walked,
                          clock_offset_ns);
    }
    if (!scan || !scan->truncated_by.empty()) {
        // What was not examined may hold names the run made: the next run's
        // walk is whole or refused, this note is not.
        report.created_unchecked = !scan ? scan.error().describe() : scan->truncated_by;
        std::fprintf(stderr,
                     "stockade: the check for names the run created stopped short (%s); the next "
                     "run walks the whole worktree again\n",
                     escapeForTerminal(report.created_unchecked).c_str());
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
                     "stockade: %llu hidden or read-only name(s) in the worktree were not covered "
                     "when the run began (made, moved or linked to since; the first: %s); later "
                     "runs cover them too\n",
                     static_cast<unsigned long long>(report.created_count),
                     escapeForTerminal(report.created.front()).c_str());
}

}  // namespace stockade
