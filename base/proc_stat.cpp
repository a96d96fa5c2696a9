#include "base/proc_stat.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/unique_fd.h"

namespace stockade {

std::optional<ProcStat> ProcStat::read(pid_t pid) {
    const std::string path =
        pid == 0 ? std::string("/proc/self/stat") : "/proc/" + std::to_string(pid) + "/stat";
    UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return std::nullopt;
    // The line is some 300 bytes: 52 numbers and a name of at most 15.
    char buf[1024];
    ssize_t n;
    do n = ::read(fd.get(), buf, sizeof(buf) - 1);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return std::nullopt;
    buf[n] = '\0';
    const char* close_paren = strrchr(buf, ')');
    if (!close_paren || close_paren[1] != ' ' || close_paren[2] == '\0') return std::nullopt;
    return ProcStat(std::string(close_paren + 2));
}

ProcStat::ProcStat(std::string after_name) : after_name_(std::move(after_name)) {
    state_ = after_name_.empty() ? 0 : after_name_[0];
}

uint64_t ProcStat::field(int number) const {
    if (number < 4) return 0;
    size_t at = 0;
    for (int f = 3; f < number; ++f) {
        at = after_name_.find(' ', at);
        if (at == std::string::npos) return 0;
        ++at;
    }
    const char* start = after_name_.c_str() + at;
    char* end = nullptr;
    errno = 0;
    unsigned long long value = strtoull(start, &end, 10);
    if (end == start || errno != 0 || (*end != ' ' && *end != '\n' && *end != '\0')) return 0;
    return value;
}

}  // namespace stockade
