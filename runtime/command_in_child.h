// The command's process (PID 2 in the sandbox), child side: the last steps
// before execve, then execve. Async-signal-safe.
#pragma once

#include "runtime/child_plan.h"
#include "runtime/child_protocol.h"

namespace stockade {

// Reports a failure over the sync socket; safe from any child process.
void reportInChild(const ChildPlan& plan, ChildMessageKind kind, ChildStage stage, int err,
                   int op_index) noexcept;

[[noreturn]] void execCommandInChild(const ChildPlan& plan) noexcept;

}  // namespace stockade
