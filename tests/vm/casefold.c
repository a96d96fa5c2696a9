/* casefold DIR: marks an empty directory case-folding (FS_CASEFOLD_FL, what
 * chattr +F sets), on a filesystem made with the casefold feature. The VM's
 * busybox has no chattr. The directory's owner may do it: no privilege. */
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: casefold DIR\n");
        return 125;
    }
    int fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int flags = 0;
    if (fd < 0 || ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0) {
        perror(argv[1]);
        return 1;
    }
    flags |= FS_CASEFOLD_FL;
    if (ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0) {
        perror("FS_IOC_SETFLAGS");
        return 1;
    }
    close(fd);
    return 0;
}
