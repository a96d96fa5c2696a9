#include "base/fd_passing.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

namespace stockade {

namespace {

// Aligned for cmsghdr (cmsg(3)), with room for the most fds passed at once.
union Control {
    cmsghdr align;
    char bytes[CMSG_SPACE(sizeof(int) * kMaxPassedFds)];
};

}  // namespace

int sendWithFds(int socket_fd, const void* data, size_t len, const int* fds, int count) noexcept {
    if (count < 0 || count > kMaxPassedFds) return EINVAL;
    iovec iov{const_cast<void*>(data), len};
    Control control;
    memset(&control, 0, sizeof control);
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (count > 0) {
        size_t bytes = sizeof(int) * static_cast<size_t>(count);
        msg.msg_control = control.bytes;
        msg.msg_controllen = CMSG_SPACE(bytes);
        cmsghdr* header = CMSG_FIRSTHDR(&msg);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(bytes);
        memcpy(CMSG_DATA(header), fds, bytes);
    }
    while (sendmsg(socket_fd, &msg, MSG_NOSIGNAL) < 0)
        if (errno != EINTR) return errno;
    return 0;
}

ssize_t receiveWithFds(int socket_fd, void* data, size_t len, int* fds, int* count, int flags,
                       bool* truncated) noexcept {
    *count = 0;
    *truncated = false;
    iovec iov{data, len};
    Control control;
    memset(&control, 0, sizeof control);
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof control.bytes;
    ssize_t n;
    while ((n = recvmsg(socket_fd, &msg, MSG_CMSG_CLOEXEC | flags)) < 0 && errno == EINTR) {
    }
    if (n < 0) return -errno;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t carried = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < carried && *count < kMaxPassedFds; ++i)
            memcpy(&fds[(*count)++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
    *truncated = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
    return n;
}

}  // namespace stockade
