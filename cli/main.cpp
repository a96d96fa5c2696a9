#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "cli/cli.h"

int main(int argc, char** argv) {
    // With 0, 1 or 2 closed, the next fd stockade opens would take its number
    // and be mistaken for a standard stream; hold each closed one on /dev/null.
    for (int fd = 0; fd < 3; ++fd)
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) != fd) return 125;
    // A reader that goes away (`stockade run ... | head`, a harness that
    // closes its pipe, a --result on a FIFO) must give stockade's own writes
    // EPIPE, not kill the supervisor before it has torn the sandbox down and
    // written the record. Set here, for the process, not by the library; the
    // child resets every disposition before exec, so the command starts with
    // SIGPIPE at its default (runtime/child/command_in_child.cpp).
    signal(SIGPIPE, SIG_IGN);
    return stockade::runCli(argc, argv);
}
