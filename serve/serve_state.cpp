#include "serve/serve_state.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "base/file_lock.h"
#include "base/small_file.h"
#include "base/text_safety.h"
#include "runtime/record/result.h"
#include "runtime/record/state_dir.h"

namespace stockade {

// A record is a few hundred bytes; its command line (at most ARG_MAX,
// escaped) is the bulk of it.
constexpr size_t kMaxRecordBytes = size_t{16} << 20;

namespace {

using nlohmann::json;
constexpr const char* kRecordSchema = "stockade.service/v1";

bool waitReadable(int fd, int timeout_ms) {
    pollfd pfd{fd, POLLIN, 0};
    int n;
    while ((n = poll(&pfd, 1, timeout_ms)) < 0 && errno == EINTR) {
    }
    return n > 0;
}

}  // namespace

Status validateServiceName(const std::string& name) {
    auto ok = [](char c, bool first) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (!first && (c == '_' || c == '.' || c == '-'));
    };
    bool valid = !name.empty() && name.size() <= 64;
    for (size_t i = 0; valid && i < name.size(); ++i) valid = ok(name[i], i == 0);
    if (!valid)
        return Error::message("--name: \"" + name +
                              "\" is not a valid name (a letter or digit, then up to 63 letters, "
                              "digits, '_', '.' or '-')");
    return okStatus();
}

std::vector<StateDir> StateDir::others(const StateDir& primary) {
    std::vector<StateDir> out;
    for (HeldStateDir& dir : otherUserStateDirs(primary.dir_)) out.push_back(StateDir(dir));
    return out;
}

std::vector<StateDir> StateDir::all(const StateDir& primary) {
    std::vector<StateDir> out{primary};
    for (StateDir& other : others(primary)) out.push_back(std::move(other));
    return out;
}

Status StateDir::remember() const {
    return registerUserStateDir(dir_);
}

Result<StateDir> StateDir::open() {
    auto dir = openUserStateDir();
    if (!dir) return dir.error();
    return StateDir(std::move(*dir));
}

UniqueFd StateDir::openFile(const std::string& file, int flags, mode_t mode) const {
    return UniqueFd(openat(fd(), file.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode));
}

