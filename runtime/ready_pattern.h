// `serve --ready-pattern RE` (SPEC §7): the server is ready when RE has
// matched a word-bounded run of its output, one line at a time, with
// terminal escape sequences removed first. Word-bounded: no letter, digit or
// underscore continues the match on either side, so "ready" never matches
// inside "Already exists".
#pragma once

#include <regex>
#include <string>

#include "base/error.h"

namespace stockade {

class ReadyPattern {
  public:
    // ECMAScript syntax; an invalid expression is an error naming it.
    static Result<ReadyPattern> compile(const std::string& expression);

    // Feeds output; true once the pattern has matched (and from then on).
    bool feed(const char* data, size_t size);
    bool matched() const { return matched_; }

    // One line, escapes already removed: does it hold a word-bounded match?
    bool matchesLine(const std::string& line) const;

  private:
    explicit ReadyPattern(std::regex re) : re_(std::move(re)) {}
    static constexpr size_t kMaxLine = 64 * 1024;

    std::regex re_;
    std::string line_;
    enum class Escape { None, Started, Csi, Osc } escape_ = Escape::None;
    bool matched_ = false;
};

}  // namespace stockade
