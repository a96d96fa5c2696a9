// stockade's own diagnostics on stderr, apart from the command's output.
// `--log-level debug` logs each setup step in the parent with its duration:
//   stockade: debug: 0.412 ms  plan the sandbox  (1.031 ms in)
#pragma once

#include <chrono>
#include <string>

namespace stockade {

enum class LogLevel { Error, Info, Debug };

void setLogLevel(LogLevel level);
bool debugEnabled();
// Parses "error", "info" or "debug"; false for anything else.
bool parseLogLevel(const std::string& text, LogLevel& out);

// Times a sequence of steps: each done() logs the time since the previous
// one (or since the start) at debug level. Free when debug is off.
class StepLog {
  public:
    StepLog();
    void done(const char* step);

  private:
    using Clock = std::chrono::steady_clock;
    Clock::time_point start_, last_;
    bool on_;
};

}  // namespace stockade
