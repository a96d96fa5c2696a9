#include <fcntl.h>
#include <unistd.h>

#include "base/inherited_fds.h"
#include "cli/cli.h"

int main(int argc, char** argv) {
    // With 0, 1 or 2 closed, the next fd stockade opens would take its number
    // and be mistaken for a standard stream; hold each closed one on /dev/null.
    for (int fd = 0; fd < 3; ++fd)
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) != fd) return 125;
    stockade::noteInheritedFds();
    return stockade::runCli(argc, argv);
}
