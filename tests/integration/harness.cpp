// Modes, scratch directories, probe reports and the Sandbox set-up.
#include <pwd.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "harness.h"
#include "harness_internal.h"
#include "tests/probe/probe/escape.h"

namespace stockade::itest {

namespace fs = std::filesystem;
using detail::dropToInChild;
using detail::errnoText;

namespace {

// Whether an unprivileged user (65534 when we are root) may create a user
// namespace here: the one thing every isolation test depends on.
std::optional<std::string> userNamespaceProblem() {
    const pid_t child = ::fork();
    if (child < 0) return "fork: " + errnoText(errno);
    if (child == 0) {
        if (::geteuid() == 0 && !dropToInChild(kNobody, kNobody)) ::_exit(200);
        ::_exit(::unshare(CLONE_NEWUSER) == 0 ? 0 : (errno & 0x7f));
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!WIFEXITED(status)) return "the probing child died";
    const int code = WEXITSTATUS(status);
    if (code == 0) return std::nullopt;
    if (code == 200) return "could not switch to uid 65534 to try";
    return "unshare(CLONE_NEWUSER) as an unprivileged user: " + errnoText(code) +
           " (see kernel.unprivileged_userns_clone, user.max_user_namespaces and AppArmor's "
           "userns restriction)";
}

bool ciMode() {
    const char* ci = ::getenv("CI");
    return ci != nullptr && std::string_view(ci) == "true";
}

// Fails under CI=true, else warns; always returns false.
bool cannotTest(const std::string& why) {
    const std::string text = "SKIPPED, NOT TESTED: " + why;
    if (ciMode()) FAIL(text + " (CI=true turns this skip into a failure)");
    WARN(text);
    return false;
}

std::string rootHome() {
    if (const passwd* pw = ::getpwuid(0); pw != nullptr && pw->pw_dir != nullptr) return pw->pw_dir;
    return "/root";
}

}  // namespace

bool OneOfMatcher::match(const std::string& value) const {
    for (const std::string& option : options_)
        if (value == option) return true;
    return false;
}

std::string OneOfMatcher::describe() const {
    std::string text = "is one of {";
    for (size_t i = 0; i < options_.size(); ++i) text += (i ? ", " : "") + options_[i];
    return text + "}";
}

// The stage (tests/suite/stage.sh) holds a copy of the build's binary; a stage
// older than the build, or none, would test the wrong thing or nothing. It
// lies under /var/tmp, which anyone may write: outside ctest's fixture the name
// may be another user's, whose binary the suite would then run as root. So
// every part of it must be ours, no link, and writable by nobody else.
static void requireCurrentStage() {
    static const bool current = [] {
        const std::string binary = STOCKADE_BINARY;
        const std::string probe_dir = STOCKADE_PROBE_DIR;
        const std::string stage = fs::path(binary).parent_path().parent_path();
        auto ours = [](const std::string& path) {
            struct stat st {};
            return ::lstat(path.c_str(), &st) == 0 && !S_ISLNK(st.st_mode) &&
                   st.st_uid == ::geteuid() && (st.st_mode & 022) == 0;
        };
        bool good =
            ours(stage) && ours(fs::path(binary).parent_path()) && ours(binary) && ours(probe_dir);
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(probe_dir, ec))
            good = good && ours(entry.path());
        struct stat staged {
        }, built{};
        good = good && !ec && ::stat(binary.c_str(), &staged) == 0 &&
               ::stat(STOCKADE_BUILT_BINARY, &built) == 0 && staged.st_size == built.st_size &&
               staged.st_mtim.tv_sec == built.st_mtim.tv_sec &&
               staged.st_mtim.tv_nsec == built.st_mtim.tv_nsec;
        if (!good)
            throw std::runtime_error(
                "the suite's stage " + stage + " is missing, stale, or not wholly this user's: " +
                "run the tests through ctest, which stages the binary and the probes first " +
                "(tests/suite/stage.sh)");
        return true;
    }();
    (void)current;
}

std::string stockadeBinary() {
    const char* other = ::getenv("STOCKADE_ITEST_BINARY");
    if (other != nullptr && *other != '\0') return other;
    requireCurrentStage();
    return STOCKADE_BINARY;
}

std::string modeName(Mode mode) {
    return mode == Mode::Root ? "root" : "rootless";
}

uid_t invokingUid(Mode mode) {
    if (mode == Mode::Root) return 0;
    return ::geteuid() == 0 ? kNobody : ::geteuid();
}

gid_t invokingGid(Mode mode) {
    if (mode == Mode::Root) return 0;
    return ::geteuid() == 0 ? kNobody : ::getegid();
}

