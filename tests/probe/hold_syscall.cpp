// Holds a program at one system call, for a test that must act while the
// program is between two steps (a create killed after its record and before
// its commit). The program, and everything it starts, runs under a seccomp
// filter whose user notification catches openat(2) calls with every bit of
// FLAGS set in their flags; this holder receives each such call and never
// answers it, so the caller stays in it until it is killed. The holder
// prints "started PID" once the program is forked and "held PID" for each
// call it holds (the pid of the caller), and exits with the program's
// status once the program ends (128 + the signal when it is killed). Held
// calls of other processes then fail ENOSYS, as the kernel answers when no
// listener is left.
//
//   stockade-hold-syscall FLAGS -- PROGRAM [ARG...]      (FLAGS: 0x... or decimal)
//
// The filter needs no_new_privs (set here) or CAP_SYS_ADMIN, and only one
// listener may exist in a process's filter chain: a program that installs a
// listener of its own beneath this one is refused EBUSY.
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

int fail(const char* what) {
    fprintf(stderr, "stockade-hold-syscall: %s: %s\n", what, strerror(errno));
    return 125;
}

int installFilter(unsigned flags) {
    const unsigned args2 = offsetof(seccomp_data, args) + 2 * sizeof(__u64);  // low half
    sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, args2),
        BPF_STMT(BPF_ALU | BPF_AND | BPF_K, flags),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, flags, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{static_cast<unsigned short>(sizeof(code) / sizeof(code[0])), code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return -1;
    return static_cast<int>(
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
}

// One byte with room for one fd: the message both ends use. Not copied
// (it points into itself).
struct FdMessage {
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    FdMessage() {
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof(control);
    }
    FdMessage(const FdMessage&) = delete;
    FdMessage& operator=(const FdMessage&) = delete;
};

bool sendFd(int sock, int fd) {
    FdMessage m;
    cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return sendmsg(sock, &m.msg, 0) == 1;
}

int receiveFd(int sock) {
    FdMessage m;
    if (recvmsg(sock, &m.msg, MSG_CMSG_CLOEXEC) != 1) return -1;
    cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
    if (!c || c->cmsg_type != SCM_RIGHTS) return -1;
    int fd = -1;
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4 || strcmp(argv[2], "--") != 0) {
        fprintf(stderr, "usage: stockade-hold-syscall FLAGS -- PROGRAM [ARG...]\n");
        return 125;
    }
    char* end = nullptr;
    const unsigned long flags = strtoul(argv[1], &end, 0);
    if (!end || *end || flags == 0 || flags > 0xffffffffUL) {
        fprintf(stderr, "stockade-hold-syscall: FLAGS must be a non-zero 32-bit number\n");
        return 125;
    }
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) return fail("socketpair");
    const pid_t child = fork();
    if (child < 0) return fail("fork");
    if (child == 0) {
        close(pair[0]);
        const int listener = installFilter(static_cast<unsigned>(flags));
        if (listener < 0 || !sendFd(pair[1], listener)) _exit(fail("seccomp(NEW_LISTENER)"));
        close(listener);
        close(pair[1]);
        execvp(argv[3], argv + 3);
        _exit(fail(argv[3]));
    }
    close(pair[1]);
    const int listener = receiveFd(pair[0]);
    close(pair[0]);
    printf("started %d\n", child);
    fflush(stdout);
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
    if (pidfd < 0) return fail("pidfd_open");
    while (true) {
        pollfd fds[2] = {{pidfd, POLLIN, 0}, {listener, POLLIN, 0}};
        const int n = poll(fds, listener < 0 ? 1 : 2, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail("poll");
        if (fds[0].revents) break;
        if (fds[1].revents & POLLIN) {
            seccomp_notif req;
            memset(&req, 0, sizeof(req));
            if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
                printf("held %u\n", req.pid);
                fflush(stdout);
            }
        }
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
