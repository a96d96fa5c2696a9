#include "runtime/supervisor/supervisor_hardening.h"

#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <climits>

namespace stockade {

Status hardenSupervisor(Policy& policy) {
    if (policy.seccomp != "default" && policy.seccomp != "none" && !policy.seccomp.empty() &&
        policy.seccomp[0] != '/') {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof(cwd))) return Error::fromErrno("getcwd()");
        policy.seccomp = std::string(cwd) + "/" + policy.seccomp;
    }
    const rlimit none{0, 0};
    if (setrlimit(RLIMIT_CORE, &none) < 0) return Error::fromErrno("setrlimit(RLIMIT_CORE, 0)");
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        return Error::fromErrno("prctl(PR_SET_DUMPABLE, 0)");
    if (chdir("/") < 0) return Error::fromErrno("chdir(\"/\")");
    return okStatus();
}

DumpableAcrossClone::DumpableAcrossClone() {
    was_non_dumpable_ = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0;
    if (was_non_dumpable_) prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

DumpableAcrossClone::~DumpableAcrossClone() {
    restore();
}

void DumpableAcrossClone::restore() {
    // Failure to go back is not possible for 0 (prctl(2): only the value is
    // checked); the call is made unconditionally rather than trusted.
    if (was_non_dumpable_) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    was_non_dumpable_ = false;
}

}  // namespace stockade