bool StateDir::statFile(const std::string& file, struct stat& st) const {
    return fstatat(fd(), file.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

void StateDir::removeFile(const std::string& file) const {
    unlinkat(fd(), file.c_str(), 0);
}

Result<UniqueFd> StateDir::lock(const std::string& name) const {
    auto fd = lockFileExclusiveAt(this->fd(), name + ".lock", lockPath(name), true);
    if (!fd && fd.error().errnum() == EWOULDBLOCK)
        return Error::message("a dev server named \"" + name + "\" is already running");
    return fd;
}

bool StateDir::live(const std::string& name) const {
    auto fd = lockFileExclusiveAt(this->fd(), name + ".lock", lockPath(name), false);
    if (fd) {
        release(name, std::move(*fd));
        return false;
    }
    if (fd.error().errnum() == ENOENT) {
        removeFile(name + ".json");  // a record without a lock is stale
        return false;
    }
    return true;
}

void StateDir::release(const std::string& name, UniqueFd lock) const {
    removeFile(name + ".json");
    removeFile(name + ".lock");
    lock.reset();
}

Status StateDir::write(const ServiceRecord& r) const {
    json doc{{"schema", kRecordSchema},
             {"name", r.name},
             {"port", r.port},
             {"pid", r.pid},
             {"sandbox_pid", r.sandbox_pid},
             {"started_ms", r.started_ms},
             {"ready", r.ready},
             {"profile", r.profile},
             {"command", r.command},
             {"backend", r.backend},
             {"backend_fallback", r.backend_fallback},
             {"forwarded_loopbacks", r.forwarded_loopbacks},
             {"log", logPath(r.name)}};
    return writeFileAtomicallyAt(fd(), r.name + ".json", recordPath(r.name), jsonText(doc) + "\n",
                                 0644);
}

std::optional<ServiceRecord> StateDir::read(const std::string& name) const {
    // A sandbox that could write here may have left a link, a FIFO or a
    // huge file under the name; none of them is a record.
    const std::string file_name = name + ".json";
    auto file = readSmallFile(fd(), file_name.c_str(), recordPath(name), kMaxRecordBytes);
    if (!file) return std::nullopt;
    try {
        json doc = json::parse(file->content);
        if (doc.value("schema", "") != kRecordSchema) return std::nullopt;
        ServiceRecord r;
        r.name = doc.at("name").get<std::string>();
        // The name is what ps prints and stop matches: it must be the file's.
        if (r.name != name) return std::nullopt;
        r.port = doc.at("port").get<uint16_t>();
        r.pid = doc.at("pid").get<pid_t>();
        r.sandbox_pid = doc.at("sandbox_pid").get<pid_t>();
        r.started_ms = doc.at("started_ms").get<int64_t>();
        r.ready = doc.at("ready").get<bool>();
        r.profile = doc.at("profile").get<std::string>();
        r.command = doc.at("command").get<std::vector<std::string>>();
        r.backend = doc.value("backend", "");
        r.backend_fallback = doc.value("backend_fallback", "");
        r.forwarded_loopbacks = doc.value("forwarded_loopbacks", std::vector<std::string>{});
        return r;
    } catch (const json::exception&) {
        return std::nullopt;
    }
}

std::vector<ServiceRecord> StateDir::list() const {
    std::vector<std::string> names;
    UniqueFd listing(openat(fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (DIR* d = listing ? fdopendir(listing.get()) : nullptr) {
        listing.release();
        while (dirent* e = readdir(d)) {
            std::string file = e->d_name;
            for (const char* suffix : {".json", ".lock"})
                if (file.size() > 5 && file.ends_with(suffix))
                    names.push_back(file.substr(0, file.size() - 5));
        }
        closedir(d);
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    std::vector<ServiceRecord> out;
    for (const std::string& name : names) {
        if (!validateServiceName(name) || !live(name)) continue;
        if (auto record = read(name)) out.push_back(std::move(*record));
    }
    return out;
}

std::optional<ServiceRecord> StateDir::findByPort(uint16_t port) const {
    for (ServiceRecord& r : list())
        if (r.port == port) return r;
    return std::nullopt;
}

Status StateDir::markHolder(int lock_fd) {
    struct flock mark {};
    mark.l_type = F_WRLCK;
    mark.l_whence = SEEK_SET;
    mark.l_len = 1;
    if (fcntl(lock_fd, F_SETLK, &mark) < 0)
        return Error::fromErrno("fcntl(F_SETLK) on the server's lock file");
    return okStatus();
}

namespace {

// The pid of the process that marked itself the holder of NAME's lock file
// (StateDir::markHolder), in this process's pid namespace; nullopt when none
// did.
std::optional<pid_t> markedHolder(const StateDir& dir, const std::string& name) {
    UniqueFd fd = dir.openFile(name + ".lock", O_RDWR);
    if (!fd) return std::nullopt;
    struct flock probe {};
    probe.l_type = F_WRLCK;
    probe.l_whence = SEEK_SET;
    probe.l_len = 1;
    if (fcntl(fd.get(), F_GETLK, &probe) < 0 || probe.l_type == F_UNLCK || probe.l_pid <= 0)
        return std::nullopt;
    return probe.l_pid;
}

}  // namespace

Result<bool> stopService(const StateDir& dir, const std::string& name, uint64_t wait_ms) {
    if (!dir.live(name)) return false;
    // A supervisor still starting has its lock but not yet its record.
    std::optional<ServiceRecord> record;
    for (int i = 0; i < 100 && !(record = dir.read(name)); ++i) {
        if (!dir.live(name)) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!record) return Error::message("\"" + name + "\" holds its lock but has no record");
    // The pidfd first, then the lock: while the lock is held its holder is
    // alive, so the pid cannot have been reused for another process.
    UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, record->pid, 0)));
    if (!pidfd) {
        if (errno != ESRCH)
            return Error::fromErrno("pidfd_open(" + std::to_string(record->pid) + ")");
    } else if (dir.live(name)) {
        // Checked after pidfd_open: the marked holder is alive while its mark
        // stands, so the pid the pidfd pins is that process.
        if (markedHolder(dir, name) != record->pid)
            return Error::message(
                "the record of \"" + name + "\" in " + dir.path() + " names pid " +
                std::to_string(record->pid) +
                ", which is not the holder of its lock: nothing signalled (remove " + dir.path() +
                " if no server of yours runs from it)");
        if (syscall(SYS_pidfd_send_signal, pidfd.get(), SIGTERM, nullptr, 0) < 0 && errno != ESRCH)
            return Error::fromErrno("send SIGTERM to the supervisor of \"" + name + "\" (pid " +
                                    std::to_string(record->pid) + ")");
        if (!waitReadable(pidfd.get(), static_cast<int>(wait_ms))) {
            syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0);
            waitReadable(pidfd.get(), 5000);
        }
    }
    // Its lock and its port go when its last fd closes.
    for (int i = 0; i < 250 && dir.live(name); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (dir.live(name)) return Error::message("\"" + name + "\" is still running after SIGKILL");
    return true;
}

namespace {

std::vector<std::string> splitNul(const std::string& bytes) {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t i = 0; i < bytes.size(); ++i)
        if (bytes[i] == '\0') {
            out.push_back(bytes.substr(start, i - start));
            start = i + 1;
        }
    return out;
}

// The NAME a `stockade serve` command line serves under: --name, else
// dev-PORT (SPEC §7); empty when `args` is not such a command line.
std::string servedName(const std::vector<std::string>& args) {
    if (args.size() < 2 || args[1] != "serve") return "";
    std::string name, port;
    for (size_t i = 2; i < args.size() && args[i] != "--"; ++i) {
        for (auto [flag, value] : {std::pair{"--name", &name}, std::pair{"--port", &port}}) {
            const std::string with = std::string(flag) + "=";
            if (args[i] == flag && i + 1 < args.size())
                *value = args[i + 1];
            else if (args[i].starts_with(with))
                *value = args[i].substr(with.size());
        }
    }
    if (!name.empty()) return name;
    return port.empty() ? "" : "dev-" + port;
}

}  // namespace

std::optional<pid_t> unrecordedSupervisor(const std::string& name) {
    // By /proc/PID/status and cmdline, which stay readable when a process is
    // not dumpable (the supervisor is not: supervisor_hardening.h); its exe
    // link and the owner of /proc/PID do not.
    std::vector<std::pair<pid_t, pid_t>> matches;  // pid, parent
    DIR* d = opendir("/proc");
    if (!d) return std::nullopt;
    const std::string uid_line =
        "\nUid:\t" + std::to_string(getuid()) + "\t" + std::to_string(geteuid()) + "\t";
    while (dirent* e = readdir(d)) {
        const pid_t pid = std::atoi(e->d_name);
        if (pid <= 0 || pid == getpid()) continue;
        const std::string dir = std::string("/proc/") + e->d_name;
        auto status = readSmallFile(AT_FDCWD, (dir + "/status").c_str(), dir + "/status", 16384);
        if (!status || !status->content.starts_with("Name:\tstockade\n") ||
            status->content.find(uid_line) == std::string::npos)
            continue;
        auto cmdline =
            readSmallFile(AT_FDCWD, (dir + "/cmdline").c_str(), dir + "/cmdline", size_t{1} << 20);
        if (!cmdline || servedName(splitNul(cmdline->content)) != name) continue;
        pid_t parent = 0;
        if (size_t at = status->content.find("\nPPid:\t"); at != std::string::npos)
            parent = std::atoi(status->content.c_str() + at + 7);
        matches.emplace_back(pid, parent);
    }
    closedir(d);
    // The supervisor is the match whose parent is not one: the sandbox's
    // init, as the host sees it, may be a fork of it with its command line.
    for (const auto& [pid, parent] : matches)
        if (std::none_of(matches.begin(), matches.end(),
                         [&](const auto& other) { return other.first == parent; }))
            return pid;
    return std::nullopt;
}

}  // namespace stockade
