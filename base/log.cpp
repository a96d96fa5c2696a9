#include "base/log.h"

#include <cstdio>

namespace stockade {

namespace {

LogLevel g_level = LogLevel::Info;

double msBetween(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

void setLogLevel(LogLevel level) {
    g_level = level;
}

bool debugEnabled() {
    return g_level == LogLevel::Debug;
}

bool parseLogLevel(const std::string& text, LogLevel& out) {
    if (text == "error")
        out = LogLevel::Error;
    else if (text == "info")
        out = LogLevel::Info;
    else if (text == "debug")
        out = LogLevel::Debug;
    else
        return false;
    return true;
}

StepLog::StepLog() : on_(debugEnabled()) {
    if (on_) start_ = last_ = Clock::now();
}

void StepLog::done(const char* step) {
    if (!on_) return;
    Clock::time_point now = Clock::now();
    std::fprintf(stderr, "stockade: debug: %8.3f ms  %s  (%.3f ms in)\n", msBetween(last_, now),
                 step, msBetween(start_, now));
    last_ = now;
}

}  // namespace stockade
