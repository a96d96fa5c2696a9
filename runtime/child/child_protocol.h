// The fixed-size messages the child side sends the supervisor over the
// close-on-exec SOCK_SEQPACKET sync socket. Fixed-size because the child may
// not allocate; one message per datagram so concurrent writers (init and the
// command before exec) never interleave.
#pragma once

#include <sys/types.h>
#include <cstddef>
#include <cstdint>

#include "namespaces/call_note_in_child.h"

namespace stockade {

// Each step of the child's setup. The order they run in is the table kSteps
// in runtime/child/child_in_child.cpp (read through runtime/child/child_setup.h), which
// lists them in this order; a static_assert holds the two together. A failure names its step and,
// where the step knows it, the call; the supervisor turns it into "stockade: <step>: <call>:
// ENAME".
enum class ChildStage : uint32_t {
    // init (PID 1), from the clone to the command's start
    StartNetworkHelper,
    PrivateMounts,
    OpenSources,
    WaitForGo,
    SetIds,
    ParentDeath,
    UserNamespaceLimits,
    BuildRoot,
    CreateContainerHooks,
    SealRoot,
    PivotRoot,
    LandlockRules,
    Loopback,
    CloseFds,
    Hostname,
    Dumpable,
    WipeMemory,
    JoinCgroups,
    CgroupNamespace,
    ForkCommand,
    // the command (PID 2, or an OCI container's PID 1 of its own pid
    // namespace), from its clone to execve
    CommandProc,
    NewSession,
    Stdio,
    Workdir,
    Rlimits,
    Personality,
    CloseOnExec,
    DropCapabilities,
    NoNewPrivs,
    LandlockRestrict,
    FindExecutable,
    AwaitStart,
    Seccomp,
    StartContainerHooks,
    Exec,
    // init again, once the command has exec'ed
    InitCloseFds,
    InitDropPrivileges,
    InitNoNewPrivs,
    // Not a step of its own: DropCapabilities's first call (securebits),
    // named apart when it is the one that failed.
    Securebits,
};
inline constexpr int kChildStageCount = static_cast<int>(ChildStage::Securebits) + 1;

enum class ChildMessageKind : uint32_t {
    SetupFailed = 1,  // setup could not complete; nothing ran
    ExecFailed = 2,   // the command could not be executed (err: ENOENT, EACCES…)
    Finished = 3,     // the command ended; wait_status and stragglers are set
    StepReport = 4,   // `stockade check`: a step ran; err is its errno (0: it worked)
    Parked = 5,       // an OCI container's command is set up and waits for `start`
};

struct ChildMessage {
    ChildMessageKind kind;
    ChildStage stage;
    int32_t err;          // errno of the failed step
    int32_t op_index;     // the mount op that failed, or -1
    int32_t wait_status;  // Finished: the command's wait(2) status
    uint32_t stragglers;  // Finished: processes killed after the command ended
    // SetupFailed: the call that failed with its arguments ("close_range(3,
    // ~0)", "mount(\"/usr\" -> \"/tmp/root/usr\", MS_BIND|MS_REC)"),
    // NUL-terminated, cut to fit; empty when the step does not say.
    char call[ns::kCallNoteSize];
};

// Copies `call` into the message, cut to fit; async-signal-safe.
inline void setCallInChild(ChildMessage& msg, const char* call) noexcept {
    size_t i = 0;
    for (; call != nullptr && call[i] != '\0' && i + 1 < sizeof(msg.call); ++i)
        msg.call[i] = call[i];
    msg.call[i] = '\0';
}

const char* describeStage(ChildStage stage);

// The supervisor's side: the next whole message from the child, without
// blocking; recv's result (sizeof(ChildMessage), 0 at end, -1 with errno).
// A child that exits with bytes of ours unread ("go", "placed") makes the
// kernel report ECONNRESET once, before the messages it queued for us (its
// failure among them): that report is passed over, so no caller takes it
// for the end and loses the cause.
ssize_t receiveChildMessage(int sync_fd, ChildMessage& msg);

// "Placed": the supervisor's second byte on the sync socket, once the
// sandbox's network is connected and its v1 cgroup leaves exist, carrying
// one `tasks` fd per leaf (SandboxCgroups::makeV1Leaves). Returns 0 or an
// errno.
int sendPlacement(int sync_fd, const int* tasks_fds, int count);

// The child's side: waits for "placed" and writes "0" (this thread) into
// each `tasks` fd, so the command and all it starts are born in the leaves.
// Returns 0, an errno, or -1 when the supervisor is gone.
int joinCgroupsInChild(int sync_fd) noexcept;
inline constexpr int kMaxPlacementFds = 2;

}  // namespace stockade
