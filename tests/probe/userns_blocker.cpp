// A host where no user namespace can be had, made without changing this
// host (issue 18): installs a seccomp filter like Docker's default profile's
// answer to namespaces, then execs the rest of its argv (stockade).
//
//   clone, unshare with CLONE_NEWUSER   EPERM (Docker: clone's flags are
//                                       checked, unshare is refused)
//   clone3                              ENOSYS (Docker answers every clone3
//                                       so, so that glibc falls back to clone)
//
// Everything else is allowed. no_new_privs is set first: an unprivileged
// caller may install a filter only with it (seccomp(2)). The filter holds
// for everything it starts, the sandbox included, where stockade's own
// filter stacks on it.
//
//   stockade-userns-blocker [--clone3-eperm] -- PROGRAM [ARG...]
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_clone3
#define SYS_clone3 435
#endif

int main(int argc, char** argv) {
    int clone3_errno = ENOSYS;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; ++i) {
        if (strcmp(argv[i], "--clone3-eperm") == 0) {
            clone3_errno = EPERM;
        } else {
            fprintf(stderr, "stockade-userns-blocker: unknown option %s\n", argv[i]);
            return 125;
        }
    }
    if (i + 1 >= argc) {
        fprintf(stderr, "usage: stockade-userns-blocker [--clone3-eperm] -- PROGRAM [ARG...]\n");
        return 125;
    }
    constexpr unsigned kNewUser = CLONE_NEWUSER;
    constexpr unsigned kArch = AUDIT_ARCH_X86_64;
    sock_filter program[] = {
        // A foreign architecture: allowed, unfiltered (this test runs natively).
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | static_cast<unsigned>(clone3_errno)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 4),
        // The flags' low 32 bits (CLONE_NEWUSER is 0x10000000).
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, kNewUser, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{static_cast<unsigned short>(sizeof(program) / sizeof(program[0])), program};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        perror("stockade-userns-blocker: prctl(PR_SET_NO_NEW_PRIVS)");
        return 125;
    }
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
        perror("stockade-userns-blocker: seccomp(SECCOMP_SET_MODE_FILTER)");
        return 125;
    }
    execv(argv[i + 1], argv + i + 1);
    perror("stockade-userns-blocker: execv");
    return 127;
}
