#include "runtime/cgroups/cgroup_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "base/unique_fd.h"

namespace stockade {

Result<std::string> readCgroupFile(const std::string& path) {
    UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return Error::fromErrno("open(\"" + path + "\")");
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd.get(), buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
    if (n < 0) return Error::fromErrno("read(\"" + path + "\")");
    return out;
}

std::string readCgroupFileOr(const std::string& path) {
    auto text = readCgroupFile(path);
    return text ? *text : std::string();
}

Status writeCgroupFile(const std::string& path, const std::string& value) {
    UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return Error::fromErrno("open(\"" + path + "\")");
    if (write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size()))
        return Error::fromErrno("write(\"" + path + "\", \"" + value + "\")");
    return okStatus();
}

Status removeCgroupDir(const std::string& path, int attempts) {
    for (int attempt = 0;; ++attempt) {
        if (rmdir(path.c_str()) == 0 || errno == ENOENT) return okStatus();
        if (errno != EBUSY || attempt + 1 >= attempts)
            return Error::fromErrno("rmdir(\"" + path + "\")");
        usleep(1000);
    }
}

std::vector<std::string> directoryEntries(const std::string& path) {
    std::vector<std::string> names;
    DIR* dir = opendir(path.c_str());
    if (!dir) return names;
    while (dirent* entry = readdir(dir)) {
        std::string name = entry->d_name;
        if (name != "." && name != "..") names.push_back(std::move(name));
    }
    closedir(dir);
    return names;
}

std::string findCgroup2Mount(const std::string& mountinfo) {
    std::istringstream lines(mountinfo);
    std::string line;
    while (std::getline(lines, line)) {
        auto dash = line.find(" - ");
        if (dash == std::string::npos) continue;
        std::istringstream tail(line.substr(dash + 3));
        std::string fstype;
        tail >> fstype;
        if (fstype != "cgroup2") continue;
        std::istringstream head(line.substr(0, dash));
        std::string id, parent, devno, root, mount_point;
        head >> id >> parent >> devno >> root >> mount_point;
        return mount_point;
    }
    return "";
}

std::optional<std::string> cgroupPathOf(const std::string& proc_cgroup,
                                        const std::string& controller) {
    // Each line is "hierarchy-id:controller,list:path"; the v2 line is "0::path".
    std::istringstream lines(proc_cgroup);
    std::string line;
    while (std::getline(lines, line)) {
        auto first = line.find(':');
        auto second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) continue;
        std::string controllers = line.substr(first + 1, second - first - 1);
        std::string path = line.substr(second + 1);
        if (controller.empty()) {
            if (line.compare(0, first, "0") == 0 && controllers.empty()) return path;
            continue;
        }
        for (char& c : controllers)
            if (c == ',') c = ' ';
        if (hasWord(controllers, controller)) return path;
    }
    return std::nullopt;
}

uint64_t keyedValue(const std::string& text, const std::string& key) {
    std::istringstream lines(text);
    std::string k;
    uint64_t v;
    while (lines >> k >> v)
        if (k == key) return v;
    return 0;
}

std::optional<uint64_t> numberIn(const std::string& text) {
    if (text.empty() || text[0] < '0' || text[0] > '9') return std::nullopt;
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (errno != 0 || (*end != '\0' && *end != '\n')) return std::nullopt;
    return static_cast<uint64_t>(v);
}

bool hasWord(const std::string& text, const std::string& word) {
    std::istringstream in(text);
    std::string w;
    while (in >> w)
        if (w == word) return true;
    return false;
}

std::vector<pid_t> pidsIn(const std::string& procs) {
    std::vector<pid_t> pids;
    std::istringstream in(procs);
    long pid;
    // 0 is a task the reader's pid namespace cannot see: never a pid to
    // signal (kill(0) is the caller's own process group).
    while (in >> pid)
        if (pid > 0) pids.push_back(static_cast<pid_t>(pid));
    return pids;
}

pid_t ownerOf(const std::string& name, const std::string& prefix) {
    if (name.compare(0, prefix.size(), prefix) != 0) return 0;
    std::string rest = name.substr(prefix.size());
    auto digits = rest.find_first_not_of("0123456789");
    if (digits == 0 || rest.empty()) return 0;
    if (digits != std::string::npos) {
        // "<pid>-<n>": a counter after the dash, nothing else.
        if (rest[digits] != '-' || digits + 1 == rest.size() ||
            rest.find_first_not_of("0123456789", digits + 1) != std::string::npos)
            return 0;
    }
    long pid = std::strtol(rest.substr(0, digits).c_str(), nullptr, 10);
    return pid > 0 && pid <= 0x3fffffff ? static_cast<pid_t>(pid) : 0;
}

bool processExists(pid_t pid) {
    return kill(pid, 0) == 0 || errno == EPERM;
}

}  // namespace stockade
