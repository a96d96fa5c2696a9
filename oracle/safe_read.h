// Reading what an untrusted sandbox left behind (a report directory, a
// worktree) without letting its contents steer the reader: every path is
// resolved with openat2(2) beneath a directory fd, never through a symlink, a
// magic link or a mount point; only regular files are read, and never more
// than a bound. A FIFO is opened O_PATH first, so it cannot block the reader,
// and a device is never opened for reading at all.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace stockade::oracle {

enum class FileType { Regular, Directory, Symlink, Fifo, Socket, CharDevice, BlockDevice, Unknown };

FileType fileTypeOf(mode_t mode);
// "regular file", "directory", "symlink", "FIFO", "socket", "character
// device", "block device", "unknown file type".
const char* fileTypeName(FileType type);

// Opens a directory the caller named (a host path chosen by whoever runs
// stockade, so host symlinks in it are followed), close-on-exec.
Result<UniqueFd> openDirectory(const std::string& path);

// openat2(dir_fd, relative_path, flags | O_CLOEXEC) with RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV. The Error
// says which of those refused (a symlink on the way, an escape, a mount).
Result<UniqueFd> openBeneath(int dir_fd, const std::string& relative_path, int flags);

struct OpenedFile {
    UniqueFd fd;
    uint64_t size = 0;
    mode_t mode = 0;
    uint64_t links = 1;  // st_nlink: its names, this one included
};

// Opens a regular file beneath dir_fd for reading. Anything else (FIFO,
// device, socket, symlink, directory) is an Error that names the type; so is
// a file larger than max_bytes, judged by fstat before any byte is read.
Result<OpenedFile> openRegularBeneath(int dir_fd, const std::string& relative_path,
                                      uint64_t max_bytes);

// Reads the file from its start in chunks, at most max_bytes; reading a byte
// more (the file grew since it was measured) is an Error.
Status readChunks(const OpenedFile& file, uint64_t max_bytes,
                  const std::function<void(std::string_view)>& on_chunk);

// The whole content of a regular file beneath dir_fd, at most max_bytes.
Result<std::string> readBeneath(int dir_fd, const std::string& relative_path, size_t max_bytes);

// The target text of a symlink beneath dir_fd, not followed.
Result<std::string> readLinkBeneath(int dir_fd, const std::string& relative_path);

struct Entry {
    std::string path;  // relative to the walked directory, '/'-separated
    FileType type = FileType::Unknown;
    uint64_t size = 0;        // st_size as lstat gives it
    mode_t mode = 0;          // permission bits (07777)
    std::string link_target;  // for symlinks: the link text, never followed
};

struct WalkLimits {
    uint64_t max_entries = 100000;  // all entries of the walk, directories included
    uint64_t max_depth = 64;        // the walked directory's own entries are depth 1
};

struct DirectoryListing {
    std::vector<Entry> entries;  // sorted by name (bytewise); "." and ".." left out
    bool truncated = false;      // the directory holds more than max_entries
};

// The entries of one directory, at most max_entries of them; a caller that
// gets `truncated` must not take the listing for the whole directory.
Result<DirectoryListing> listDirectory(int dir_fd, uint64_t max_entries);

// Every entry beneath dir_fd, depth first: a directory comes before its
// contents, siblings in name order. Symlinks are reported as symlinks with
// their target text and never followed; nothing is read but directories and
// link texts. Exceeding a limit is an Error that names it, never a silent cut.
Result<std::vector<Entry>> walkBeneath(int dir_fd, const WalkLimits& limits);

// Shell-like quoting for paths in messages: "a b" -> "\"a b\"".
std::string quotePath(std::string_view path);

}  // namespace stockade::oracle
