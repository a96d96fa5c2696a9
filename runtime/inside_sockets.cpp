// The supervisor's end of init's socket factory (runtime/service_hooks.h).
// One request is outstanding at a time: a byte naming the family, answered
// by an int32 errno and, when it is 0, the socket as SCM_RIGHTS.
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "runtime/service_hooks.h"

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
    iovec iov{&err, sizeof(err)};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = recvmsg(channel_, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n != sizeof(err)) {
        broken_ = true;
        return Error::fromErrno("receive a socket from the sandbox's init", n == 0 ? EPIPE : errno);
    }
    UniqueFd socket;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int fd;
            memcpy(&fd, CMSG_DATA(c), sizeof(fd));
            socket.reset(fd);
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