bool modeUsable(Mode mode) {
    static const std::optional<std::string> problem = userNamespaceProblem();
    if (problem) return cannotTest("user namespaces are unavailable: " + *problem);
    if (mode == Mode::Root && ::geteuid() != 0)
        return cannotTest("the root mode needs the tests to run as root");
    return true;
}

std::string randomToken(std::string_view prefix) {
    static std::mt19937_64 generator{std::random_device{}()};
    std::ostringstream out;
    out << prefix << "-" << std::hex << generator() << generator();
    return out.str();
}

// --- ScratchDir ------------------------------------------------------------------

std::string scratchRoot() {
    std::string root;
    if (const char* configured = ::getenv("STOCKADE_ITEST_SCRATCH")) {
        root = configured;
    } else {
        requireCurrentStage();
        root = STOCKADE_SCRATCH_DIR;
    }
    fs::create_directories(root);
    ::chmod(root.c_str(), 0755);
    return root;
}

ScratchDir::ScratchDir(std::string_view parent, std::string_view label, uid_t owner, gid_t group)
    : owner_(owner), group_(group) {
    std::string templ = std::string(parent) + "/" + std::string(label) + "-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr)
        throw std::runtime_error("mkdtemp " + templ + ": " + errnoText(errno));
    path_ = templ;
    ::chmod(path_.c_str(), 0755);
    if (::lchown(path_.c_str(), owner_, group_) < 0)
        throw std::runtime_error("chown " + path_ + ": " + errnoText(errno));
}

ScratchDir::~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
}

std::string ScratchDir::makeDir(std::string_view relative, mode_t mode) const {
    std::string path = path_;
    std::istringstream parts{std::string(relative)};
    for (std::string part; std::getline(parts, part, '/');) {
        if (part.empty()) continue;
        path += "/" + part;
        if (::mkdir(path.c_str(), mode) == 0) {
            ::chmod(path.c_str(), mode);
            ::lchown(path.c_str(), owner_, group_);
        } else if (errno != EEXIST) {
            throw std::runtime_error("mkdir " + path + ": " + errnoText(errno));
        }
    }
    return path;
}

std::string ScratchDir::writeFile(std::string_view relative, std::string_view content,
                                  mode_t mode) const {
    const fs::path rel{std::string(relative)};
    if (rel.has_parent_path()) makeDir(rel.parent_path().string());
    const std::string path = at(relative);
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << content;
        if (!out) throw std::runtime_error("write " + path);
    }
    ::chmod(path.c_str(), mode);
    ::lchown(path.c_str(), owner_, group_);
    return path;
}

std::string ScratchDir::makeSymlink(std::string_view relative, std::string_view target) const {
    const fs::path rel{std::string(relative)};
    if (rel.has_parent_path()) makeDir(rel.parent_path().string());
    const std::string path = at(relative);
    if (::symlink(std::string(target).c_str(), path.c_str()) < 0)
        throw std::runtime_error("symlink " + path + ": " + errnoText(errno));
    ::lchown(path.c_str(), owner_, group_);
    return path;
}

// --- ProbeReport ----------------------------------------------------------------

ProbeReport::ProbeReport(std::string_view text) {
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(start, end - start);
        const size_t eq = line.find('=');
        if (eq != std::string_view::npos && eq > 0)
            values_[std::string(line.substr(0, eq))].emplace_back(line.substr(eq + 1));
        start = end + 1;
    }
}

std::string ProbeReport::get(std::string_view key) const {
    const auto it = values_.find(std::string(key));
    return it == values_.end() || it->second.empty() ? "<missing>" : it->second.front();
}

