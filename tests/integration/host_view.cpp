// What the host sees of a run: processes by token, /proc/PID/status, the
// entries and mounts a refused run must not leave behind.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "harness.h"
#include "harness_internal.h"

namespace stockade::itest {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using detail::cStrings;
using detail::dropToInChild;
using detail::errnoText;

namespace {

std::vector<std::string> splitNul(const std::string& data) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (start < data.size()) {
        size_t end = data.find('\0', start);
        if (end == std::string::npos) end = data.size();
        parts.push_back(data.substr(start, end - start));
        start = end + 1;
    }
    return parts;
}

std::vector<pid_t> hostPids() {
    std::vector<pid_t> pids;
    DIR* dir = ::opendir("/proc");
    if (dir == nullptr) return pids;
    while (const dirent* e = ::readdir(dir)) {
        const std::string_view name = e->d_name;
        if (!name.empty() && name.find_first_not_of("0123456789") == std::string_view::npos)
            pids.push_back(std::atoi(e->d_name));
    }
    ::closedir(dir);
    return pids;
}

}  // namespace

// --- the host's view ---------------------------------------------------------------

std::vector<pid_t> findProcessesWithToken(std::string_view token, bool probeOnly) {
    std::vector<pid_t> found;
    const pid_t self = ::getpid();
    for (const pid_t pid : hostPids()) {
        if (pid == self) continue;
        const std::vector<std::string> argv =
            splitNul(readFileOrEmpty("/proc/" + std::to_string(pid) + "/cmdline"));
        if (argv.empty()) continue;  // a zombie, or a kernel thread
        if (probeOnly && fs::path(argv[0]).filename() != "stockade-probe") continue;
        for (const std::string& arg : argv) {
            if (arg == token) {
                found.push_back(pid);
                break;
            }
        }
    }
    return found;
}

bool waitUntilNoProcessHas(std::string_view token, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!findProcessesWithToken(token, false).empty()) {
        if (Clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

void killProcessesWithToken(std::string_view token) {
    for (const pid_t pid : findProcessesWithToken(token, false)) ::kill(pid, SIGKILL);
}

std::optional<std::string> procStatusField(pid_t pid, std::string_view key) {
    std::istringstream lines(readFileOrEmpty("/proc/" + std::to_string(pid) + "/status"));
    const std::string prefix = std::string(key) + ":";
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(prefix, 0) != 0) continue;
        const size_t start = line.find_first_not_of(" \t", prefix.size());
        return start == std::string::npos ? "" : line.substr(start);
    }
    return std::nullopt;
}

std::string readFileOrEmpty(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    if (in) out << in.rdbuf();
    return out.str();
}

bool pathExists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

bool waitUntilPausedInHook(pid_t pid, std::chrono::milliseconds limit) {
    // /proc/PID/syscall starts with the number of the call it blocks in.
    const std::string file = "/proc/" + std::to_string(pid) + "/syscall";
    const std::string sleeping = std::to_string(SYS_clock_nanosleep) + " ";
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
        if (readFileOrEmpty(file).starts_with(sleeping)) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
}

HostProcess::HostProcess(std::vector<std::string> argv, uid_t uid, gid_t gid) {
    std::vector<char*> argvC = cStrings(argv);
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork: " + errnoText(errno));
    if (pid_ == 0) {
        const int devnull = ::open("/dev/null", O_RDWR);
        ::dup2(devnull, STDIN_FILENO);
        ::dup2(devnull, STDOUT_FILENO);
        if (!dropToInChild(uid, gid)) ::_exit(121);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        ::execv(argvC[0], argvC.data());
        ::_exit(127);
    }
}

HostProcess::~HostProcess() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
}

bool HostProcess::alive() const {
    int status = 0;
    return ::waitpid(pid_, &status, WNOHANG) == 0 && ::kill(pid_, 0) == 0;
}

HostSnapshot HostSnapshot::take() {
    HostSnapshot snapshot;
    for (const char* dir : {"/tmp", "/var/tmp", "/dev/shm", "/run", "/run/user"}) {
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(dir, ec)) {
            const std::string name = entry.path().filename().string();
            if (name.find("stockade") != std::string::npos)
                snapshot.stockadeEntries.insert(entry.path().string());
        }
    }
    std::istringstream lines(readFileOrEmpty("/proc/self/mountinfo"));
    for (std::string line; std::getline(lines, line);) {
        // Drop the mount and parent ids, which say nothing about what is mounted.
        std::istringstream fields(line);
        std::string id, parent, rest;
        fields >> id >> parent;
        std::getline(fields, rest);
        // Mounts a test makes in its own scratch directory (a bind mount of
        // part of a worktree, say) are the test's, not stockade's, and may
        // come and go while another test runs beside it.
        std::istringstream where(rest);
        std::string devno, root, point;
        where >> devno >> root >> point;
        if (point.starts_with(scratchRoot() + "/")) continue;
        snapshot.mounts.insert(rest);
    }
    return snapshot;
}

}  // namespace stockade::itest
