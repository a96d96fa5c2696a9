// Reading a small file that a sandbox could have written (a .git link, a
// server's state record) without letting it steer the reader: one component
// beneath a directory fd, never through a symlink, never blocking on a FIFO,
// only a regular file, never more than a bound.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <string>

#include "base/error.h"

namespace stockade {

struct SmallFile {
    std::string content;
    struct stat st {};
};

// `name` beneath `dir_fd` (AT_FDCWD for a path the caller chose), opened
// O_NOFOLLOW | O_NONBLOCK; refused unless a regular file of at most
// `max_bytes`. `shown` names it in messages.
Result<SmallFile> readSmallFile(int dir_fd, const char* name, const std::string& shown,
                                size_t max_bytes);

// Makes `name` beneath `dir_fd` (O_EXCL, no link followed) with `mode` and
// writes `content` whole; `shown` names it in messages.
Status writeNewSmallFile(int dir_fd, const char* name, const std::string& shown,
                         const std::string& content, mode_t mode);

}  // namespace stockade