std::vector<std::string> ProbeReport::all(std::string_view key) const {
    const auto it = values_.find(std::string(key));
    return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::string probeEscape(std::string_view bytes) {
    return probe::escape(bytes);
}

// --- Sandbox ----------------------------------------------------------------------

std::vector<std::string> probeCommand(const std::vector<std::string>& actionAndArgs) {
    std::vector<std::string> command{std::string(kProbeInside)};
    command.insert(command.end(), actionAndArgs.begin(), actionAndArgs.end());
    return command;
}

Sandbox::Sandbox(Mode mode)
    : mode_(mode),
      scratch_(scratchRoot(), "sandbox", invokingUid(mode), invokingGid(mode)),
      secretCanary_(randomToken("canary")) {
    // Root's own checkouts are root's: the root mode works on a root-owned
    // worktree, which the sandbox may write only through an idmapped mount.
    worktree_ = scratch_.makeDir("worktree");
    scratch_.writeFile("worktree/README", "a worktree for stockade's integration tests\n");
    scratch_.writeFile("worktree/.git/HEAD", "ref: refs/heads/main\n");
    scratch_.writeFile("worktree/.git/config", "[core]\n\trepositoryformatversion = 0\n");
    scratch_.makeDir("worktree/.git/hooks");
    resultPath_ = scratch_.at("result.json");
}

Sandbox& Sandbox::option(std::string flag) {
    options_.push_back(std::move(flag));
    return *this;
}

Sandbox& Sandbox::option(std::string flag, std::string value) {
    options_.push_back(std::move(flag));
    options_.push_back(std::move(value));
    return *this;
}

Sandbox& Sandbox::withoutWorktree() {
    useWorktree_ = false;
    return *this;
}

Sandbox& Sandbox::worktreeAt(std::string path) {
    worktree_ = std::move(path);
    useWorktree_ = true;
    return *this;
}

Sandbox& Sandbox::callerEnv(std::string keyValue) {
    callerEnv_.push_back(std::move(keyValue));
    return *this;
}

Sandbox& Sandbox::stdinData(std::string data) {
    stdin_ = std::move(data);
    return *this;
}

Sandbox& Sandbox::controllingTerminal() {
    controllingTerminal_ = true;
    return *this;
}

Sandbox& Sandbox::leakFile(std::string path) {
    leakedFile_ = std::move(path);
    return *this;
}

std::vector<std::string> Sandbox::runArgs(const std::vector<std::string>& command) const {
    std::vector<std::string> args{"run"};
    args.insert(args.end(), options_.begin(), options_.end());
    args.insert(args.end(), {"--mount", std::string(STOCKADE_PROBE_DIR) + ":/probe"});
    if (useWorktree_) args.insert(args.end(), {"--worktree", worktree_});
    args.insert(args.end(), {"--result", resultPath_, "--"});
    args.insert(args.end(), command.begin(), command.end());
    return args;
}

Launch Sandbox::launch(const std::vector<std::string>& command) const {
    // The caller's environment as a careless harness would pass it: secrets
    // under secret-shaped names and under innocent ones alike.
    std::map<std::string, std::string> env = {
        {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
        {"HOME", mode_ == Mode::Root ? rootHome() : "/nonexistent"},
        {"LANG", "C.UTF-8"},
        {"TERM", "xterm-256color"},
        {"USER", mode_ == Mode::Root ? "root" : "nobody"},
        {"GITHUB_TOKEN", secretCanary_},
        {"AWS_SECRET_ACCESS_KEY", secretCanary_},
        {"SSH_AUTH_SOCK", "/nonexistent/" + secretCanary_},
        {"STOCKADE_ITEST_INNOCENT", secretCanary_},
    };
    for (const std::string& kv : callerEnv_) {
        const size_t eq = kv.find('=');
        env[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    }
    Launch launch;
    launch.mode = mode_;
    launch.args = runArgs(command);
    for (const auto& [key, value] : env) launch.environment.push_back(key + "=" + value);
    launch.stdinData = stdin_.empty() ? "stdin-" + secretCanary_ + "\n" : stdin_;
    launch.controllingTerminal = controllingTerminal_;
    launch.leakedFile = leakedFile_;
    return launch;
}

Completed Sandbox::run(const std::vector<std::string>& command,
                       std::chrono::milliseconds timeout) const {
    return runStockade(launch(command), timeout);
}

ProbeRun Sandbox::probe(const std::vector<std::string>& actionAndArgs) const {
    ProbeRun run;
    run.completed = this->run(probeCommand(actionAndArgs));
    run.report = ProbeReport(run.completed.out);
    return run;
}

nlohmann::json Sandbox::result() const {
    const std::string text = readFileOrEmpty(resultPath_);
    INFO("result file " << resultPath_ << ":\n" << text);
    REQUIRE_FALSE(text.empty());
    nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    REQUIRE_FALSE(parsed.is_discarded());
    return parsed;
}

std::string heldTestProfileWith(Sandbox& sandbox, const std::string& from, const std::string& to) {
    std::ifstream in(std::string(STOCKADE_SOURCE_DIR) + "/profiles/held-test.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    return sandbox.scratch().writeFile("profile.json", text);
}

Launch oracleLaunch(Sandbox& sandbox, const std::vector<std::string>& command) {
    const std::string held = sandbox.scratch().makeDir("held");
    sandbox.scratch().writeFile("held/t.txt", "held\n");
    Launch launch = sandbox.launch(command);
    launch.args[0] = "oracle";
    const auto result_flag = std::find(launch.args.begin(), launch.args.end(), "--result");
    if (result_flag != launch.args.end()) launch.args.erase(result_flag, result_flag + 2);
    const std::vector<std::string> options = {"--held", held, "--verdict",
                                              sandbox.scratch().at("verdict.json")};
    launch.args.insert(launch.args.begin() + 1, options.begin(), options.end());
    return launch;
}

}  // namespace stockade::itest
