#include "seccomp/listener_in_child.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

namespace stockade::seccomp {

int sendListenerInChild(int socket_fd, int listener_fd) noexcept {
    iovec payload{const_cast<char*>(kListenerMessage), sizeof kListenerMessage};
    // A union so the buffer is aligned for cmsghdr (cmsg(3)).
    union {
        cmsghdr align;
        char bytes[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    msghdr msg{};
    msg.msg_iov = &payload;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof control.bytes;
    cmsghdr* header = CMSG_FIRSTHDR(&msg);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &listener_fd, sizeof(int));

    int err = 0;
    // MSG_NOSIGNAL: a supervisor that is gone must not kill us with SIGPIPE
    // before we can report it.
    while (sendmsg(socket_fd, &msg, MSG_NOSIGNAL) < 0) {
        if (errno == EINTR) continue;
        err = errno;
        break;
    }
    close(listener_fd);
    return err;
}

}  // namespace stockade::seccomp
