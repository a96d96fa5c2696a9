// Helpers shared by the harness's own .cpp files; not for the tests.
#pragma once

#include <grp.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace stockade::itest::detail {

inline std::string errnoText(int err) {
    const char* name = strerrorname_np(err);
    return name != nullptr ? name : "errno " + std::to_string(err);
}

// Drops the calling (forked) process to uid/gid with no supplementary groups.
// Async-signal-safe; returns false with errno set on failure.
inline bool dropToInChild(uid_t uid, gid_t gid) {
    if (::getuid() == uid && ::geteuid() == uid) return true;
    return ::setgroups(0, nullptr) == 0 && ::setresgid(gid, gid, gid) == 0 &&
           ::setresuid(uid, uid, uid) == 0;
}

inline void writeAllInChild(int fd, const char* text) {
    (void)!::write(fd, text, strlen(text));
}

inline std::vector<char*> cStrings(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (std::string& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

}  // namespace stockade::itest::detail
