#include "seccomp/listener_in_child.h"

#include <unistd.h>

#include "base/fd_passing.h"

namespace stockade::seccomp {

int sendListenerInChild(int socket_fd, int listener_fd) noexcept {
    // MSG_NOSIGNAL (in sendWithFds): a supervisor that is gone must not kill
    // us with SIGPIPE before we can report it.
    int err = sendWithFds(socket_fd, kListenerMessage, sizeof kListenerMessage, &listener_fd, 1);
    close(listener_fd);
    return err;
}

}  // namespace stockade::seccomp
