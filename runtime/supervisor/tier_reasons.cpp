#include "runtime/supervisor/tier_reasons.h"

#include <errno.h>
#include <unistd.h>

#include <fstream>

namespace stockade {

namespace {

std::string firstLine(const char* path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

}  // namespace

std::string userNamespaceRefusalReason(int err) {
    if (err == ENOSPC) {
        std::string max = firstLine("/proc/sys/user/max_user_namespaces");
        return "user.max_user_namespaces is " + (max.empty() ? std::string("exhausted") : max) +
               " (ENOSPC: no user namespace may be created)";
    }
    if (getuid() != 0 && firstLine("/proc/sys/kernel/unprivileged_userns_clone") == "0")
        return "kernel.unprivileged_userns_clone is 0: only root may create user namespaces";
    if (err == ENOSYS)
        return "clone3 is answered ENOSYS, as a container's seccomp profile (Docker's default) "
               "answers it, and user namespaces with it";
    return "clone3(CLONE_NEWUSER) is refused (" + std::string(err == EINVAL ? "EINVAL" : "EPERM") +
           "): a seccomp profile (Docker's and Kubernetes' default profiles refuse it) or an "
           "LSM denies creating user namespaces";
}

std::string userNamespaceRefusalFix(int err) {
    if (err == ENOSPC)
        return "sysctl -w user.max_user_namespaces=15000 (keep it in /etc/sysctl.d/); inside an "
               "outer user namespace, raise it there";
    if (getuid() != 0 && firstLine("/proc/sys/kernel/unprivileged_userns_clone") == "0")
        return "sysctl -w kernel.unprivileged_userns_clone=1 (keep it in /etc/sysctl.d/)";
    return "in a container, start it with a seccomp profile that allows clone, clone3 and "
           "unshare with CLONE_NEWUSER (docker run --security-opt seccomp=PROFILE, or "
           "seccomp=unconfined; in Kubernetes, securityContext.seccompProfile)";
}

bool looksLikeUnprivilegedUserNamespace(int err) {
    return (err == EPERM || err == EACCES) && geteuid() != 0 &&
           firstLine("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1";
}

}  // namespace stockade
