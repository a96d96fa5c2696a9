// User namespace, child side: the body of the throwaway process that holds an
// idmapped mount's user namespace (namespaces/user.cpp). It shares the
// supervisor's memory (CLONE_VM), so it is async-signal-safe and sets no
// errno that a caller could see: it runs with every signal blocked.
#pragma once

namespace stockade::ns {

// `arg` points at the hold pipe's read and write ends. Closes its own copy of
// the write end, then blocks until the supervisor closes the other (EOF).
int holdUserNamespaceInChild(void* arg) noexcept;

}  // namespace stockade::ns
