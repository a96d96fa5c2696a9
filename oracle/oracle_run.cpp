#include "oracle/oracle_run.h"

#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "oracle/git_dir_digest.h"
#include "oracle/git_head.h"
#include "oracle/git_tree.h"
#include "oracle/held_files.h"
#include "oracle/report_junit.h"
#include "oracle/report_tap.h"
#include "oracle/safe_read.h"
#include "oracle/verdict.h"
#include "runtime/child_plan_builder.h"
#include "runtime/policy_builder.h"
#include "runtime/profile.h"
#include "runtime/record_path.h"
#include "runtime/result.h"
#include "runtime/sandbox.h"
#include "runtime/serve_state.h"

namespace stockade::oracle {

namespace {

constexpr int kRefused = 125;
constexpr size_t kMaxReportBytes = 64 << 20;  // a report larger than this is refused unread
constexpr uint64_t kMaxReportFiles = 64;

int refuse(const std::string& message) {
    std::fprintf(stderr, "stockade oracle: %s\n", message.c_str());
    return kRefused;
}

struct Snapshot {
    std::map<std::string, std::string> held;
    TreeHash tree;
    std::string head;
    std::string git;
};

std::string headText(const std::string& worktree, const std::vector<std::string>& writable) {
    auto head = resolveHead(worktree, writable);
    if (!head) return "unreadable: " + head.error().describe();
    if (head->commit.empty())
        return "unborn:" + (head->refs.empty() ? std::string("HEAD") : head->refs.back());
    return head->commit;
}

std::string gitText(const std::string& worktree, const std::vector<std::string>& writable) {
    auto location = locateGitDir(worktree, writable);
    if (!location) return "none";
    auto digest = digestGitDir(*location);
    if (!digest) return "unreadable: " + digest.error().describe();
    if (!digest->too_large.empty()) return "too large to hash: " + digest->too_large;
    return digest->sha256;
}

Result<Snapshot> snapshot(const std::string& worktree, const std::string& held,
                          const std::vector<std::string>& writable) {
    Snapshot s;
    auto held_hashes = hashTree(held);
    if (!held_hashes) return held_hashes.error().withContext("hash the held files");
    s.held = std::move(*held_hashes);
    auto tree = treeIdOfWorktree(worktree);
    if (!tree) return tree.error().withContext("hash the worktree");
    s.tree = std::move(*tree);
    s.head = headText(worktree, writable);
    s.git = gitText(worktree, writable);
    return s;
}

Result<std::vector<std::string>> readExpected(const std::string& path) {
    std::ifstream in(path);
    if (!in) return Error::fromErrno("open(\"" + path + "\") (--expect)");
    std::vector<std::string> names;
    std::string line;
    while (std::getline(in, line)) {
        line.erase(line.find_last_not_of(" \t\r") + 1);
        line.erase(0, line.find_first_not_of(" \t"));
        if (!line.empty() && line[0] != '#') names.push_back(line);
    }
    return names;
}

// Reads every report file the run left at the top of the report directory,
// without following a link and without reading past the bound; anything that
// is not a regular file where a report should be is an error, not skipped.
void readReports(const std::string& dir, const std::string& format, Evidence& e) {
    auto fd = openDirectory(dir);
    if (!fd) {
        e.report_errors.push_back("the report directory is unreadable: " + fd.error().describe());
        return;
    }
    auto listing = listDirectory(fd->get(), kMaxReportFiles);
    if (!listing) {
        e.report_errors.push_back("the report directory is unreadable: " +
                                  listing.error().describe());
        return;
    }
    const std::string suffix = format == "junit" ? ".xml" : ".tap";
    std::optional<TestReport> merged;
    for (const Entry& entry : listing->entries) {
        if (!entry.path.ends_with(suffix)) continue;
        e.report_files.push_back(entry.path);
        auto text = readBeneath(fd->get(), entry.path, kMaxReportBytes);
        if (!text) {
            e.report_errors.push_back("report " + entry.path + ": " + text.error().describe());
            continue;
        }
        auto parsed = format == "junit" ? parseJunit(*text) : parseTap(*text);
        if (!parsed) {
            e.report_errors.push_back("report " + entry.path +
                                      " does not parse: " + parsed.error().describe());
            continue;
        }
        if (!merged) {
            merged = std::move(*parsed);
            continue;
        }
        for (auto& c : parsed->cases) merged->cases.push_back(std::move(c));
        for (auto& c : parsed->count_checks) merged->count_checks.push_back(std::move(c));
        for (auto& p : parsed->problems) merged->problems.push_back(std::move(p));
    }
    if (listing->truncated)
        e.report_errors.push_back("the report directory holds more than " +
                                  std::to_string(kMaxReportFiles) + " entries");
    if (e.report_files.empty())
        e.report_errors.push_back("no " + suffix + " report in " + dir +
                                  " (write it to $STOCKADE_REPORT_DIR)");
    if (e.report_errors.empty()) e.report = std::move(merged);
}

int removeEntry(const char* path, const struct stat*, int, struct FTW*) {
    return remove(path);
}

void removeTree(const std::string& dir) {
    // Depth first, never following a link the sandbox may have planted.
    nftw(dir.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS);
}

// An oracle killed mid-run (SIGKILL) leaves its report directory; the next
// one removes those of dead oracles. They live in the caller's private state
// directory (0700, see runtime/serve_state.h), where no one else can plant
// anything: report.PID.XXXXXX, whose PID is gone.
void removeStaleReportDirs(const std::string& parent) {
    DIR* d = opendir(parent.c_str());
    if (!d) return;
    const std::string prefix = "report.";
    while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (!name.starts_with(prefix)) continue;
        pid_t pid = static_cast<pid_t>(std::atoi(name.c_str() + prefix.size()));
        if (pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH) continue;
        std::string path = parent + "/" + name;
        struct stat st;
        if (lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) removeTree(path);
    }
    closedir(d);
}

}  // namespace

