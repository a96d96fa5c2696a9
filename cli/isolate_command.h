// `stockade isolate [--hide PATH]... [--] COMMAND [ARG...]`: run inside a
// sandbox (the oracle mounts stockade's own binary at /.stockade/isolate and
// names it in STOCKADE_ISOLATE), it starts COMMAND one level down, in a
// Landlock domain nested in the sandbox's, so that a held test's runner can
// run candidate code without handing it the runner's own process (issue 25).
//
// What the nesting gives, all of it the kernel's doing (landlock(7)):
//   - ptrace and /proc/PID/mem, /proc/PID/fd, /proc/PID/environ of the
//     runner: refused, since a domain may not reach a process outside it
//     (ptrace_may_access, checked by Landlock's ptrace hook);
//   - signals to the runner and every process outside: refused (ABI 6's
//     LANDLOCK_SCOPE_SIGNAL), and so are abstract unix sockets made outside;
//   - the report directory (STOCKADE_REPORT_DIR) and every --hide PATH: no
//     access at all, since the nested ruleset grants the top of the tree
//     entry by entry and leaves those out;
//   - the runner's open files: closed before exec, all but 0, 1 and 2.
// process_vm_readv/writev are already refused by the sandbox's filter. The
// whole sandbox's guarantees still hold below: this only narrows.
#pragma once

#include <string>
#include <vector>

namespace stockade {

// Returns only on failure (the exit status: 125 for an unusable request or a
// kernel that cannot nest, 126/127 when COMMAND cannot be run).
int isolateCommand(const std::vector<std::string>& args);

}  // namespace stockade
