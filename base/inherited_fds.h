// The file descriptors the process was started with, noted once at entry
// (cli/main.cpp), so that a name like /dev/fd/N from the command line can be
// held to the caller's own descriptors and never taken for one the process
// opened since (a held worktree, a lock, a cgroup file).
#pragma once

namespace stockade {

// Notes which descriptors are open now. Called first thing in main.
void noteInheritedFds() noexcept;

// Whether `fd` was open when noteInheritedFds ran; true for every fd when it
// never ran (a library client that did not ask).
bool wasInherited(int fd) noexcept;

}  // namespace stockade
