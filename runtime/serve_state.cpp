#include "runtime/serve_state.h"

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
#include "runtime/result.h"
#include "runtime/small_file.h"
#include "runtime/text_safety.h"

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

namespace {

// A runtime directory of this user's own: $XDG_RUNTIME_DIR, or where
// pam_systemd makes it (/run/user/UID), which a shell opened without a login
// session (su, sudo -u, cron, a CI agent) lacks in its environment.
// A runtime directory that is the user's own, and its identity.
struct RuntimeDir {
    std::string path;
    dev_t dev;
    ino_t ino;
};
std::optional<RuntimeDir> ownRuntimeDir(const char* dir, uid_t uid) {
    struct stat st;
    if (!dir || dir[0] != '/' || stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid)
        return std::nullopt;
    return RuntimeDir{dir, st.st_dev, st.st_ino};
}

// Every place this user's servers may be recorded, the one to use first;
// one directory named twice ("/run/user/1000/", a link to it) is listed once.
std::vector<std::string> candidatePaths() {
    uid_t uid = geteuid();
    if (uid == 0) return {"/run/stockade"};
    const std::string systemd = "/run/user/" + std::to_string(uid);
    std::vector<RuntimeDir> dirs;
    for (const auto& dir :
         {ownRuntimeDir(std::getenv("XDG_RUNTIME_DIR"), uid), ownRuntimeDir(systemd.c_str(), uid)})
        if (dir && std::none_of(dirs.begin(), dirs.end(), [&](const RuntimeDir& seen) {
                return seen.dev == dir->dev && seen.ino == dir->ino;
            }))
            dirs.push_back(*dir);
    std::vector<std::string> paths;
    for (const RuntimeDir& dir : dirs) paths.push_back(dir.path + "/stockade");
    paths.push_back("/tmp/stockade-" + std::to_string(uid));
    return paths;
}

Status checkPrivate(const std::string& path, uid_t uid) {
    struct stat st;
    if (lstat(path.c_str(), &st) < 0) return Error::fromErrno("lstat(\"" + path + "\")");
    if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077) != 0) {
        std::ostringstream why;
        why << "the state directory " << path << " is not private to uid " << uid << " (owner "
            << st.st_uid << ", mode " << std::oct << (st.st_mode & 07777)
            << "); remove it and retry";
        return Error::message(why.str());
    }
    return okStatus();
}

}  // namespace

std::vector<StateDir> StateDir::others(const StateDir& primary) {
    std::vector<StateDir> out;
    for (const std::string& path : candidatePaths()) {
        struct stat st;
        if (path == primary.path() || lstat(path.c_str(), &st) < 0) continue;
        if (checkPrivate(path, geteuid())) out.push_back(StateDir(path));
    }
    return out;
}

std::vector<StateDir> StateDir::all(const StateDir& primary) {
    std::vector<StateDir> out{primary};
    for (StateDir& other : others(primary)) out.push_back(std::move(other));
    return out;
}

Result<StateDir> StateDir::open() {
    uid_t uid = geteuid();
    std::string path = candidatePaths().front();
    if (mkdir(path.c_str(), 0700) < 0 && errno != EEXIST)
        return Error::fromErrno("mkdir(\"" + path + "\") for the dev servers' state, as uid " +
                                std::to_string(uid));
    if (Status s = checkPrivate(path, uid); !s) return s.error();
    return StateDir(path);
}

Result<UniqueFd> StateDir::lock(const std::string& name) const {
    auto fd = lockFileExclusive(lockPath(name), true);
    if (!fd && fd.error().errnum() == EWOULDBLOCK)
        return Error::message("a dev server named \"" + name + "\" is already running");
    return fd;
}

bool StateDir::live(const std::string& name) const {
    auto fd = lockFileExclusive(lockPath(name), false);
    if (fd) {
        release(name, std::move(*fd));
        return false;
    }
    if (fd.error().errnum() == ENOENT) {
        unlink(recordPath(name).c_str());  // a record without a lock is stale
        return false;
    }
    return true;
}

void StateDir::release(const std::string& name, UniqueFd lock) const {
    unlink(recordPath(name).c_str());
    unlink(lockPath(name).c_str());
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
             {"log", logPath(r.name)}};
    return writeFileAtomically(recordPath(r.name), jsonText(doc) + "\n");
}

std::optional<ServiceRecord> StateDir::read(const std::string& name) const {
    // A sandbox that could write here may have left a link, a FIFO or a
    // huge file under the name; none of them is a record.
    const std::string path = recordPath(name);
    auto file = readSmallFile(AT_FDCWD, path.c_str(), path, kMaxRecordBytes);
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
        return r;
    } catch (const json::exception&) {
        return std::nullopt;
    }
}

std::vector<ServiceRecord> StateDir::list() const {
    std::vector<std::string> names;
    if (DIR* d = opendir(path_.c_str())) {
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

// The pid of the process that marked itself the holder of the lock file at
// `path` (StateDir::markHolder), in this process's pid namespace; nullopt
// when none did.
std::optional<pid_t> markedHolder(const std::string& path) {
    UniqueFd fd(open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
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
        if (markedHolder(dir.lockPath(name)) != record->pid)
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

}  // namespace stockade
