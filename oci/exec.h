// `exec`: one more process in a running container (podman exec, runc's
// `exec --process F [--detach] [--pid-file P] [--tty --console-socket S]`).
// It joins every namespace of the container's init (setns(2) on a checked
// pidfd) and its cgroups, and is set up as the container's command was: the
// process's ids, cwd, rlimits and capabilities inside the container's user
// namespace, no_new_privs, the container's own seccomp filter (from its
// bundle's config.json) last before execve.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"

namespace stockade::oci {

struct ExecAsk {
    std::string process_file;       // --process: a runtime-spec process object
    std::vector<std::string> args;  // without --process: the command
    // Without --process the container's own process (its config's, as
    // create read it: env, cwd, user, groups, capabilities, rlimits...) is
    // the exec'd one's, as under runc, with these over it: --env appended,
    // --cwd, --user UID[:GID] (the container's gid without ":GID"),
    // --additional-gids added to the container's list.
    std::vector<std::string> env;
    std::string cwd;
    std::string user;
    std::vector<std::string> additional_gids;
    std::string pid_file;
    std::string console_socket;
    bool detach = false;
    bool tty = false;  // --tty, for a command given without --process
};

// Detached: 0 once the process has exec'ed (it is then the caller's
// subreaper's child). Otherwise its exit status (128+N for a signal).
Result<int> execInContainer(const std::string& root_dir, const std::string& id, const ExecAsk& ask);

}  // namespace stockade::oci
