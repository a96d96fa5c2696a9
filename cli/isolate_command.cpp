#include "cli/isolate_command.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "base/unique_fd.h"
#include "namespaces/landlock.h"
#include "seccomp/filter.h"
#include "seccomp/install_in_child.h"
#include "seccomp/policy.h"

namespace stockade {

namespace {

constexpr int kRefused = 125;

int refuse(const std::string& message) {
    std::fprintf(stderr, "stockade isolate: %s\n", message.c_str());
    return kRefused;
}

// "/report/x" -> "report": the entry of / that holds a path.
std::string topEntry(const std::string& path) {
    size_t start = path.find_first_not_of('/');
    if (start == std::string::npos) return "";
    size_t end = path.find('/', start);
    return path.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// What Landlock does not scope: calls that act on another process by pid
// and are allowed between processes of one uid. The red team lowered the
// runner's RLIMIT_NOFILE with prlimit(2) until it could not write its report,
// and setpriority and sched_setaffinity could slow it into a timeout. Below
// the helper, each of these may name only the caller itself (pid 0, or
// PRIO_PROCESS 0, IOPRIO_WHO_PROCESS 0); anything else is EPERM. An allowed
// default, so nothing else changes: the sandbox's own filter still decides
// every other call.
Result<seccomp::CompiledFilter> selfOnlyFilter() {
    using seccomp::Action;
    using seccomp::ArgCondition;
    using seccomp::CompareOp;
    seccomp::SeccompPolicy policy;
    policy.default_action = Action::Allow;
    policy.newer_syscalls_enosys = false;
    auto refuseUnless0 = [&](const char* name, unsigned index) {
        policy.rules.push_back(
            {{name}, Action::Errno, EPERM, {ArgCondition{index, CompareOp::NotEqual, 0, 0}}});
    };
    refuseUnless0("prlimit64", 0);
    for (const char* name :
         {"sched_setaffinity", "sched_setparam", "sched_setscheduler", "sched_setattr"})
        refuseUnless0(name, 0);
    // setpriority(which, who, prio), ioprio_set(which, who, prio): which 0
    // (PRIO_PROCESS) and 1 (IOPRIO_WHO_PROCESS) with who 0 is the caller; a
    // process group or a user would take in the runner.
    refuseUnless0("setpriority", 0);
    refuseUnless0("setpriority", 1);
    policy.rules.push_back(
        {{"ioprio_set"}, Action::Errno, EPERM, {ArgCondition{0, CompareOp::NotEqual, 1, 0}}});
    refuseUnless0("ioprio_set", 1);
    return seccomp::compileFilter(policy);
}

}  // namespace

int isolateCommand(const std::vector<std::string>& args) {
    std::vector<std::string> hidden;
    size_t i = 0;
    for (; i < args.size(); ++i) {
        if (args[i] == "--") {
            ++i;
            break;
        }
        if (args[i] == "--hide") {
            if (i + 1 >= args.size()) return refuse("--hide needs a path");
            const std::string& path = args[++i];
            if (path.empty() || path[0] != '/' || topEntry(path).empty() ||
                path.find("/..") != std::string::npos)
                return refuse("--hide " + path + ": expected an absolute path below /");
            // Only whole entries of / can be left out of the ruleset: a
            // deeper path hides the entry that holds it.
            hidden.push_back(topEntry(path));
            continue;
        }
        if (args[i].starts_with("-")) return refuse("unknown option " + args[i]);
        break;
    }
    if (i >= args.size())
        return refuse("no command given (stockade isolate [--hide PATH] -- COMMAND)");
    const std::vector<std::string> command(args.begin() + static_cast<long>(i), args.end());
    // The oracle's report directory is /report whatever the environment says:
    // a runner that gives its candidate a clean environment must not thereby
    // give it the report (red team).
    hidden.push_back("report");
    if (const char* report = std::getenv("STOCKADE_REPORT_DIR"); report && *report == '/')
        hidden.push_back(topEntry(report));

    const int abi = ns::landlockAbi();
    // Without ABI 6 a nested domain still stops ptrace and /proc/PID/mem,
    // but not signals: the runner could be killed, and its verdict with it.
    if (abi < 6)
        return refuse("this kernel's Landlock ABI is " + std::to_string(abi) +
                      "; isolating candidate code needs ABI 6 (Linux 6.12) for signal scoping");
    ns::LandlockRulesetAttr attr{};
    attr.handled_access_fs = ns::landlockHandledFs(abi);
    attr.scoped = ns::landlockScopes(abi);
    UniqueFd ruleset(ns::sysLandlockCreateRuleset(&attr, sizeof(attr), 0));
    if (!ruleset) return refuse(Error::fromErrno("landlock_create_ruleset()").describe());

    UniqueFd root(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root) return refuse(Error::fromErrno("open(\"/\")").describe());
    DIR* dir = fdopendir(dup(root.get()));
    if (!dir) return refuse(Error::fromErrno("fdopendir(\"/\")").describe());
    size_t granted = 0;
    while (dirent* entry = readdir(dir)) {
        const std::string name = entry->d_name;
        if (name == "." || name == "..") continue;
        if (std::find(hidden.begin(), hidden.end(), name) != hidden.end()) continue;
        // O_PATH|O_NOFOLLOW: a symlink at the top (/bin -> usr/bin) is left
        // out; what it leads to is granted under its own entry.
        UniqueFd fd(openat(root.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
        if (!fd) continue;
        struct stat st {};
        if (fstat(fd.get(), &st) < 0 || S_ISLNK(st.st_mode)) continue;
        ns::LandlockPathBeneathAttr rule{};
        rule.allowed_access = S_ISDIR(st.st_mode)
                                  ? attr.handled_access_fs
                                  : attr.handled_access_fs & ns::kLandlockFileAccess;
        rule.parent_fd = fd.get();
        if (ns::sysLandlockAddRule(ruleset.get(), ns::kLandlockRulePathBeneath, &rule, 0) < 0) {
            closedir(dir);
            return refuse(Error::fromErrno("landlock_add_rule(\"/" + name + "\")").describe());
        }
        ++granted;
    }
    closedir(dir);
    if (granted == 0) return refuse("nothing under / could be granted");
    root.reset();

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return refuse(Error::fromErrno("prctl(PR_SET_NO_NEW_PRIVS)").describe());
    auto self_only = selfOnlyFilter();
    if (!self_only) return refuse(self_only.error().describe());
    if (ns::sysLandlockRestrictSelf(ruleset.get(), 0) < 0)
        return refuse(Error::fromErrno("landlock_restrict_self()").describe());
    ruleset.reset();
    if (int err = seccomp::installFilterInChild(self_only->fprog()))
        return refuse(Error::fromErrno("seccomp(SECCOMP_SET_MODE_FILTER)", err).describe());
    // The runner's files (its report, pipes to its workers) are not the
    // candidate's: only the standard streams cross.
    if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
        return refuse(Error::fromErrno("close_range(3, ~0, CLOSE_RANGE_CLOEXEC)").describe());

    std::vector<char*> argv;
    for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    const int err = errno;
    std::fprintf(stderr, "stockade isolate: %s: %s\n", command[0].c_str(), std::strerror(err));
    return err == ENOENT ? 127 : 126;
}

}  // namespace stockade
