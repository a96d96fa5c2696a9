// A host where no user namespace can be had because user.max_user_namespaces
// is 0 (issue 18), made without changing this host: the launcher enters a
// user namespace of its own, sets the limit to 0 there, then execs the rest
// of its argv (stockade). The limit is per user namespace (user_namespaces(7),
// "/proc/sys/user"): it binds that namespace and every one beneath it, and
// the host's value stays what it was.
//
//   as root       the namespace maps every id to itself (a root container
//                 with a user namespace): stockade runs as uid 0 there,
//                 able to change ids, but owns nothing of the host
//   not root      the caller's own uid and gid only, mapped to themselves
//                 (setgroups denied, as the kernel requires for an
//                 unprivileged gid_map)
//
// The maps are written by a short-lived child left in the parent namespace:
// a mapping of more than one's own id needs CAP_SETUID over the parent
// namespace, which the process that unshared no longer has there. The
// launcher itself becomes stockade (same pid), so the caller's signals and
// exit status are stockade's own. Before the exec it checks that a further
// user namespace is refused with ENOSPC: the state the test asked for.
//
//   stockade-userns-max-zero -- PROGRAM [ARG...]
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

bool writeFile(const char* path, const char* text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "stockade-userns-max-zero: open(%s): %s\n", path, strerror(errno));
        return false;
    }
    ssize_t n = write(fd, text, strlen(text));
    int err = errno;
    close(fd);
    if (n != static_cast<ssize_t>(strlen(text))) {
        fprintf(stderr, "stockade-userns-max-zero: write(%s, \"%s\"): %s\n", path, text,
                strerror(err));
        return false;
    }
    return true;
}

// Runs in the child that stays in the parent namespace, once the launcher
// (pid `target`) has unshared.
int writeMaps(pid_t target, uid_t uid, gid_t gid) {
    char path[64];
    char map[64];
    if (uid == 0) {
        snprintf(map, sizeof map, "0 0 4294967295\n");
        snprintf(path, sizeof path, "/proc/%d/uid_map", target);
        if (!writeFile(path, map)) return 1;
        snprintf(path, sizeof path, "/proc/%d/gid_map", target);
        return writeFile(path, map) ? 0 : 1;
    }
    snprintf(path, sizeof path, "/proc/%d/uid_map", target);
    snprintf(map, sizeof map, "%u %u 1\n", uid, uid);
    if (!writeFile(path, map)) return 1;
    snprintf(path, sizeof path, "/proc/%d/setgroups", target);
    if (!writeFile(path, "deny\n")) return 1;
    snprintf(path, sizeof path, "/proc/%d/gid_map", target);
    snprintf(map, sizeof map, "%u %u 1\n", gid, gid);
    return writeFile(path, map) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3 || strcmp(argv[1], "--") != 0) {
        fprintf(stderr, "usage: stockade-userns-max-zero -- PROGRAM [ARG...]\n");
        return 125;
    }
    const uid_t uid = geteuid();
    const gid_t gid = getegid();
    const pid_t self = getpid();
    int go[2];
    if (pipe2(go, O_CLOEXEC) < 0) {
        perror("stockade-userns-max-zero: pipe2");
        return 125;
    }
    pid_t mapper = fork();
    if (mapper < 0) {
        perror("stockade-userns-max-zero: fork");
        return 125;
    }
    if (mapper == 0) {
        close(go[1]);
        char byte;
        if (read(go[0], &byte, 1) != 1) _exit(1);
        _exit(writeMaps(self, uid, gid));
    }
    close(go[0]);
    if (unshare(CLONE_NEWUSER) < 0) {
        perror("stockade-userns-max-zero: unshare(CLONE_NEWUSER)");
        return 125;
    }
    if (write(go[1], "g", 1) != 1) {
        perror("stockade-userns-max-zero: write to the mapper");
        return 125;
    }
    close(go[1]);
    int status = 0;
    if (waitpid(mapper, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "stockade-userns-max-zero: the id maps could not be written\n");
        return 125;
    }
    // /proc/sys/user shows the caller's own user namespace's limits.
    if (!writeFile("/proc/sys/user/max_user_namespaces", "0\n")) return 125;
    pid_t check = fork();
    if (check < 0) {
        perror("stockade-userns-max-zero: fork");
        return 125;
    }
    if (check == 0) _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : errno);
    if (waitpid(check, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != ENOSPC) {
        fprintf(stderr,
                "stockade-userns-max-zero: a user namespace inside is not refused with ENOSPC "
                "(child status %d)\n",
                status);
        return 125;
    }
    execv(argv[2], argv + 2);
    perror("stockade-userns-max-zero: execv");
    return 127;
}
