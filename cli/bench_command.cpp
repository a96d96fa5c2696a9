#include "cli/bench_command.h"

#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

#include "runtime/bench/bench_layers.h"
#include "runtime/bench/bench_report.h"
#include "runtime/policy/policy_builder.h"
#include "runtime/policy/profile.h"

extern char** environ;

namespace stockade {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kUsageError = 125;
constexpr int kMaxRuns = 100000;

int usageError(const std::string& message) {
    std::fprintf(stderr, "stockade: %s\n", message.c_str());
    return kUsageError;
}

std::optional<int> parseCount(const std::string& text, int min) {
    if (text.empty() || text.size() > 9 ||
        !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    int value = std::stoi(text);
    if (value < min || value > kMaxRuns) return std::nullopt;
    return value;
}

double msSince(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The bench's scratch space: the result files and the comparison's worktree,
// in $TMPDIR (or /tmp), removed at the end whatever happened.
class Scratch {
  public:
    static Result<Scratch> make() {
        const char* tmpdir = getenv("TMPDIR");
        std::string templ =
            std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/stockade-bench-XXXXXX";
        if (!mkdtemp(templ.data())) return Error::fromErrno("mkdtemp(\"" + templ + "\")");
        Scratch out;
        out.dir_ = templ;
        if (mkdir(out.worktree().c_str(), 0755) < 0)
            return Error::fromErrno("mkdir(\"" + out.worktree() + "\")");
        return out;
    }
    Scratch(Scratch&& other) noexcept : dir_(std::exchange(other.dir_, std::string())) {}
    ~Scratch() {
        std::error_code ignored;
        if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
    }
    std::string worktree() const { return dir_ + "/worktree"; }
    std::string resultFile(const std::string& name) const { return dir_ + "/" + name + ".json"; }

  private:
    Scratch() = default;
    std::string dir_;
};

// Runs argv to its end with stdin and stdout on /dev/null (stderr stays ours,
// so a failing run explains itself); returns its wall time.
Result<double> spawnAndWait(const std::vector<std::string>& argv) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    auto start = Clock::now();
    pid_t pid;
    int err = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (err != 0) return Error::fromErrno("posix_spawn(\"" + argv[0] + "\")", err);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    double ms = msSince(start);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return ms;
    std::string how = WIFEXITED(status) ? "exited with " + std::to_string(WEXITSTATUS(status))
                                        : "died of signal " + std::to_string(WTERMSIG(status));
    return Error::message(argv[0] + " " + argv[1] + " ... " + how);
}

// As spawnAndWait, with `result` removed first, outside the timing: each
// run writes a new file, as a harness does. Replacing one would also time
// the freeing of the old file's blocks, which on a filesystem mounted with
// `discard` (ext4 without a journal) is a synchronous discard: 0.3 ms median
// and 4 ms at p90 on the machine of docs/performance.md, the disk's cost.
Result<double> spawnFresh(const std::vector<std::string>& argv, const std::string& result) {
    unlink(result.c_str());
    return spawnAndWait(argv);
}

std::string selfExecutable() {
    std::error_code ec;
    auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("/proc/self/exe") : path.string();
}

// Where $PATH finds bwrap (the default PATH when it is unset), as a user's
// shell would.
std::optional<std::string> findBwrap() {
    const char* path = getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    size_t start = 0;
    while (start <= dirs.size()) {
        size_t end = dirs.find(':', start);
        if (end == std::string::npos) end = dirs.size();
        std::string candidate = dirs.substr(start, end - start) + "/bwrap";
        if (end > start && access(candidate.c_str(), X_OK) == 0) return candidate;
        start = end + 1;
    }
    return std::nullopt;
}

// bubblewrap with what the held-test profile gives stockade's sandbox: every
// namespace, no capabilities, a new session, the same system directories
// (links kept as links), /etc read-only, a fresh /proc and /dev, tmpfs /tmp
// and /var/tmp, the worktree writable at /repo.
std::vector<std::string> bwrapArgs(const std::string& bwrap, const Policy& policy,
                                   const std::string& worktree) {
    std::vector<std::string> args = {bwrap,           "--unshare-all", "--die-with-parent",
                                     "--new-session", "--cap-drop",    "ALL"};
    for (const std::string& dir : policy.fs.system_dirs) {
        std::error_code ec;
        auto status = std::filesystem::symlink_status(dir, ec);
        if (ec || !std::filesystem::exists(status)) continue;
        if (std::filesystem::is_symlink(status)) {
            args.insert(args.end(),
                        {"--symlink", std::filesystem::read_symlink(dir, ec).string(), dir});
        } else if (std::filesystem::is_directory(status)) {
            args.insert(args.end(), {"--ro-bind", dir, dir});
        }
    }
    args.insert(args.end(), {"--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev",
                             "--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--bind", worktree, "/repo",
                             "--chdir", "/repo", "--", "/bin/true"});
    return args;
}

// One thing the rounds measure: a name and how to run it once.
struct Subject {
    std::function<Result<double>()> once;
    std::vector<double> samples;
};

// Every round runs each subject once, in an order shuffled per round (with a
// fixed seed, so runs are repeatable): drift, and whatever one run leaves for
// the kernel to finish (a cgroup being freed, a mount namespace torn down),
// falls on every subject alike.
Status measureInterleaved(std::vector<Subject>& subjects, int warmup, int runs) {
    std::vector<size_t> order(subjects.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::mt19937 shuffle_seed(7);
    for (int round = 0; round < warmup + runs; ++round) {
        std::shuffle(order.begin(), order.end(), shuffle_seed);
        for (size_t i : order) {
            auto ms = subjects[i].once();
            if (!ms) return ms.error();
            if (round >= warmup) subjects[i].samples.push_back(*ms);
        }
    }
    return okStatus();
}

// Sandboxes started and finished per second, `runners` at a time, each
// runner one after another; `runners` separate result files.
Result<double> throughput(const std::string& self, const Scratch& scratch, unsigned runners,
                          size_t runs_each) {
    std::mutex lock;
    std::optional<Error> failure;
    auto start = Clock::now();
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < runners; ++t) {
        threads.emplace_back([&, t] {
            std::vector<std::string> argv = {self, "run", "--quiet",  "--result",
                                             "",   "--",  "/bin/true"};
            for (size_t i = 0; i < runs_each; ++i) {
                // A new file each time (see spawnFresh), all removed with the scratch.
                argv[4] =
                    scratch.resultFile("throughput-" + std::to_string(t) + "-" + std::to_string(i));
                if (auto ms = spawnAndWait(argv); !ms) {
                    std::lock_guard<std::mutex> guard(lock);
                    if (!failure) failure = ms.error();
                    return;
                }
            }
        });
    }
    for (std::thread& thread : threads) thread.join();
    if (failure) return *failure;
    double seconds = msSince(start) / 1000.0;
    return static_cast<double>(runners * runs_each) / seconds;
}

BenchReport::Machine describeMachine() {
    BenchReport::Machine m;
    utsname u{};
    if (uname(&u) == 0) m.kernel = u.release;
    cpu_set_t set;
    m.cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    m.uid = geteuid();
    m.root = m.uid == 0;
    getloadavg(m.load_before, 3);
    return m;
}

int fail(const Error& error) {
    std::fprintf(stderr, "stockade: bench: %s\n", error.describe().c_str());
    return 1;
}

}  // namespace

int benchCommand(const BenchOptions& options) {
    auto runs = parseCount(options.runs, 1);
    if (!runs)
        return usageError("--runs must be a whole number from 1 to " + std::to_string(kMaxRuns) +
                          ", not \"" + options.runs + "\"");
    auto warmup = parseCount(options.warmup, 0);
    if (!warmup)
        return usageError("--warmup must be a whole number from 0 to " + std::to_string(kMaxRuns) +
                          ", not \"" + options.warmup + "\"");
    if (options.compare && *options.compare != "bwrap")
        return usageError("--compare knows only bwrap, not \"" + *options.compare + "\"");

    BenchReport report;
    report.runs = *runs;
    report.warmup = *warmup;
    report.machine = describeMachine();

    // The real default profile, as `stockade run -- /bin/true` would build it.
    auto profile = loadProfile("held-test");
    if (!profile) return fail(profile.error());
    RunOptions run;
    run.command = {"/bin/true"};
    auto policy = buildPolicy(*profile, run);
    if (!policy) return fail(policy.error());
    auto layers = LayerBench::prepare(*policy);
    if (!layers) return fail(layers.error().withContext("prepare the layers"));
    auto scratch = Scratch::make();
    if (!scratch) return fail(scratch.error());
    const std::string self = selfExecutable();

    std::vector<Subject> subjects;
    for (const BenchLevelInfo& info : benchLevels()) {
        if (info.level == BenchLevel::FullProfile) {
            std::vector<std::string> argv = {
                self, "run", "--quiet", "--result", scratch->resultFile("full"), "--", "/bin/true"};
            subjects.push_back({[argv] { return spawnFresh(argv, argv[4]); }, {}});
        } else {
            BenchLevel level = info.level;
            LayerBench* bench = &*layers;
            subjects.push_back({[bench, level] { return bench->runOnce(level); }, {}});
        }
    }

    BenchReport::Comparison& comparison = report.comparison;
    comparison.requested = options.compare.has_value();
    if (comparison.requested) {
        auto bwrap = findBwrap();
        if (!bwrap) {
            comparison.unavailable_reason =
                "bubblewrap (bwrap) is not installed (on Debian and Ubuntu: apt-get install "
                "bubblewrap)";
        } else {
            comparison.bwrap = *bwrap;
            comparison.bwrap_args = bwrapArgs(*bwrap, *policy, scratch->worktree());
            comparison.stockade_args = {self,
                                        "run",
                                        "--quiet",
                                        "--worktree",
                                        scratch->worktree(),
                                        "--result",
                                        scratch->resultFile("compare"),
                                        "--",
                                        "/bin/true"};
            comparison.worktree_note =
                scratch->worktree() + ", owned by uid " + std::to_string(geteuid()) +
                (geteuid() == 0 ? " (root-owned: stockade makes it writable through an "
                                  "idmapped mount)"
                                : "");
            // One trial first: a bwrap that cannot run here is a finding, not a crash.
            if (auto trial = spawnAndWait(comparison.bwrap_args); !trial) {
                comparison.unavailable_reason =
                    "bubblewrap is installed but cannot run here: " + trial.error().describe();
            } else {
                comparison.available = true;
                subjects.push_back(
                    {[argv = comparison.stockade_args] { return spawnFresh(argv, argv[6]); }, {}});
                subjects.push_back(
                    {[argv = comparison.bwrap_args] { return spawnAndWait(argv); }, {}});
            }
        }
        if (!comparison.available && !options.json)
            std::fprintf(stderr, "stockade: bench: no comparison: %s\n",
                         comparison.unavailable_reason.c_str());
    }

    if (auto s = measureInterleaved(subjects, *warmup, *runs); !s) return fail(s.error());

    double bare = 0;
    for (size_t i = 0; i < benchLevels().size(); ++i) {
        const BenchLevelInfo& info = benchLevels()[i];
        BenchReport::Level level{info.name, info.label, summarize(subjects[i].samples), 0, ""};
        if (info.level == BenchLevel::Bare) bare = level.latency.median_ms;
        level.overhead_ms = level.latency.median_ms - bare;
        if (info.level == BenchLevel::CgroupLimits) level.note = layers->limitMechanism();
        if (info.level == BenchLevel::Landlock) level.note = layers->landlockState();
        report.levels.push_back(std::move(level));
    }
    if (comparison.available) {
        comparison.stockade = summarize(subjects[benchLevels().size()].samples);
        comparison.bubblewrap = summarize(subjects[benchLevels().size() + 1].samples);
        comparison.ratio = comparison.stockade.median_ms / comparison.bubblewrap.median_ms;
    }

    BenchReport::Throughput& t = report.throughput;
    t.sequential_runs = static_cast<size_t>(*runs);
    auto sequential = throughput(self, *scratch, 1, t.sequential_runs);
    if (!sequential) return fail(sequential.error());
    t.sequential_per_s = *sequential;
    t.concurrency = report.machine.cpus;
    size_t each = (t.sequential_runs + t.concurrency - 1) / t.concurrency;
    t.concurrent_runs = each * t.concurrency;
    auto concurrent = throughput(self, *scratch, t.concurrency, each);
    if (!concurrent) return fail(concurrent.error());
    t.concurrent_per_s = *concurrent;

    getloadavg(report.machine.load_after, 3);
    std::fputs((options.json ? benchJson(report) : benchTable(report)).c_str(), stdout);
    return 0;
}

}  // namespace stockade
