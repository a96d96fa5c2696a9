#include "oci/stdio_pipes.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace stockade::oci {

void giveStdioPipes(uid_t host_uid) {
    for (int fd = 0; fd < 3; ++fd) {
        struct stat st {};
        struct statfs fs {};
        if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode) || st.st_uid != geteuid() ||
            st.st_uid == host_uid || fstatfs(fd, &fs) < 0 || fs.f_type != PIPEFS_MAGIC)
            continue;
        (void)!fchown(fd, host_uid, static_cast<gid_t>(-1));
    }
}

}  // namespace stockade::oci
