#include "common.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace probe {

// Output goes straight to fd 1 with write(2), one line per call, so that a
// host-side reader sees each line the moment it is printed (sleep-with-token
// and daemonize are read while the probe is still running).
void emit(std::string_view key, std::string_view value) {
    std::string line;
    line.reserve(key.size() + value.size() + 2);
    line.append(key).append("=").append(value).append("\n");
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
        const ssize_t n = ::write(STDOUT_FILENO, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        p += n;
        left -= static_cast<size_t>(n);
    }
}

std::string errName(int err) {
    if (err == 0) return "ok";
    if (const char* name = strerrorname_np(err)) return name;
    return "errno" + std::to_string(err);
}

void emitResult(long rc, int err) {
    emit("result", rc < 0 ? errName(err) : "ok");
}

int reportCall(long rc) {
    emitResult(rc, errno);
    return 0;
}

int reportOpened(long fd) {
    emitResult(fd, errno);
    if (fd >= 0) ::close(static_cast<int>(fd));
    return 0;
}

void emitContent(std::string_view data) {
    emit("bytes", std::to_string(data.size()));
    emit("content", escape(data));
}

int readSome(const char* path, std::string& out, size_t limit) {
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return -errno;
    out.clear();
    char buf[4096];
    int rc = 0;
    while (out.size() < limit) {
        const ssize_t n = ::read(fd, buf, std::min(sizeof buf, limit - out.size()));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return rc;
}

std::string readOrEmpty(const char* path) {
    std::string s;
    if (readSome(path, s, 1 << 20) < 0) s.clear();
    return s;
}

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> fields;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find(separator, start);
        if (end == std::string::npos) end = text.size();
        fields.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return fields;
}

std::vector<std::string> statFields(const std::string& path) {
    const std::string stat = readOrEmpty(path.c_str());
    const size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 > stat.size()) return {};
    return split(stat.substr(close + 2), ' ');
}

int listNames(const char* dir, std::vector<std::string>& names) {
    DIR* d = ::opendir(dir);
    if (d == nullptr) return -errno;
    names.clear();
    while (const dirent* e = ::readdir(d)) {
        const std::string_view name = e->d_name;
        if (name != "." && name != "..") names.emplace_back(name);
    }
    ::closedir(d);
    return 0;
}

void sleepSeconds(int seconds) {
    timespec left{seconds, 0};
    while (::nanosleep(&left, &left) < 0 && errno == EINTR) {
    }
}

}  // namespace probe
