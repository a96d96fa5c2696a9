/* as-user UID COMMAND...: drops to UID (and the same GID), with no
 * supplementary groups, and runs COMMAND. The VM has no setpriv. */
#define _GNU_SOURCE
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: as-user UID COMMAND...\n");
        return 125;
    }
    uid_t id = (uid_t)strtoul(argv[1], NULL, 10);
    if (setgroups(0, NULL) < 0 || setresgid(id, id, id) < 0 || setresuid(id, id, id) < 0) {
        perror("as-user");
        return 125;
    }
    execvp(argv[2], argv + 2);
    perror(argv[2]);
    return 127;
}
