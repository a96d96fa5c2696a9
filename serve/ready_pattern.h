// `serve --ready-pattern RE` (SPEC §7): the server is ready when RE has
// matched a word-bounded run of one line of its output, with terminal escape
// sequences removed first. Word-bounded: no letter, digit or underscore
// continues the match on either side, so "ready" never matches inside
// "Already exists". A carriage return ends a line as a newline does.
//
// The pattern is the operator's, the text is the sandbox's: matching is RE2
// (linear in the text, no recursion, memory bounded at compile time), never a
// backtracking engine, and each line is looked at through a bounded window:
//   - only the first kWindow bytes of a line (after escapes are removed) are
//     matched; the rest of a longer line, up to its newline, is read past
//     unseen, so a ready message must lie within the first 16 KiB of its line;
//   - a finished line is matched once, when it ends;
//   - an unfinished line (a prompt with no newline yet) is matched as if it
//     ended there, when its window has at least doubled since the last look
//     at it, and at each settle() when it grew at all; so each byte reaches
//     the matcher at most three times, plus one window per settle().
// Output that is not UTF-8 matches nothing but `\C`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/error.h"

namespace re2 {
class RE2;
}

namespace stockade {

class ReadyPattern {
  public:
    static constexpr size_t kWindow = 16 * 1024;
    // RE2's own default, said here: a pattern whose program needs more is
    // refused when compiled, and matching never allocates beyond it.
    static constexpr int64_t kMaxMemory = 8 << 20;

    // RE2 syntax. An expression RE2 refuses (a syntax error, a backreference,
    // lookaround, too large a program) or one that can match the empty
    // string (so every line would do) is an error naming the problem.
    static Result<ReadyPattern> compile(const std::string& expression);

    ReadyPattern(ReadyPattern&&) noexcept;
    ReadyPattern& operator=(ReadyPattern&&) noexcept;
    ~ReadyPattern();

    // Feeds output; true once the pattern has matched (and from then on).
    bool feed(const char* data, size_t size);
    // Looks at the unfinished line if it grew since the last look: the
    // readiness timer calls it, so a prompt that stops mid-line is seen
    // within a tick whatever sizes its writes had.
    bool settle();
    bool matched() const { return matched_; }

    // One line, escapes already removed: does it hold a word-bounded match?
    bool matchesLine(std::string_view line) const;

    // Tests only: how many bytes were handed to RE2 so far.
    uint64_t bytesMatchedForTest() const { return bytes_matched_; }

  private:
    explicit ReadyPattern(std::unique_ptr<re2::RE2> bounded);
    void lookAtLine();

    // The pattern between word-boundary guards (ready_pattern.cpp). Behind a
    // pointer: RE2 cannot be moved, and its header stays out of this one.
    std::unique_ptr<re2::RE2> bounded_;
    std::string line_;   // the window of the current line, at most kWindow
    size_t looked_ = 0;  // line_.size() at the last look at this line
    enum class Escape { None, Started, Csi, Osc } escape_ = Escape::None;
    bool matched_ = false;
    mutable uint64_t bytes_matched_ = 0;
};

}  // namespace stockade
