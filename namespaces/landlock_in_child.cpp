#include "namespaces/landlock_in_child.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "namespaces/call_note_in_child.h"

namespace stockade::ns {

int addSandboxRulesInChild(const LandlockPlan& plan, size_t* failed_rule) noexcept {
    if (!plan.active()) return 0;
    for (size_t i = 0; i < plan.sandbox_rules.size(); ++i) {
        const LandlockSandboxRule& rule = plan.sandbox_rules[i];
        int err = 0;
        int fd = open(rule.path.c_str(), O_PATH | O_CLOEXEC);
        if (fd < 0) {
            if (rule.optional && errno == ENOENT) continue;
            err = noteCallInChild("open").path(rule.path.c_str()).arg("O_PATH").done(errno);
        } else {
            // landlock_add_rule(2) refuses directory-only rights on a file.
            struct stat st;
            uint64_t allowed = rule.allowed_access;
            if (fstat(fd, &st) < 0) {
                err = noteCallInChild("fstat").path(rule.path.c_str()).done(errno);
            } else {
                if (!S_ISDIR(st.st_mode)) allowed &= kLandlockFileAccess;
                LandlockPathBeneathAttr attr{allowed, fd};
                if (allowed != 0 &&
                    sysLandlockAddRule(plan.ruleset.get(), kLandlockRulePathBeneath, &attr, 0) < 0)
                    err = noteCallInChild("landlock_add_rule")
                              .arg("LANDLOCK_RULE_PATH_BENEATH")
                              .path(rule.path.c_str())
                              .done(errno);
            }
            close(fd);
        }
        if (err != 0) {
            if (failed_rule) *failed_rule = i;
            return err;
        }
    }
    return 0;
}

int restrictSelfInChild(const LandlockPlan& plan) noexcept {
    if (!plan.active()) return 0;
    // The ruleset fd stays open: it is O_CLOEXEC, so the execve that follows
    // closes it, and closing it here would leave the plan's owner a stale
    // number in this copy of the parent's memory.
    return sysLandlockRestrictSelf(plan.ruleset.get(), 0) < 0
               ? noteCallInChild("landlock_restrict_self").arg("ruleset").number(0).done(errno)
               : 0;
}

}  // namespace stockade::ns
