// Who the probe is, which capabilities it holds, and whether it can raise
// either: every attempt here changes only this process if it works.
#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "actions.h"
#include "common.h"

namespace probe {

int ids(const Args&) {
    uid_t r, e, s;
    gid_t rg, eg, sg;
    ::getresuid(&r, &e, &s);
    ::getresgid(&rg, &eg, &sg);
    emit("uid", std::to_string(r));
    emit("euid", std::to_string(e));
    emit("suid", std::to_string(s));
    emit("gid", std::to_string(rg));
    emit("egid", std::to_string(eg));
    emit("sgid", std::to_string(sg));
    gid_t groups[256];
    const int n = ::getgroups(256, groups);
    std::string list;
    for (int i = 0; i < n; ++i) list += (i ? "," : "") + std::to_string(groups[i]);
    emit("groups", list);
    return 0;
}

// The capability, no_new_privs and seccomp lines of /proc/self/status, and
// the securebits as the kernel reports them.
int caps(const Args&) {
    for (const std::string& line : split(readOrEmpty("/proc/self/status"), '\n')) {
        const size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string key = line.substr(0, colon);
        if (key.rfind("Cap", 0) == 0 || key == "NoNewPrivs" || key == "Seccomp") {
            const size_t start = line.find_first_not_of(" \t", colon + 1);
            emit(key, start == std::string::npos ? "" : line.substr(start));
        }
    }
    const int bits = ::prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
    emit("securebits", std::to_string(bits));
    emit("dumpable", std::to_string(::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)));
    return 0;
}

int setuid0(const Args&) {
    const int rc = ::setuid(0);
    emitResult(rc, errno);
    emit("uid", std::to_string(::getuid()));
    return 0;
}

int setgid0(const Args&) {
    return reportCall(::setgid(0));
}

int setgroupsEmpty(const Args&) {
    return reportCall(::setgroups(0, nullptr));
}

// Asks for every capability in the effective, permitted and inheritable sets.
int capsetRaise(const Args&) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2];
    for (auto& d : data) d = {0xffffffffu, 0xffffffffu, 0xffffffffu};
    return reportCall(::syscall(SYS_capset, &header, data));
}

int securebitsClear(const Args&) {
    return reportCall(::prctl(PR_SET_SECUREBITS, 0, 0, 0, 0));
}

int ambientRaise(const Args&) {
    return reportCall(::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0));
}

}  // namespace probe
