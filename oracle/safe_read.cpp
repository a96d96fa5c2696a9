#include "oracle/safe_read.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace stockade::oracle {

namespace {

constexpr uint64_t kResolveFlags =
    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
constexpr const char* kResolveText =
    "RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV";

// openat2(2) has no glibc wrapper before 2.40. EAGAIN (a rename or mount
// anywhere raced a `..` beneath RESOLVE_BENEATH) is tried again, as the
// kernel advises and ns::sysOpenat2 does.
int callOpenat2(int dir_fd, const char* path, uint64_t flags) {
    open_how how{};
    how.flags = flags;
    how.resolve = kResolveFlags;
    int fd = -1;
    for (int tries = 0; tries < 64; ++tries) {
        fd = static_cast<int>(syscall(SYS_openat2, dir_fd, path, &how, sizeof how));
        if (fd >= 0 || errno != EAGAIN) break;
    }
    return fd;
}

// What each refusal of openat2 means for a reader, so that the Error says
// "a symlink was in the way" and not only ELOOP.
std::string refusalReason(const std::string& path, int err) {
    switch (err) {
        case ELOOP:
            return quotePath(path) + " goes through a symlink, which is never followed";
        case EXDEV:
            return quotePath(path) + " leaves the directory or crosses a mount point";
        case ENOENT:
            return quotePath(path) + " does not exist";
        case ENOTDIR:
            return quotePath(path) + " has a component that is not a directory";
        case ENOSYS:
            return "openat2 is not available (Linux 5.6 or later is needed)";
        default:
            return "cannot open " + quotePath(path);
    }
}

Error statError(const char* call, const std::string& path, int err = errno) {
    return Error::fromErrno(std::string(call) + "(" + quotePath(path) + ")", err);
}

bool sameFile(const struct stat& a, const struct stat& b) {
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Refuses anything but a regular file of at most max_bytes; `st` is from an
// fstat that read no byte of the file.
Status checkRegular(const std::string& path, const struct stat& st, uint64_t max_bytes) {
    FileType type = fileTypeOf(st.st_mode);
    if (type != FileType::Regular)
        return Error::message(quotePath(path) + " is a " + fileTypeName(type) +
                              ", not a regular file; refused");
    if (static_cast<uint64_t>(st.st_size) > max_bytes)
        return Error::message(quotePath(path) + " is " + std::to_string(st.st_size) +
                              " bytes, more than the bound of " + std::to_string(max_bytes) +
                              "; not read");
    return okStatus();
}

std::string joinPath(const std::string& prefix, const std::string& name) {
    return prefix.empty() ? name : prefix + "/" + name;
}

// One directory's entries, unsorted; sets too_many instead of listing more
// than max_entries.
Status listEntries(int dir_fd, uint64_t max_entries, std::vector<Entry>& entries, bool& too_many);

// `seen` counts every entry listed so far, including siblings not yet
// visited, so the bound holds for the walk as a whole.
Status walkInto(int dir_fd, const std::string& prefix, uint64_t depth, const WalkLimits& limits,
                uint64_t& seen, std::vector<Entry>& out) {
    std::vector<Entry> listed;
    bool too_many = false;
    uint64_t room = limits.max_entries - std::min<uint64_t>(seen, limits.max_entries);
    if (Status ok = listEntries(dir_fd, room, listed, too_many); !ok.ok())
        return ok.error().withContext(prefix.empty() ? "listing the walked directory"
                                                     : "listing " + quotePath(prefix));
    if (too_many)
        return Error::message("more than " + std::to_string(limits.max_entries) +
                              " entries beneath the walked directory");
    seen += listed.size();
    if (!listed.empty() && depth > limits.max_depth)
        return Error::message(quotePath(prefix) + " is nested more than " +
                              std::to_string(limits.max_depth) + " levels deep");
    std::sort(listed.begin(), listed.end(),
              [](const Entry& a, const Entry& b) { return a.path < b.path; });
    for (Entry& entry : listed) {
        std::string name = entry.path;
        entry.path = joinPath(prefix, name);
        bool is_dir = entry.type == FileType::Directory;
        std::string path = entry.path;
        out.push_back(std::move(entry));
        if (!is_dir) continue;
        Result<UniqueFd> sub = openBeneath(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        if (!sub.ok()) return sub.error();
        if (Status walked = walkInto(sub->get(), path, depth + 1, limits, seen, out); !walked.ok())
            return walked;
    }
    return okStatus();
}

}  // namespace

FileType fileTypeOf(mode_t mode) {
    switch (mode & S_IFMT) {
        case S_IFREG:
            return FileType::Regular;
        case S_IFDIR:
            return FileType::Directory;
        case S_IFLNK:
            return FileType::Symlink;
        case S_IFIFO:
            return FileType::Fifo;
        case S_IFSOCK:
            return FileType::Socket;
        case S_IFCHR:
            return FileType::CharDevice;
        case S_IFBLK:
            return FileType::BlockDevice;
        default:
            return FileType::Unknown;
    }
}

const char* fileTypeName(FileType type) {
    switch (type) {
        case FileType::Regular:
            return "regular file";
        case FileType::Directory:
            return "directory";
        case FileType::Symlink:
            return "symlink";
        case FileType::Fifo:
            return "FIFO";
        case FileType::Socket:
            return "socket";
        case FileType::CharDevice:
            return "character device";
        case FileType::BlockDevice:
            return "block device";
        case FileType::Unknown:
            break;
    }
    return "unknown file type";
}

std::string quotePath(std::string_view path) {
    std::string quoted = "\"";
    for (unsigned char c : path) {
        if (c == '"' || c == '\\') {
            quoted.push_back('\\');
            quoted.push_back(static_cast<char>(c));
        } else if (c < 0x20 || c == 0x7f) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
            quoted += escaped;
        } else {
            quoted.push_back(static_cast<char>(c));
        }
    }
    quoted.push_back('"');
    return quoted;
}

Result<UniqueFd> openDirectory(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Error::fromErrno("open(" + quotePath(path) + ", O_DIRECTORY)");
    return UniqueFd(fd);
}

Result<UniqueFd> openBeneath(int dir_fd, const std::string& relative_path, int flags) {
    if (relative_path.empty()) return Error::message("an empty path names no file");
    int fd = -1;
    // The kernel answers EAGAIN when a concurrent rename makes it unsure that
    // ".." stayed beneath; a retry settles it (openat2(2)).
    for (int attempt = 0; attempt < 8; ++attempt) {
        fd = callOpenat2(dir_fd, relative_path.c_str(), static_cast<uint64_t>(flags) | O_CLOEXEC);
        if (fd >= 0 || errno != EAGAIN) break;
    }
    if (fd < 0) {
        int err = errno;
        return Error::fromErrno("openat2(" + quotePath(relative_path) + ", " + kResolveText + ")",
                                err)
            .withContext(refusalReason(relative_path, err));
    }
    return UniqueFd(fd);
}

Result<OpenedFile> openRegularBeneath(int dir_fd, const std::string& relative_path,
                                      uint64_t max_bytes) {
    // O_PATH first: it opens a FIFO without waiting for a writer and a device
    // without running its driver's open, so the type can be judged by fstat
    // before anything of the file is touched. O_NOFOLLOW with O_PATH yields
    // the symlink itself, so a final symlink is named as one.
    Result<UniqueFd> probe = openBeneath(dir_fd, relative_path, O_PATH | O_NOFOLLOW);
    if (!probe.ok()) return probe.error();
    struct stat probed {};
    if (::fstat(probe->get(), &probed) != 0) return statError("fstat", relative_path);
    if (Status ok = checkRegular(relative_path, probed, max_bytes); !ok.ok()) return ok.error();

    // Reopened for reading by the same restricted walk; O_NONBLOCK and the
    // identity check cover a swap to a FIFO or device in between.
    Result<UniqueFd> fd =
        openBeneath(dir_fd, relative_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (!fd.ok()) return fd.error();
    struct stat st {};
    if (::fstat(fd->get(), &st) != 0) return statError("fstat", relative_path);
    if (!sameFile(st, probed))
        return Error::message(quotePath(relative_path) + " was replaced while being opened");
    if (Status ok = checkRegular(relative_path, st, max_bytes); !ok.ok()) return ok.error();
    OpenedFile file;
    file.fd = std::move(*fd);
    file.size = static_cast<uint64_t>(st.st_size);
    file.mode = st.st_mode & 07777;
    file.links = static_cast<uint64_t>(st.st_nlink);
    return file;
}

Status readChunks(const OpenedFile& file, uint64_t max_bytes,
                  const std::function<void(std::string_view)>& on_chunk) {
    std::string buffer(64 * 1024, '\0');
    uint64_t total = 0;
    for (;;) {
        // One byte past the bound is enough to know the file grew past it
        // (written so that a bound of UINT64_MAX cannot wrap to zero).
        uint64_t remaining = max_bytes - total;
        uint64_t want = remaining >= buffer.size() ? buffer.size() : remaining + 1;
        ssize_t got = ::pread(file.fd.get(), buffer.data(), want, static_cast<off_t>(total));
        if (got < 0) {
            if (errno == EINTR) continue;
            return Error::fromErrno("pread(fd " + std::to_string(file.fd.get()) + ")");
        }
        if (got == 0) return okStatus();
        total += static_cast<uint64_t>(got);
        if (total > max_bytes)
            return Error::message("the file grew past the bound of " + std::to_string(max_bytes) +
                                  " bytes while being read");
        on_chunk(std::string_view(buffer.data(), static_cast<size_t>(got)));
    }
}

Result<std::string> readBeneath(int dir_fd, const std::string& relative_path, size_t max_bytes) {
    Result<OpenedFile> file = openRegularBeneath(dir_fd, relative_path, max_bytes);
    if (!file.ok()) return file.error();
    std::string content;
    content.reserve(file->size);
    Status read = readChunks(*file, max_bytes, [&](std::string_view chunk) { content += chunk; });
    if (!read.ok()) return read.error().withContext("reading " + quotePath(relative_path));
    return content;
}

Result<std::string> readLinkBeneath(int dir_fd, const std::string& relative_path) {
    // The link itself is opened (O_PATH|O_NOFOLLOW) beneath the directory,
    // then read through the empty path, so a symlinked parent cannot redirect.
    Result<UniqueFd> link = openBeneath(dir_fd, relative_path, O_PATH | O_NOFOLLOW);
    if (!link.ok()) return link.error();
    // Linux caps a symlink's text at PATH_MAX - 1 bytes; a full buffer means
    // something else is going on.
    std::string target(4096, '\0');
    ssize_t n = ::readlinkat(link->get(), "", target.data(), target.size());
    if (n < 0) return statError("readlinkat", relative_path);
    if (static_cast<size_t>(n) == target.size())
        return Error::message("the target of " + quotePath(relative_path) + " is too long");
    target.resize(static_cast<size_t>(n));
    return target;
}

namespace {

Status listEntries(int dir_fd, uint64_t max_entries, std::vector<Entry>& entries, bool& too_many) {
    // The fd's offset is shared with any duplicate, so start from the top.
    if (::lseek(dir_fd, 0, SEEK_SET) != 0) return Error::fromErrno("lseek(directory, 0)");
    std::string buffer(32 * 1024, '\0');
    for (;;) {
        ssize_t n = ::getdents64(dir_fd, buffer.data(), buffer.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return Error::fromErrno("getdents64(directory)");
        }
        if (n == 0) return okStatus();
        for (ssize_t offset = 0; offset < n;) {
            const auto* record = reinterpret_cast<const dirent64*>(buffer.data() + offset);
            offset += record->d_reclen;
            std::string name = record->d_name;
            if (name == "." || name == "..") continue;
            if (entries.size() >= max_entries) {
                too_many = true;
                return okStatus();
            }
            struct stat st {};
            if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
                return statError("fstatat", name);
            Entry entry;
            entry.type = fileTypeOf(st.st_mode);
            entry.size = static_cast<uint64_t>(st.st_size);
            entry.mode = st.st_mode & 07777;
            if (entry.type == FileType::Symlink) {
                char target[4096];
                ssize_t len = ::readlinkat(dir_fd, name.c_str(), target, sizeof target);
                if (len < 0) return statError("readlinkat", name);
                if (static_cast<size_t>(len) == sizeof target)
                    return Error::message("the target of " + quotePath(name) + " is too long");
                entry.link_target.assign(target, static_cast<size_t>(len));
            }
            entry.path = std::move(name);
            entries.push_back(std::move(entry));
        }
    }
}

}  // namespace

Result<DirectoryListing> listDirectory(int dir_fd, uint64_t max_entries) {
    DirectoryListing listing;
    if (Status ok = listEntries(dir_fd, max_entries, listing.entries, listing.truncated); !ok.ok())
        return ok.error();
    std::sort(listing.entries.begin(), listing.entries.end(),
              [](const Entry& a, const Entry& b) { return a.path < b.path; });
    return listing;
}

Result<std::vector<Entry>> walkBeneath(int dir_fd, const WalkLimits& limits) {
    std::vector<Entry> out;
    uint64_t seen = 0;
    if (Status walked = walkInto(dir_fd, "", 1, limits, seen, out); !walked.ok())
        return walked.error();
    return out;
}

}  // namespace stockade::oracle