int runOracle(const OracleOptions& options) {
    if (!options.run.worktree) return refuse("--worktree is required");
    if (options.report_format != "junit" && options.report_format != "tap")
        return refuse("--report: expected junit or tap, got \"" + options.report_format + "\"");
    // Opened once, symlinks refused unless asked for (host_path.h); the
    // --mount made of it below must be this very directory.
    auto held_dir = holdHostPath("--held", options.held, options.run.follow_symlinks);
    if (!held_dir) return refuse(held_dir.error().describe());
    if (!S_ISDIR(held_dir->st.st_mode))
        return refuse("--held " + options.held + ": not a directory");
    const std::string held = held_dir->path;
    std::optional<std::vector<std::string>> expected;
    if (options.expect) {
        auto names = readExpected(*options.expect);
        if (!names) return refuse(names.error().describe());
        expected = std::move(*names);
    }

    auto profile = loadProfile(options.run.profile);
    if (!profile) return refuse(profile.error().describe());
    // A first policy, without the oracle's mounts, only to learn who the
    // sandbox will be: the report directory must be that identity's.
    auto probe_policy = buildPolicy(*profile, options.run);
    if (!probe_policy) return refuse(probe_policy.error().describe());
    auto identity = chooseIdentity(*probe_policy);
    if (!identity) return refuse(identity.error().describe());
    const std::string worktree = *probe_policy->fs.worktree;
    std::optional<RecordTarget> verdict_target;
    if (options.verdict) {
        auto target =
            resolveRecordTarget("--verdict", *options.verdict, writableHostDirs(probe_policy->fs));
        if (!target) return refuse(target.error().describe());
        verdict_target = *target;
    }

    auto before = snapshot(worktree, held, writableHostDirs(probe_policy->fs));
    if (!before) return refuse(before.error().describe());

    auto state = StateDir::open();
    if (!state) return refuse(state.error().describe());
    removeStaleReportDirs(state->path());
    std::string report_template = state->path() + "/report." + std::to_string(getpid()) + ".XXXXXX";
    if (!mkdtemp(report_template.data())) return refuse("mkdtemp(" + report_template + ") failed");
    const std::string report_dir = report_template;
    if (geteuid() == 0 &&
        chown(report_dir.c_str(), identity->ids.host_uid, identity->ids.host_gid) < 0) {
        removeTree(report_dir);
        return refuse("chown(\"" + report_dir + "\") failed");
    }

    RunOptions run = options.run;
    // Without --verdict the verdict is stdout's only content.
    if (!options.verdict) run.quiet = true;
    run.mounts.push_back(held + ":/held");
    run.mounts.push_back(report_dir + ":/report:rw");
    run.env.push_back("STOCKADE_REPORT_DIR=/report");
    auto policy = buildPolicy(*profile, run);
    if (!policy) {
        removeTree(report_dir);
        return refuse(policy.error().describe());
    }
    for (const ExtraMount& m : policy->fs.mounts)
        if (m.target == "/held" && !held_dir->sameFileAs(m.held.st)) {
            removeTree(report_dir);
            return refuse("--held " + options.held + ": replaced while the oracle ran");
        }
    SandboxOutcome outcome = runSandbox(*policy);
    const std::string result_json = resultJson(*policy, outcome);
    SandboxResult result = classify(outcome);

    Evidence e;
    e.run_status = result.status;
    if (outcome.ending == Ending::Exited || outcome.ending == Ending::Signaled)
        e.exit_code = outcome.exit_code;
    e.expected = expected;
    readReports(report_dir, options.report_format, e);
    removeTree(report_dir);

    auto after = snapshot(worktree, held, writableHostDirs(probe_policy->fs));
    if (!after) {
        e.report_errors.push_back("cannot re-read the evidence after the run: " +
                                  after.error().describe());
    } else {
        e.integrity.held_changed = changedPaths(before->held, after->held);
        e.integrity.head_after = after->head;
        e.integrity.git_after = after->git;
        e.worktree_changes = diffTrees(before->tree, after->tree);
        e.tree_after = after->tree.tree_id;
    }
    e.integrity.head_before = before->head;
    e.integrity.git_before = before->git;
    e.tree_before = before->tree.tree_id;

    Verdict verdict = decide(e);
    std::string text = verdictJson(e, verdict, result_json);
    if (options.verdict) {
        if (auto s = writeRecord(*verdict_target, text); !s) {
            // Nothing at the path now (writeRecord removes it), and
            // an error, not the verdict's code: a harness must not read a
            // pass or a fail that was never recorded.
            std::fprintf(stderr, "stockade oracle: cannot write the verdict: %s\n",
                         s.error().describe().c_str());
            return 2;
        }
    } else {
        std::fputs(text.c_str(), stdout);
    }
    std::fprintf(stderr, "stockade oracle: %s", verdict.verdict.c_str());
    for (const std::string& c : verdict.contradictions) std::fprintf(stderr, "; %s", c.c_str());
    std::fprintf(stderr, "\n");
    return exitCodeFor(verdict);
}

}  // namespace stockade::oracle
