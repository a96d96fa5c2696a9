#include "oci/state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/proc_stat.h"
#include "base/small_file.h"
#include "namespaces/user.h"
#include "oci/cgroups.h"
#include "oci/idmapped_root.h"

namespace stockade::oci {

using nlohmann::json;

namespace {

constexpr size_t kMaxRecordBytes = 1 << 20;

Status makeDirs(const std::string& path) {
    std::string sofar;
    for (size_t i = 1; i <= path.size(); ++i) {
        if (i < path.size() && path[i] != '/') continue;
        sofar = path.substr(0, i);
        if (mkdir(sofar.c_str(), 0700) < 0 && errno != EEXIST)
            return Error::fromErrno("mkdir(\"" + sofar + "\")");
    }
    return okStatus();
}

}  // namespace

bool isHostRoot() {
    if (geteuid() != 0) return false;
    std::ifstream map("/proc/self/uid_map");
    uint64_t inside = 1, outside = 1, count = 0;
    if (!(map >> inside >> outside >> count)) return false;
    return inside == 0 && outside == 0 && count == 4294967295ull;
}

// How many ids from 0 this process's user namespace maps without a gap
// (`/proc/self/uid_map` or `gid_map` read from the inside view), 0 where it
// cannot be read.
namespace {

uint64_t idsMappedFromZero(const char* file) {
    const auto ranges = ns::ownMapRanges(file);
    // The container's map repeats these ranges, a line each, and the kernel
    // takes one page of map text: a caller of many ranges (the kernel allows
    // 340) gets its own id alone rather than a write that fails.
    if (ranges.size() > 64) return 0;
    uint64_t covered = 0;
    for (const auto& [start, n] : ranges) {
        if (start > covered) break;
        covered = std::max(covered, start + n);
    }
    return covered;
}

}  // namespace

// Rootless podman runs the runtime as uid 0 of a user namespace of its own
// that maps the caller's subordinate ids too (`0 1000 1`, `1 100000
// 65536`), and runc's container then has them all. stockade still makes
// the container a user namespace of its own (G3), and from such a caller,
// which holds CAP_SETUID and CAP_SETGID over its namespace, maps it the
// same ids, 0..N-1 onto 0..N-1 of the caller's: `--user 1000` and files of
// other ids work as under runc, and nothing of the host beyond what the
// caller's namespace holds is reached. 1 (the caller's id alone) otherwise.
uint32_t callerNamespaceWidth() {
    if (geteuid() != 0 || getegid() != 0) return 1;
    std::ifstream status("/proc/self/status");
    std::string line;
    uint64_t effective = 0;
    while (std::getline(status, line))
        if (line.starts_with("CapEff:")) effective = std::strtoull(line.c_str() + 7, nullptr, 16);
    const uint64_t needed = (uint64_t{1} << CAP_SETUID) | (uint64_t{1} << CAP_SETGID);
    if ((effective & needed) != needed) return 1;
    const uint64_t width = std::min(idsMappedFromZero("uid_map"), idsMappedFromZero("gid_map"));
    return width > 1 && width < UINT32_MAX ? static_cast<uint32_t>(width) : 1;
}

Result<std::string> defaultRoot() {
    if (isHostRoot()) return std::string("/run/stockade-oci");
    const char* xdg = getenv("XDG_RUNTIME_DIR");
    if (!xdg || xdg[0] != '/')
        return Error::message("XDG_RUNTIME_DIR is not set: give --root for a rootless runtime");
    return std::string(xdg) + "/stockade-oci";
}

Status validateId(const std::string& id) {
    if (id.empty()) return Error::message("container id cannot be empty");
    if (id.size() > kMaxIdLength)
        return Error::message("invalid id format: longer than " + std::to_string(kMaxIdLength));
    if (id == "." || id == "..") return Error::message("invalid id format: " + id);
    for (unsigned char c : id)
        if (c == '/' || c < 0x20 || c == 0x7f) return Error::message("invalid id format: " + id);
    return okStatus();
}

const char* statusName(Status3 status) {
    switch (status) {
        case Status3::Created:
            return "created";
        case Status3::Running:
            return "running";
        case Status3::Paused:
            return "paused";
        case Status3::Stopped:
            return "stopped";
    }
    return "stopped";
}

Result<UniqueFd> openRoot(const std::string& root, bool create) {
    if (root.empty() || root[0] != '/') return Error::message("--root must be an absolute path");
    if (create)
        if (auto s = makeDirs(root); !s) return s.error();
    UniqueFd fd(open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return Error::fromErrno("open(\"" + root + "\")");
    return fd;
}

Result<UniqueFd> openContainer(int root_fd, const std::string& id) {
    UniqueFd fd(openat(root_fd, id.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return Error::fromErrno("open(\"" + id + "\")");
    return fd;
}

std::string recordJson(const Record& r) {
    json doc = {{"id", r.id},
                {"pid", r.pid},
                {"start_time", r.start_time},
                {"bundle", r.bundle},
                {"rootfs", r.rootfs},
                {"created", r.created},
                {"annotations", r.annotations},
                {"cgroups", r.cgroups}};
    if (!r.profile.empty()) doc["stockadeProfile"] = r.profile;
    doc["enforced"] = r.enforced;
    json kills = json::array();
    for (const Record::Kill& k : r.kills)
        kills.push_back({{"signal", k.signal}, {"all", k.all}, {"time", k.time}});
    doc["kills"] = kills;
    if (r.monitor_pid > 0)
        doc["monitor"] = {{"pid", r.monitor_pid}, {"start_time", r.monitor_start_time}};
    if (r.end) {
        const Record::End& e = *r.end;
        doc["end"] = {{"reported", e.reported},
                      {"exitStatus", e.exit_status},
                      {"signal", e.signal},
                      {"coreDumped", e.core_dumped},
                      {"stragglers", e.stragglers},
                      {"failure", e.failure},
                      {"time", e.time}};
    }
    if (r.denials.counted || !r.denials.not_counted.empty()) {
        const Record::Denials& d = r.denials;
        json names = json::array();
        for (const auto& [name, count] : d.by_name) names.push_back({name, count});
        doc["denials"] = {{"counted", d.counted},     {"notCounted", d.not_counted},
                          {"listening", d.listening}, {"byName", names},
                          {"others", d.others},       {"total", d.total},
                          {"final", d.final}};
    }
    if (!r.hooks.empty()) doc["hooks"] = json::parse(hooksJson(r.hooks));
    return doc.dump();
}

Status writeRecord(int dir_fd, const Record& record) {
    // Written beside and renamed over: a reader sees the old record or the
    // new one, never half of one.
    const std::string text = recordJson(record);
    const char* tmp = "state.json.tmp";
    UniqueFd fd(openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) return Error::fromErrno("open(state.json.tmp)");
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = write(fd.get(), text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Error::fromErrno("write(state.json.tmp)");
        done += static_cast<size_t>(n);
    }
    if (fsync(fd.get()) < 0) return Error::fromErrno("fsync(state.json.tmp)");
    if (renameat(dir_fd, tmp, dir_fd, kStateFile) < 0)
        return Error::fromErrno("rename(state.json.tmp, state.json)");
    return okStatus();
}

namespace {

// delete removes these: only directories of the cgroup tree, by a path
// with no way up out of it.
bool isCgroupTreeDir(const std::string& dir) {
    return dir.starts_with("/sys/fs/cgroup/") && !hasDotDotComponent(dir) &&
           dir.find("/./") == std::string::npos && !dir.ends_with("/.");
}

}  // namespace

Result<Record> readRecord(int dir_fd, const std::string& id) {
    auto file = readSmallFile(dir_fd, kStateFile, id + "/state.json", kMaxRecordBytes);
    if (!file) return file.error();
    json doc = json::parse(file->content, nullptr, false);
    auto bad = [&] { return Error::message(id + "/state.json: not a container record"); };
    if (doc.is_discarded() || !doc.is_object()) return bad();
    Record r;
    try {
        r.id = doc.at("id").get<std::string>();
        r.pid = doc.at("pid").get<pid_t>();
        r.start_time = doc.at("start_time").get<uint64_t>();
        r.bundle = doc.at("bundle").get<std::string>();
        r.rootfs = doc.value("rootfs", "");
        r.created = doc.value("created", "");
        if (doc.contains("cgroups")) r.cgroups = doc["cgroups"].get<std::vector<std::string>>();
        if (doc.contains("stockadeProfile")) r.profile = doc["stockadeProfile"].get<std::string>();
        if (doc.contains("enforced"))
            r.enforced = doc["enforced"].get<std::map<std::string, std::string>>();
        if (doc.contains("kills"))
            for (const json& k : doc["kills"])
                r.kills.push_back({k.at("signal").get<int>(), k.at("all").get<bool>(),
                                   k.at("time").get<std::string>()});
        if (doc.contains("monitor")) {
            r.monitor_pid = doc["monitor"].at("pid").get<pid_t>();
            r.monitor_start_time = doc["monitor"].at("start_time").get<uint64_t>();
        }
        if (doc.contains("end")) {
            const json& e = doc["end"];
            r.end =
                Record::End{e.at("reported").get<bool>(),       e.at("exitStatus").get<int>(),
                            e.at("signal").get<int>(),          e.at("coreDumped").get<bool>(),
                            e.at("stragglers").get<uint32_t>(), e.at("failure").get<std::string>(),
                            e.at("time").get<std::string>()};
        }
        if (doc.contains("denials")) {
            const json& d = doc["denials"];
            r.denials.counted = d.at("counted").get<bool>();
            r.denials.not_counted = d.at("notCounted").get<std::string>();
            r.denials.listening = d.at("listening").get<bool>();
            for (const json& n : d.at("byName")) {
                if (r.denials.by_name.size() >= kMaxDenialNames) return bad();
                r.denials.by_name.emplace_back(n.at(0).get<std::string>(), n.at(1).get<uint64_t>());
            }
            r.denials.others = d.at("others").get<uint64_t>();
            r.denials.total = d.at("total").get<uint64_t>();
            r.denials.final = d.at("final").get<bool>();
        }
        if (doc.contains("annotations"))
            r.annotations = doc["annotations"].get<std::map<std::string, std::string>>();
        if (doc.contains("hooks")) {
            auto hooks = hooksFromJson(doc["hooks"].dump());
            if (!hooks) return bad();
            r.hooks = std::move(*hooks);
        }
    } catch (const json::exception&) {
        return bad();
    }
    if (r.id != id || r.pid <= 1 || r.monitor_pid < 0 || r.monitor_pid == 1) return bad();
    for (const std::string& dir : r.cgroups)
        if (!isCgroupTreeDir(dir)) return bad();
    return r;
}

std::vector<std::string> readPendingCgroups(int dir_fd) {
    auto file = readSmallFile(dir_fd, kCgroupsFile, kCgroupsFile, 64 * 1024);
    if (!file) return {};
    std::vector<std::string> out;
    std::istringstream lines(file->content);
    for (std::string line; std::getline(lines, line);) {
        if (!isCgroupTreeDir(line)) return {};
        out.push_back(line);
    }
    return out;
}

uint64_t processStartTime(pid_t pid) {
    auto stat = ProcStat::read(pid);
    if (!stat || stat->state() == 'Z' || stat->state() == 'X') return 0;
    return stat->startTime();
}

Status3 statusOf(int dir_fd, const Record& record) {
    uint64_t now = processStartTime(record.pid);
    if (now == 0 || now != record.start_time) return Status3::Stopped;
    if (containerCgroupsFrozen(record.cgroups)) return Status3::Paused;
    struct stat st;
    if (fstatat(dir_fd, kExecFifo, &st, AT_SYMLINK_NOFOLLOW) == 0) return Status3::Created;
    return Status3::Running;
}

Status removeContainer(int root_fd, const std::string& id) {
    UniqueFd dir(openat(root_fd, id.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    // The overlay's work directory first: its record goes with it.
    if (dir)
        if (auto work = readSmallFile(dir.get(), kOverlayWorkFile, kOverlayWorkFile, 8192))
            removeOverlayWork(work->content);
    if (dir)
        for (const char* name :
             {kExecFifo, kStateFile, "state.json.tmp", kConfigFile, kCgroupsFile, kOverlayWorkFile})
            if (unlinkat(dir.get(), name, 0) < 0 && errno != ENOENT)
                return Error::fromErrno(std::string("unlink(") + id + "/" + name + ")");
    if (unlinkat(root_fd, id.c_str(), AT_REMOVEDIR) < 0 && errno != ENOENT)
        return Error::fromErrno("rmdir(" + id + ")");
    return okStatus();
}

std::vector<std::string> listContainers(int root_fd) {
    std::vector<std::string> out;
    int fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return out;
    DIR* dir = fdopendir(fd);
    if (!dir) {
        close(fd);
        return out;
    }
    while (dirent* e = readdir(dir)) {
        std::string name = e->d_name;
        if (name == "." || name == ".." || !validateId(name)) continue;
        if (e->d_type == DT_DIR) out.push_back(name);
    }
    closedir(dir);
    std::sort(out.begin(), out.end());
    return out;
}

namespace {

// The refused calls by name as the monitor counted them (oci/monitor.h),
// with what the count covers: a monitor gone while the container runs
// (killed from outside) leaves the filter whole, the kernel answering what
// it would have sent ENOSYS, but counts no more.
json denialsJson(const Record& r, Status3 status) {
    const Record::Denials& d = r.denials;
    if (!d.counted) {
        std::string why = d.not_counted;
        auto filter = r.enforced.find("seccomp");
        if (why.empty())
            why = filter == r.enforced.end() || filter->second == "none" ? "no seccomp filter"
                                                                         : "not counted";
        return {{"counted", false}, {"why", why}};
    }
    json names = json::object();
    for (const auto& [name, count] : d.by_name) names[name] = count;
    json out = {{"counted", true}, {"syscalls", names}, {"others", d.others}, {"total", d.total}};
    out["answeredBy"] =
        "the monitor, holding the filter's listener: each refused call answered with the "
        "policy's errno, counted by name (at most " +
        std::to_string(kMaxDenialNames) + " names, the rest in others)";
    out["ifTheMonitorEnds"] =
        "the filter still refuses every call it refused: the kernel answers them ENOSYS "
        "instead of the policy's errno, and they are no longer counted";
    const bool monitor_alive =
        r.monitor_pid > 1 && processStartTime(r.monitor_pid) == r.monitor_start_time;
    std::string monitor;
    if (d.final)
        monitor = "final: counted until the container's last process was gone";
    else if (!monitor_alive && status != Status3::Stopped)
        monitor = "ended while the container runs: refusals since are answered ENOSYS, uncounted";
    else if (!monitor_alive)
        monitor = "ended before its last count: a lower bound";
    else if (status == Status3::Stopped)
        monitor = "the container stopped: the last count comes a moment after";
    else
        monitor = d.listening ? "answering" : "waiting for the command's listener (before start)";
    out["monitor"] = monitor;
    return out;
}

}  // namespace

std::string stateJson(const Record& r, Status3 status) {
    json doc = {{"ociVersion", "1.2.0"},
                {"id", r.id},
                {"status", statusName(status)},
                {"pid", status == Status3::Stopped ? 0 : r.pid},
                {"bundle", r.bundle},
                {"rootfs", r.rootfs},
                {"created", r.created},
                {"annotations", r.annotations},
                {"owner", ""}};  // runc's state leaves it empty; its list names it
    // stockade's own, beside runc's fields (clients ignore unknown ones).
    // The cgroup's counters are read now, from the container's own
    // directories (checked under /sys/fs/cgroup/ when the record was read;
    // the container cannot write them), until delete removes them.
    json ending = json::object();
    json kills = json::array();
    for (const Record::Kill& k : r.kills)
        kills.push_back({{"signal", k.signal}, {"all", k.all}, {"time", k.time}});
    ending["kills"] = kills;
    // The end as the monitor heard it from init (oci/monitor.h), once the
    // container stopped: the command's exit status or signal and the
    // stragglers init killed after it; or no report, init itself killed,
    // where the last SIGKILL this runtime sent is the cause it can name.
    if (r.end && status == Status3::Stopped) {
        const Record::End& e = *r.end;
        ending["reported"] = e.reported;
        ending["time"] = e.time;
        if (e.reported) {
            if (e.signal)
                ending["command"] = {{"signal", e.signal}, {"coreDumped", e.core_dumped}};
            else
                ending["command"] = {{"exitStatus", e.exit_status}};
            ending["stragglersKilled"] = e.stragglers;
            if (!e.failure.empty()) ending["failure"] = e.failure;
        } else {
            auto last_kill =
                std::find_if(r.kills.rbegin(), r.kills.rend(),
                             [](const Record::Kill& k) { return k.signal == SIGKILL; });
            ending["cause"] = last_kill != r.kills.rend()
                                  ? "init killed by signal 9, sent by kill at " + last_kill->time
                                  : std::string(
                                        "init ended without a report: killed from "
                                        "outside this runtime, or before the command ran");
        }
    }
    if (!r.cgroups.empty()) {
        CgroupCounters counters = readCgroupCounters(r.cgroups);
        if (counters.oom_kills) ending["oomKills"] = *counters.oom_kills;
        if (counters.pids_max) ending["pidsLimitHits"] = *counters.pids_max;
    }
    doc["stockade"] = {{"profile", r.profile.empty() ? "none" : r.profile},
                       {"enforced", r.enforced},
                       {"ending", ending},
                       {"denials", denialsJson(r, status)}};
    // The detached monitor's host pid (gone once the container has ended).
    if (r.monitor_pid > 0) doc["stockade"]["monitorPid"] = r.monitor_pid;
    return doc.dump(2);
}

int writePidFileAt(int dir, const std::string& name, const std::string& digits) {
    std::string tmp;
    int fd = -1;
    for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
        unsigned char random[6];
        if (getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) return EIO;
        char hex[13];
        for (size_t i = 0; i < sizeof random; ++i) snprintf(hex + 2 * i, 3, "%02x", random[i]);
        tmp = name + "." + hex;
        fd = openat(dir, tmp.c_str(),
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) return errno;
    }
    if (fd < 0) return EEXIST;
    const bool written =
        ::write(fd, digits.data(), digits.size()) == static_cast<ssize_t>(digits.size());
    const int write_err = written ? 0 : errno ? errno : EIO;
    close(fd);
    if (written && renameat(dir, tmp.c_str(), dir, name.c_str()) == 0) return 0;
    const int err = written ? errno : write_err;
    unlinkat(dir, tmp.c_str(), 0);  // only a file made here
    return err > 0 ? err : EIO;
}

}  // namespace stockade::oci
