#include "runtime/supervisor/echo_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

namespace stockade {

// How to write to the caller's fd without waiting, and without changing its
// open file description. F_SETFL O_NONBLOCK on fd 1 is not an option: the
// flag lives in the description, which the caller's shell and the other
// writers of its terminal or pipe share; while set, their blocking writes
// fail with EAGAIN (most programs treat that as a fatal write error), and a
// stockade killed by SIGKILL could never restore it. So, by what the fd is:
//   - a regular file, a block device, a character device that is not a
//     terminal (/dev/null): a write never waits on a reader; written as is;
//   - a socket: send(MSG_DONTWAIT) is non-blocking for that call only;
//   - a pipe, a FIFO or a terminal: opened again through /proc/self/fd/N
//     with O_NONBLOCK, which gives stockade a description of its own on the
//     same pipe or tty (no offset to share for these). Where that is refused
//     (a pipe belongs to the uid that made it, mode 0600: a root caller's
//     pipe handed to a rootless stockade) or /proc is not there: poll for
//     POLLOUT, then write at most PIPE_BUF bytes, which a pipe with a free
//     slot takes whole without waiting (pipe(7)). Residual of that fallback:
//     another writer filling the slot between the poll and the write, or a
//     terminal whose output room is under PIPE_BUF, makes one write wait for
//     the reader.
EchoSink::EchoSink(int fd) : wanted_(fd >= 0), fd_(fd) {
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) return;
    if (S_ISSOCK(st.st_mode)) {
        method_ = Method::Send;
    } else if (S_ISFIFO(st.st_mode) || isatty(fd)) {
        std::string path = "/proc/self/fd/" + std::to_string(fd);
        reopened_.reset(open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
        if (reopened_)
            method_ = Method::Reopened;
        else if (errno != ENXIO)  // ENXIO: a pipe with no reader left, nothing to echo to
            method_ = Method::Polled;
    } else {
        method_ = Method::Direct;
    }
    chosen_ = method_;
}

const char* EchoSink::methodName() const {
    switch (chosen_) {
        case Method::None:
            return "none";
        case Method::Direct:
            return "write";
        case Method::Send:
            return "send(MSG_DONTWAIT)";
        case Method::Reopened:
            return "its own O_NONBLOCK description";
        case Method::Polled:
            return "poll(POLLOUT) and PIPE_BUF writes";
    }
    return "none";
}

size_t EchoSink::room() const {
    if (!active()) return SIZE_MAX;
    return kCapacity - size_;
}

int EchoSink::pollFd() const {
    if (!active() || size_ == 0) return -1;
    return method_ == Method::Reopened ? reopened_.get() : fd_;
}

size_t EchoSink::writeNow(const char* data, size_t size) {
    size_t done = 0;
    while (done < size && active()) {
        ssize_t n;
        switch (method_) {
            case Method::Send:
                n = send(fd_, data + done, size - done, MSG_DONTWAIT | MSG_NOSIGNAL);
                break;
            case Method::Reopened:
                n = write(reopened_.get(), data + done, size - done);
                break;
            case Method::Polled: {
                pollfd pfd{fd_, POLLOUT, 0};
                if (poll(&pfd, 1, 0) <= 0 || !(pfd.revents & POLLOUT)) {
                    if (pfd.revents & (POLLERR | POLLNVAL)) stop();
                    return done;
                }
                n = write(fd_, data + done, std::min<size_t>(size - done, PIPE_BUF));
                break;
            }
            default:
                n = write(fd_, data + done, size - done);
                break;
        }
        if (n > 0) {
            done += static_cast<size_t>(n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return done;
        } else {
            stop();  // our own stdout went away (EPIPE, EBADF, ENOSPC): keep capturing
        }
    }
    return done;
}

void EchoSink::stop() {
    dropped_ += size_;
    size_ = 0;
    method_ = Method::None;
    reopened_.reset();
}

void EchoSink::accept(const char* data, size_t size) {
    if (!active()) {
        if (wanted_) dropped_ += size;
        return;
    }
    if (size_ == 0) {  // the common case: the caller keeps up, nothing is copied
        size_t n = writeNow(data, size);
        data += n;
        size -= n;
        if (!active()) {
            dropped_ += size;
            return;
        }
    }
    if (size == 0) return;
    size_t keep = std::min(size, kCapacity - size_);
    dropped_ += size - keep;
    if (keep == 0) return;
    if (!ring_) ring_.reset(new char[kCapacity]);
    size_t tail = (head_ + size_) % kCapacity;
    size_t first = std::min(keep, kCapacity - tail);
    std::memcpy(ring_.get() + tail, data, first);
    std::memcpy(ring_.get(), data + first, keep - first);
    size_ += keep;
}

void EchoSink::flush() {
    while (size_ > 0 && active()) {
        size_t chunk = std::min(size_, kCapacity - head_);
        size_t n = writeNow(ring_.get() + head_, chunk);
        if (!active()) return;
        head_ = (head_ + n) % kCapacity;
        size_ -= n;
        if (n < chunk) return;
    }
    if (size_ == 0) head_ = 0;
}

bool writeWithin(int fd, std::string_view text, int wait_ms) {
    EchoSink sink(fd);
    sink.accept(text.data(), text.size());
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    while (sink.pending()) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now())
                        .count();
        if (left <= 0) break;
        pollfd pfd{sink.pollFd(), POLLOUT, 0};
        if (poll(&pfd, 1, static_cast<int>(left)) < 0 && errno != EINTR) break;
        sink.flush();
    }
    return sink.dropped() == 0 && !sink.pending();
}

}  // namespace stockade
