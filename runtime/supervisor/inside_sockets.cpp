// The supervisor's end of init's socket factory (runtime/supervisor/service_hooks.h).
// One request is outstanding at a time: a byte naming the family, answered
// by an int32 errno and, when it is 0, the socket as SCM_RIGHTS.
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "base/fd_passing.h"
#include "runtime/supervisor/service_hooks.h"

namespace stockade {

Result<UniqueFd> InsideSockets::open(int family) {
    if (broken_) return Error::message("the sandbox's socket factory is gone");
    char request = family == AF_INET6 ? '6' : '4';
    if (send(channel_, &request, 1, MSG_NOSIGNAL) != 1) {
        broken_ = true;
        return Error::fromErrno("send a socket request to the sandbox's init");
    }
    pollfd pfd{channel_, POLLIN, 0};
    int ready;
    while ((ready = poll(&pfd, 1, 1000)) < 0 && errno == EINTR) {
    }
    if (ready <= 0) {
        // A late answer would pair with the next request: stop asking.
        broken_ = true;
        return Error::message("the sandbox's init did not answer a socket request within 1 s");
    }
    int32_t err = 0;
    int fds[kMaxPassedFds];
    int count = 0;
    bool truncated = false;
    ssize_t n = receiveWithFds(channel_, &err, sizeof(err), fds, &count, MSG_DONTWAIT, &truncated);
    UniqueFd socket;
    for (int i = 0; i < count; ++i) {
        UniqueFd fd(fds[i]);
        if (i == 0) socket = std::move(fd);  // any more are closed: one was asked for
    }
    if (n != static_cast<ssize_t>(sizeof(err))) {
        broken_ = true;
        return Error::fromErrno("receive a socket from the sandbox's init",
                                n == 0 ? EPIPE : (n < 0 ? static_cast<int>(-n) : EPROTO));
    }
    if (err != 0)
        return Error::fromErrno(std::string("socket(") +
                                    (family == AF_INET6 ? "AF_INET6" : "AF_INET") +
                                    ") in the sandbox",
                                err);
    if (!socket) return Error::message("the sandbox's init answered without a socket");
    return socket;
}

}  // namespace stockade
