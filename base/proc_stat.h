// One process's /proc/PID/stat (proc(5)), its fields told apart safely.
//
// The second field is the command's name in parentheses, and the process
// sets it (prctl(PR_SET_NAME), or the executable's name): it may hold spaces
// and ')' of its own choosing. Only the text after the *last* ')' is the
// kernel's alone (the name is at most 15 bytes, and nothing after it is the
// process's to write), so the fields are counted from there.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace stockade {

class ProcStat {
  public:
    // /proc/`pid`/stat, or /proc/self/stat for 0; nullopt when it cannot be
    // read or has no name field (the process is gone, or it is not a pid).
    static std::optional<ProcStat> read(pid_t pid);

    // Field `number` as proc(5) numbers them, from 4 (ppid) up: 0 when the
    // line is shorter or the field is not a number.
    uint64_t field(int number) const;
    char state() const { return state_; }  // field 3: R, S, D, Z, X...
    pid_t parent() const { return static_cast<pid_t>(field(4)); }
    uint64_t startTime() const { return field(22); }  // clock ticks after boot

  private:
    explicit ProcStat(std::string after_name);
    std::string after_name_;  // from field 3 on
    char state_ = 0;
};

}  // namespace stockade
