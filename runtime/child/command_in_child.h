// The command's process (PID 2 in the sandbox), child side: the calls its
// steps of the setup table (runtime/child/child_in_child.cpp) make before execve,
// and execve. Async-signal-safe.
#pragma once

#include "runtime/child/child_plan.h"
#include "runtime/child/child_protocol.h"

namespace stockade {

// Reports a failure over the sync socket; safe from any child process.
void reportInChild(const ChildPlan& plan, ChildMessageKind kind, ChildStage stage, int err,
                   int op_index) noexcept;

// Every signal back to its default and none blocked: init blocked some to
// take them with sigwaitinfo, the supervisor may have ignored SIGPIPE.
void resetSignalsInChild() noexcept;
// stdin (/dev/null unless inherited), stdout and stderr in place; 0 or errno.
int setupStdioInChild(const ChildPlan& plan) noexcept;
// The plan's seccomp filter, with the denial listener handed to the
// supervisor when the plan asks for one; 0 or errno.
int installSeccompInChild(const ChildPlan& plan) noexcept;
// execvp(3) without its allocation; returns the errno that ended the search.
// With a path found beforehand (findExecutableInChild), exec's that one.
int execSearchInChild(const ChildPlan& plan) noexcept;
// An OCI container's execve that failed, said on its own stderr as runc
// says it ("exec /bin/x: no such file or directory"): no runtime is left to
// say it once `start` has returned, and the exit status alone (127) does
// not tell a missing file from a missing #! interpreter.
void sayExecFailedInChild(const ChildPlan& plan, int err) noexcept;
// The search alone, as execvp would walk it, into plan.exec_path_storage:
// the first PATH entry that is an executable regular file; 0, or ENOENT or
// EACCES as execvp would have ended. A no-op without the storage.
int findExecutableInChild(ChildPlan& plan) noexcept;

}  // namespace stockade
