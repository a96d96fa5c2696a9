#include "base/remove_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <string_view>

namespace stockade {

namespace {

void removeTreeAtDepth(int dir_fd, const char* name, int depth) {
    if (unlinkat(dir_fd, name, 0) == 0 || (errno != EISDIR && errno != EPERM)) return;
    if (depth > 0) {
        const int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            if (DIR* d = fdopendir(fd)) {
                while (dirent* e = readdir(d))
                    if (std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..")
                        removeTreeAtDepth(dirfd(d), e->d_name, depth - 1);
                closedir(d);
            } else {
                close(fd);
            }
        }
    }
    unlinkat(dir_fd, name, AT_REMOVEDIR);
}

}  // namespace

void removeTreeAt(int dir_fd, const std::string& name) {
    removeTreeAtDepth(dir_fd, name.c_str(), 64);
}

}  // namespace stockade
