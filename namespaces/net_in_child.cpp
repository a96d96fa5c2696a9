#include "namespaces/net_in_child.h"

#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace stockade::ns {

int bringLoopbackUpInChild() noexcept {
    // SIOCSIFFLAGS on any socket in the namespace is one round trip; netlink
    // would need a message built and parsed for the same effect.
    int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock < 0) return errno;
    ifreq req{};
    memcpy(req.ifr_name, "lo", 3);
    int err = 0;
    if (ioctl(sock, SIOCGIFFLAGS, &req) < 0) {
        err = errno;
    } else {
        req.ifr_flags = static_cast<short>(req.ifr_flags | IFF_UP | IFF_RUNNING);
        if (ioctl(sock, SIOCSIFFLAGS, &req) < 0) err = errno;
    }
    close(sock);
    return err;
}

}  // namespace stockade::ns
