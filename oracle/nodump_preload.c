/* The oracle's held command, made non-dumpable before any of its code runs
 * (issue 25; docs/oracle.md). execve(2) makes every program dumpable again,
 * and a dumpable runner's memory is open through /proc/PID/mem to the
 * candidate code it starts (same uid, no Yama). The oracle preloads this
 * object into the held command (LD_PRELOAD): the dynamic linker runs its
 * constructor before the program's own, and it calls prctl(PR_SET_DUMPABLE,
 * 0). It links nothing, not even libc (a raw system call), so it loads into
 * any dynamically linked x86_64 program, glibc's or musl's; a static one is
 * not reached, and a program may make itself dumpable again.
 * Built with -nostdlib, without sanitizers, and embedded in the binary
 * (oracle/nodump_blob.h). */

__attribute__((constructor)) static void stockade_nodump(void) {
    long ret;
    /* prctl(PR_SET_DUMPABLE = 4, 0): x86_64 system call 157. */
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(157L), "D"(4L), "S"(0L), "d"(0L)
                     : "rcx", "r11", "memory");
    (void)ret;
}
