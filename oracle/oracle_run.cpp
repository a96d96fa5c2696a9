#include "oracle/oracle_run.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "base/host_path.h"
#include "base/small_file.h"
#include "base/text_safety.h"
#include "oracle/git_dir_digest.h"
#include "oracle/git_head.h"
#include "oracle/git_tree.h"
#include "oracle/held_files.h"
#include "oracle/nodump_blob.h"
#include "oracle/report_junit.h"
#include "oracle/report_tap.h"
#include "oracle/safe_read.h"
#include "oracle/verdict.h"
#include "runtime/plan/identity.h"
#include "runtime/policy/policy_builder.h"
#include "runtime/policy/profile.h"
#include "runtime/policy/writable_trees.h"
#include "runtime/record/record_path.h"
#include "runtime/record/result.h"
#include "runtime/record/state_dir.h"
#include "runtime/supervisor/sandbox.h"
#include "runtime/supervisor/supervisor_hardening.h"

namespace stockade::oracle {

namespace {

constexpr int kRefused = 125;
constexpr int kInternalError = 2;             // the exit code of an `error` verdict
constexpr size_t kMaxReportBytes = 64 << 20;  // a report larger than this is refused unread
constexpr uint64_t kMaxReportFiles = 64;
// Where the runner finds `stockade isolate` (cli/isolate_command.h).
constexpr const char* kIsolateInside = "/.stockade/isolate";
constexpr const char* kNodumpInside = "/.stockade/nodump.so";

// The non-dumpable preload (oracle/nodump_blob.h) as a file of the caller's
// private state directory, for the run to bind read-only: written once, and
// again only when this binary's differs (an older stockade's, a truncated
// write). Through a temporary name and renameat, so a concurrent oracle reads
// the old file or the new, never half of one. Read and written beneath the
// held directory; its identity is what the bind must turn out to be.
struct StateFile {
    std::string path;  // for messages
    UniqueFd fd;       // O_PATH, found beneath the held state directory
};
Result<StateFile> nodumpPreloadFile(const HeldStateDir& state) {
    const std::string_view object = nodumpPreloadObject();
    constexpr const char* kName = "nodump.so";
    StateFile file{state.at(kName), {}};
    auto have = readSmallFile(state.get(), kName, file.path, object.size());
    if (!have || have->content != object) {
        if (Status s =
                writeFileAtomicallyAt(state.get(), kName, file.path, std::string(object), 0444);
            !s)
            return s.error();
    }
    file.fd.reset(openat(state.get(), kName, O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!file.fd) return Error::fromErrno("open(\"" + file.path + "\", O_PATH | O_NOFOLLOW)");
    return file;
}

// A HeldPath (base/host_path.h) of what `fd` is, for a mount from it.
Result<HeldPath> heldFromFd(int fd, const std::string& path) {
    HeldPath held;
    held.path = path;
    held.fd = std::make_shared<UniqueFd>(fcntl(fd, F_DUPFD_CLOEXEC, 3));
    if (!*held.fd) return Error::fromErrno("fcntl(F_DUPFD_CLOEXEC) of \"" + path + "\"");
    if (fstat(held.get(), &held.st) < 0) return Error::fromErrno("fstat(\"" + path + "\")");
    return held;
}

// Every line on the terminal may carry a name the sandbox chose (a report
// file, a test, a path in the worktree): shown, never sent.
void say(const std::string& line) {
    std::fprintf(stderr, "stockade oracle: %s\n", escapeForTerminal(line).c_str());
}

int refuse(const std::string& message) {
    say(message);
    return kRefused;
}

// The report directory goes however the oracle leaves: a verdict, an early
// return or an exception.
// It is made, read and removed beneath the held state directory; its path
// is only the mount source, whose identity is checked against `st`.
class ReportDir {
  public:
    ReportDir(HeldStateDir parent, std::string name, UniqueFd fd)
        : parent_(std::move(parent)), name_(std::move(name)), fd_(std::move(fd)) {
        if (fstat(fd_.get(), &st_) < 0) st_ = {};
    }
    ReportDir(const ReportDir&) = delete;
    ReportDir& operator=(const ReportDir&) = delete;
    ~ReportDir() { remove(); }
    std::string path() const { return parent_.at(name_); }
    int fd() const { return fd_.get(); }
    const struct stat& st() const { return st_; }
    void remove();

  private:
    HeldStateDir parent_;
    std::string name_;
    UniqueFd fd_;
    struct stat st_ {};
};

// report.PID.XXXXXX beneath the held state directory, 0700, as mkdtemp
// would make it but without a path: mkdirat with a random suffix, O_EXCL by
// nature, then opened without following a link.
Result<std::unique_ptr<ReportDir>> makeReportDir(const HeldStateDir& state) {
    static constexpr char kChars[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int attempt = 0; attempt < 100; ++attempt) {
        unsigned char random[6];
        if (getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random))
            return Error::fromErrno("getrandom() for a report directory's name");
        std::string name = "report." + std::to_string(getpid()) + ".";
        for (unsigned char r : random) name += kChars[r % (sizeof kChars - 1)];
        if (mkdirat(state.get(), name.c_str(), 0700) < 0) {
            if (errno == EEXIST) continue;
            return Error::fromErrno("mkdirat(\"" + state.at(name) + "\", 0700)");
        }
        UniqueFd fd(
            openat(state.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!fd) return Error::fromErrno("open(\"" + state.at(name) + "\")");
        return std::make_unique<ReportDir>(state, std::move(name), std::move(fd));
    }
    return Error::message("no free report directory name in " + state.path);
}

// What the guard around the oracle needs to deliver an `error` verdict
// where the verdict was asked for.
struct VerdictSink {
    std::optional<RecordTarget> target;  // set once --verdict is judged
    bool to_stdout = false;              // no --verdict: the JSON is stdout's
};

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
void readReports(const ReportDir& reports, const std::string& format, Evidence& e) {
    const std::string dir = reports.path();
    auto listing = listDirectory(reports.fd(), kMaxReportFiles);
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
        auto text = readBeneath(reports.fd(), entry.path, kMaxReportBytes);
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

void ReportDir::remove() {
    if (!name_.empty()) removeTreeAt(parent_.get(), name_);
    name_.clear();
}

// An oracle killed mid-run (SIGKILL) leaves its report directory; the next
// one removes those of dead oracles. They live in the caller's private state
// directory (0700, see runtime/record/state_dir.h), where no one else can plant
// anything: report.PID.XXXXXX, whose PID is gone. Listed and removed beneath
// the held directory, never following a link.
void removeStaleReportDirs(const HeldStateDir& parent) {
    UniqueFd listing(openat(parent.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    DIR* d = listing ? fdopendir(listing.get()) : nullptr;
    if (!d) return;
    listing.release();
    const std::string prefix = "report.";
    while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (!name.starts_with(prefix)) continue;
        pid_t pid = static_cast<pid_t>(std::atoi(name.c_str() + prefix.size()));
        if (pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH) continue;
        struct stat st;
        if (fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISDIR(st.st_mode))
            removeTreeAt(parent.get(), name);
    }
    closedir(d);
}

int runGuarded(const OracleOptions& options, VerdictSink& sink) {
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
    if (Status s = refuseWritableStateDirs(writableHostDirs(probe_policy->fs)); !s)
        return refuse(s.error().describe());
    const std::string worktree = *probe_policy->fs.worktree;
    // The held test apart from every tree the sandbox writes (the worktree,
    // a writable --mount): inside one, or holding one, the code under test
    // could change the test while the runner read it, and put it back
    // before the snapshot after.
    for (const std::string& dir : writableHostDirs(probe_policy->fs))
        if (auto overlap = overlapOf(dir, {held})) {
            const std::string flag = dir == worktree ? "--worktree " : "--mount ";
            return refuse((overlap->dir_inside ? flag + dir + " lies inside --held " + held
                                               : "--held " + held + " lies inside " + flag + dir) +
                          ": the code under test could change the held test while it ran; keep "
                          "the held test apart from every tree the sandbox can write");
        }
    if (options.verdict) {
        auto target =
            resolveRecordTarget("--verdict", *options.verdict, writableHostDirs(probe_policy->fs));
        if (!target) return refuse(target.error().describe());
        sink.target = *target;
    } else {
        sink.to_stdout = true;
    }

    // Before anything candidate-written is read: a crash from here on
    // leaves no core in the worktree, and this process's memory (the
    // caller's environment) is not the sandbox's uid's to read.
    if (auto s = hardenSupervisor(*probe_policy); !s) return refuse(s.error().describe());
    profile->seccomp = probe_policy->seccomp;  // made absolute, for the second policy

    auto before = snapshot(worktree, held, writableHostDirs(probe_policy->fs));
    if (!before) return refuse(before.error().describe());

    auto state = openUserStateDir();
    if (!state) return refuse(state.error().describe());
    removeStaleReportDirs(*state);
    auto made = makeReportDir(*state);
    if (!made) return refuse(made.error().describe());
    ReportDir& reports = **made;
    const std::string report_dir = reports.path();
    if (geteuid() == 0 && fchown(reports.fd(), identity->ids.host_uid, identity->ids.host_gid) < 0)
        return refuse(Error::fromErrno("fchown(\"" + report_dir + "\", " +
                                       std::to_string(identity->ids.host_uid) + ", " +
                                       std::to_string(identity->ids.host_gid) + ")")
                          .describe());

    RunOptions run = options.run;
    // Without --verdict the verdict is stdout's only content.
    if (!options.verdict) run.quiet = true;
    run.mounts.push_back(held + ":/held");
    run.env.push_back("STOCKADE_REPORT_DIR=/report");
    // stockade's own binary, for the runner to start candidate code through
    // (cli/isolate_command.h): read-only, at a path no profile uses.
    char self[PATH_MAX];
    if (!realpath("/proc/self/exe", self))
        return refuse("realpath(\"/proc/self/exe\") failed: cannot offer STOCKADE_ISOLATE");
    run.mounts.push_back(std::string(self) + ":" + kIsolateInside);
    run.env.push_back(std::string("STOCKADE_ISOLATE=") + kIsolateInside);
    // The held command non-dumpable from its first instruction on, so the
    // candidate code it starts cannot open its memory through /proc/PID/mem
    // (docs/oracle.md): preloaded, before any of the caller's LD_PRELOAD.
    auto nodump = nodumpPreloadFile(*state);
    if (!nodump) return refuse(nodump.error().describe());
    std::string preload = std::string("LD_PRELOAD=") + kNodumpInside;
    for (auto it = run.env.begin(); it != run.env.end(); ++it)
        if (it->starts_with("LD_PRELOAD=")) {
            preload += ":" + it->substr(11);
            run.env.erase(it);
            break;
        }
    run.env.push_back(preload);
    auto policy = buildPolicy(*profile, run);
    if (!policy) return refuse(policy.error().describe());
    for (const ExtraMount& m : policy->fs.mounts)
        if (m.target == "/held" && !held_dir->sameFileAs(m.held.st))
            return refuse("--held " + options.held + ": replaced while the oracle ran");
    // The report directory and the preload are mounted from the fds found
    // beneath the held state directory, not from their paths: as root the
    // bind is cloned from the fd (open_tree), so a swap of the state
    // directory since it was judged changes nothing. Rootless, the child
    // cannot clone a mount of this namespace and opens the path again, with
    // no symlink followed, refusing anything but the inode held here
    // (child_plan_builder.h addHeldBind): a swap refuses the run, and never
    // mounts what was swapped in.
    for (auto [target, fd, path, writable] :
         {std::tuple{"/report", reports.fd(), report_dir, true},
          std::tuple{kNodumpInside, nodump->fd.get(), nodump->path, false}}) {
        auto held = heldFromFd(fd, path);
        if (!held) return refuse(held.error().describe());
        policy->fs.mounts.push_back(
            ExtraMount{.source = path, .target = target, .writable = writable, .held = *held});
    }
    // The identity chosen above, whose lease it holds: the report directory
    // was made that host id's.
    SandboxOutcome outcome = runSandbox(*policy, nullptr, &*identity);
    const std::string result_json = resultJson(*policy, outcome);
    SandboxResult result = classify(outcome);

    Evidence e;
    e.run_status = result.status;
    if (outcome.ending == Ending::Exited || outcome.ending == Ending::Signaled)
        e.exit_code = outcome.exit_code;
    e.expected = expected;
    readReports(reports, options.report_format, e);
    reports.remove();
    // Test-only: a fault where one would have cost the verdict before the
    // guard in runOracle (tests/oracle/oracle_cases.py).
    if (const char* fault = std::getenv("STOCKADE_TEST_ORACLE_FAULT");
        fault && std::string_view(fault) == "after-run")
        throw std::runtime_error("injected fault (STOCKADE_TEST_ORACLE_FAULT=after-run)");

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
        if (auto s = writeRecord(*sink.target, text); !s) {
            // Nothing at the path now (writeRecord removes it), and
            // an error, not the verdict's code: a harness must not read a
            // pass or a fail that was never recorded.
            say("cannot write the verdict: " + s.error().describe());
            return kInternalError;
        }
    } else {
        sink.to_stdout = false;  // from here on stdout holds the verdict
        std::fputs(text.c_str(), stdout);
        std::fflush(stdout);
    }
    std::string line = verdict.verdict;
    for (const std::string& c : verdict.contradictions) line += "; " + c;
    say(line);
    return exitCodeFor(verdict);
}

// Whatever went wrong inside the oracle (a name it could not handle, memory,
// a bug) is an `error` verdict with the cause, delivered where the verdict
// was asked for: never an abort with no verdict, which a harness might read
// as anything but the `fail` a candidate wanted hidden.
int deliverInternalError(const VerdictSink& sink, const std::string& cause) {
    const std::string contradiction = "the oracle failed: " + cause;
    try {
        std::string text = internalErrorVerdictJson(contradiction);
        if (sink.target) {
            if (auto s = writeRecord(*sink.target, text); !s)
                say("cannot write the verdict: " + s.error().describe());
        } else if (sink.to_stdout) {
            std::fputs(text.c_str(), stdout);
            std::fflush(stdout);
        }
        say("error; " + contradiction);
    } catch (...) {
        std::fputs("stockade oracle: error; the oracle failed and could not say why\n", stderr);
    }
    return kInternalError;
}

// The oracle builds its policy twice, the second time after the supervisor
// has left the caller's directory (hardenSupervisor): host paths given
// relative to it are made absolute first, as the first build saw them.
OracleOptions withAbsoluteHostPaths(OracleOptions options) {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof(cwd))) return options;  // the first build fails the same way
    auto absolute = [&](std::string& path) {
        if (!path.empty() && path[0] != '/') path = std::string(cwd) + "/" + path;
    };
    RunOptions& run = options.run;
    if (run.worktree) absolute(*run.worktree);
    if (run.rootfs) absolute(*run.rootfs);
    for (std::string& spec : run.mounts) absolute(spec);  // SRC comes first in SRC:DST[:rw]
    return options;
}

}  // namespace

int runOracle(const OracleOptions& given) {
    VerdictSink sink;
    try {
        const OracleOptions options = withAbsoluteHostPaths(given);
        return runGuarded(options, sink);
    } catch (const std::exception& e) {
        return deliverInternalError(sink, e.what());
    } catch (...) {
        return deliverInternalError(sink, "an exception of unknown type");
    }
}

}  // namespace stockade::oracle
