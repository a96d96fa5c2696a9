// The call that failed, named with its arguments, for the child's report
// (runtime/child/child_protocol.h: ChildMessage::call): "mount(\"/usr\" ->
// \"/tmp/root/usr\", MS_BIND|MS_REC)". Built in this process's own static
// buffer, cut to fit, without allocation: async-signal-safe. The child is a
// process of its own (no CLONE_VM), so the buffer is never the supervisor's.
#pragma once

#include <cstddef>

namespace stockade::ns {

inline constexpr size_t kCallNoteSize = 160;

// Starts a note: `name(`. Returns `err`, so that a failure site reads
// `return noteCallInChild(errno, "mount").path(a).to(b).flags("MS_BIND")...`.
class CallNote {
  public:
    CallNote& path(const char* p) noexcept;    // , "p"
    CallNote& to(const char* p) noexcept;      //  -> "p"
    CallNote& arg(const char* text) noexcept;  // , text
    CallNote& number(long value) noexcept;     // , value
    // Closes the parenthesis; the errno the caller returns.
    int done(int err) noexcept;
    const char* text() const noexcept { return text_; }

  private:
    friend CallNote& noteCallInChild(const char* name) noexcept;
    void append(const char* s) noexcept;
    void separate() noexcept;
    char text_[kCallNoteSize] = {};
    size_t len_ = 0;
    bool first_ = true;
};

CallNote& noteCallInChild(const char* name) noexcept;
// The last note's text, empty when no call was noted since the last clear.
const char* notedCallInChild() noexcept;
void clearCallNoteInChild() noexcept;

}  // namespace stockade::ns
