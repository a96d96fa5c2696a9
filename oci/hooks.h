// OCI hooks (runtime-spec config.md "POSIX-platform Hooks"): programs of the
// caller's config run on the host, in the runtime's namespaces, with the
// container's state JSON on their stdin. Run as runc runs them (its
// libcontainer/configs Command.Run): stdout and stderr are captured, not
// passed on (the shim and conmon read the runtime's own), and a failure's
// message carries them; `timeout` kills the hook past it. No bound is
// invented where the config gives none (runc has none), but the runtime
// never waits on the hook's pipes: it stops at the hook's exit, so a hook
// that ignores its stdin, or leaves a child holding its stdout, cannot hold
// the runtime after it has exited.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/unique_fd.h"
#include "runtime/child/child_plan.h"
#include "runtime/child/child_protocol.h"

namespace stockade::oci {

struct Hook {
    std::string path;               // absolute, on the host
    std::vector<std::string> args;  // args[0] is argv[0]; empty: argv is {path}
    std::vector<std::string> env;   // the hook's whole environment
    std::optional<int> timeout;     // seconds, > 0
};

// The hooks of a config, in the spec's order. prestart, createRuntime,
// poststart and poststop run here, on the host; createContainer and
// startContainer run in the container's namespaces, by the child side
// (runtime/child/hooks_in_child.h), from the ChildPlan create gives them.
struct Hooks {
    std::vector<Hook> prestart;
    std::vector<Hook> create_runtime;
    std::vector<Hook> create_container;
    std::vector<Hook> start_container;
    std::vector<Hook> poststart;
    std::vector<Hook> poststop;

    bool empty() const {
        return prestart.empty() && create_runtime.empty() && create_container.empty() &&
               start_container.empty() && poststart.empty() && poststop.empty();
    }
};

// Each hook's path names an executable regular file now: a bad path fails
// `create` before anything exists, naming the hook ("hooks.poststop[1].path").
// startContainer's paths are the container's, resolved only when it runs.
Status checkHookPaths(const Hooks& hooks);

// Where a hook runs: the namespaces (fd, CLONE_NEW*) its child enters
// first, for a runtime that has joined the container's by path before its
// clone (the hook belongs to the runtime's own).
struct HookPlace {
    std::vector<std::pair<int, int>> namespaces;
    // A signalfd of the client's SIGTERM, SIGINT and SIGHUP (blocked in
    // create): readable, the hook is killed as one past its timeout and
    // the run fails. -1: none.
    int cancel_fd = -1;
};

// Runs `list` in order with `state_json` on each one's stdin; stops at the
// first failure: "error running NAME hook #I (PATH): exit status N, stdout:
// ..., stderr: ..." (or "killed by signal", or "ran past its timeout of Ts").
Status runHooks(std::string_view name, const std::vector<Hook>& list, const std::string& state_json,
                const HookPlace& place = {});

// Runs every hook of `list` whatever the others did (poststart, poststop:
// the spec's failures are warnings); returns each failure's message.
std::vector<std::string> runHooksWarning(std::string_view name, const std::vector<Hook>& list,
                                         const std::string& state_json);

// The child side's copy of `list` (createContainer or startContainer,
// `name`), with `state` (the state document, its pid left for the child)
// on each one's stdin. With `open_on_host` each executable is opened here
// (O_PATH, into `held`, to be closed once the child is cloned), as the
// runtime's namespace resolves it, and run through that fd.
Result<ChildHookList> childHookList(const char* name, const std::vector<Hook>& list,
                                    nlohmann::json state, bool open_on_host,
                                    std::vector<UniqueFd>& held);

// The note of a child-side message (a createContainer or startContainer
// hook's failure, runtime/child/hooks_in_child.h): up to its NUL, every
// byte outside printable ASCII made '?' (the child did so already; this is
// the host's own check of what it reads).
std::string printableCallNote(const ChildMessage& msg);

// The record's copy of the hooks that run after create (poststart,
// poststop), as JSON text and back: `start` and `delete` run what create
// read, not what the bundle says later.
std::string hooksJson(const Hooks& hooks);
Result<Hooks> hooksFromJson(std::string_view text);

}  // namespace stockade::oci
