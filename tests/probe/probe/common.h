// What the areas of stockade-probe share: the arguments an action gets, its
// output (`key=value` lines, errnos by name), and reading what the kernel
// shows in files and directories.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "escape.h"

namespace probe {

// An action's arguments, after the action's name; main checks their count.
using Args = std::vector<std::string>;

// Prints one `key=value` line at once.
void emit(std::string_view key, std::string_view value);

// "ok" for 0, else the errno's symbolic name ("EROFS").
std::string errName(int err);

// Reports the outcome of a call that returned `rc` (negative on failure).
void emitResult(long rc, int err);

// emitResult for the call just made, whose errno is still the one it set;
// returns the action's exit status: `return reportCall(::chroot("/"));`.
int reportCall(long rc);

// reportCall for a call that returned an fd, which it closes.
int reportOpened(long fd);

// `bytes=` and `content=` (escaped) lines for data that was read.
void emitContent(std::string_view data);

// Reads at most `limit` bytes of `path`; returns -errno on failure.
int readSome(const char* path, std::string& out, size_t limit);

// A whole file of up to 1 MiB, or "" if it cannot be read.
std::string readOrEmpty(const char* path);

// `text` cut at each `separator`; one at the very end adds no empty field.
std::vector<std::string> split(const std::string& text, char separator);

// The fields of a /proc/PID/stat after the command name, which may hold
// spaces: state, ppid, pgrp, session, tty_nr, ... None if it cannot be read.
std::vector<std::string> statFields(const std::string& path);

// The names in `dir` but "." and ".."; returns -errno on failure.
int listNames(const char* dir, std::vector<std::string>& names);

// Sleeps `seconds`, resuming after a signal that interrupts it.
void sleepSeconds(int seconds);

}  // namespace probe
