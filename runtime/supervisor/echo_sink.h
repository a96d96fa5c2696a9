// The live echo of one of the command's streams to stockade's own stdout or
// stderr (SPEC §4), written without ever waiting: the supervisor's loop that
// writes it also serves the timer, the signals and the seccomp listener, and
// a caller that never drains its pipe must not stretch --timeout (issue 15).
//
// What the fd does not take at once waits in a bounded buffer (kCapacity) and
// goes out when poll says the fd is writable. When the buffer is full, the
// owner either stops reading the sandbox's pipe (room(): the command waits,
// as a writer of a full pipe would, but nothing of the supervisor does) or
// hands it more, which is dropped with a count. Either way the capture, the
// hash and the output limit see every byte: they are fed before the echo.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "base/unique_fd.h"

namespace stockade {

class EchoSink {
  public:
    static constexpr size_t kCapacity = 1 << 20;  // per stream

    // fd: stockade's 1 or 2, or -1 for no echo (--quiet). The fd is borrowed.
    // SIGPIPE is the owner's to ignore (stockade's command line does, for
    // the commands that supervise): a reader gone is then EPIPE, which turns
    // the echo off.
    explicit EchoSink(int fd);
    EchoSink(const EchoSink&) = delete;
    EchoSink& operator=(const EchoSink&) = delete;

    // Echoing, and the fd has not gone away (EPIPE, a closed fd).
    bool active() const { return method_ != Method::None; }
    // How much accept() takes now without dropping: what an owner that
    // pauses may read from the sandbox. Unbounded when nothing is echoed.
    size_t room() const;
    // Writes what the fd takes now, keeps the rest up to room(), and counts
    // what is past it (or arrives once the echo stopped) as dropped.
    void accept(const char* data, size_t size);
    bool pending() const { return size_ > 0; }
    // The fd to poll for POLLOUT while something is pending, else -1.
    int pollFd() const;
    // Writes what the fd takes now.
    void flush();
    // Drops what is pending and echoes nothing more: the run is over (or
    // killed) and the caller must not hold stockade up.
    void abandon() { stop(); }
    // Bytes of the stream that were not echoed although echo was asked for.
    uint64_t dropped() const { return dropped_; }
    // How it writes (chosen at the start), for --log-level debug.
    const char* methodName() const;

  private:
    enum class Method { None, Direct, Send, Reopened, Polled };
    // Writes from `data` what the fd takes without waiting; returns the
    // count, and turns the sink off when the fd went away.
    size_t writeNow(const char* data, size_t size);
    void stop();

    Method method_ = Method::None;  // None once the fd went away
    Method chosen_ = Method::None;
    bool wanted_;
    int fd_ = -1;
    UniqueFd reopened_;
    std::unique_ptr<char[]> ring_;  // allocated on the first byte kept
    size_t head_ = 0, size_ = 0;
    uint64_t dropped_ = 0;
};

// stockade's own line after a run ("not ready within 2 s"), to a caller's
// stderr that may not be read: written as the echo is, waiting at most
// `wait_ms` for room, then dropped, so the exit is not held up. Returns
// whether it all went out.
bool writeWithin(int fd, std::string_view text, int wait_ms);

}  // namespace stockade
