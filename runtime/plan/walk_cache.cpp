#include "runtime/plan/walk_cache.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/small_file.h"

namespace stockade {

namespace {

// Bumped whenever the file's format changes (2: the worktree's mount and
// filesystem id, each directory's birth time): a file of another version is
// passed over and written anew. How a name is judged is keyed by the binary
// itself (buildIdentity), so that no upgrade can read a cache whose kept
// listings were judged by another matcher.
constexpr std::string_view kMagicPrefix = "stockade-walk-cache ";
// 3: the flag 16 (WalkedName::on_way); a cache of 2 never looked for such links.
constexpr std::string_view kMagic = "stockade-walk-cache 3\n";
// statx's never-reused mount id (Linux 6.8), named here for older headers.
#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U
#endif
constexpr const char* kCacheDir = "walk-cache";
constexpr const char* kFilePrefix = "wt-";
// CLOCK_REALTIME - CLOCK_BOOTTIME is read with two calls: a step back below
// this is their jitter, not the clock's.
constexpr int64_t kOffsetJitterNs = 5'000'000;

thread_local const char* last_miss = "";

const char* miss(const char* why) {
    last_miss = why;
    return why;
}

// Filesystems whose ctime the local kernel stamps itself, in nanoseconds
// (or jiffies), on every change of a directory's entries. Not NFS, SMB,
// Ceph, 9p or FUSE (another machine's or process's clock and caching), nor
// overlayfs (a directory's ctime is a layer's).
bool ctimeIsLocal(int fd) {
    struct statfs fs;
    if (fstatfs(fd, &fs) < 0) return false;
    switch (static_cast<unsigned long>(fs.f_type)) {
        case EXT4_SUPER_MAGIC:  // ext2 and ext3 too
        case XFS_SUPER_MAGIC:
        case BTRFS_SUPER_MAGIC:
        case TMPFS_MAGIC:
        case F2FS_SUPER_MAGIC:
            return true;
        default:
            return false;
    }
}

int64_t ns(const timespec& t) {
    return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// The wall clock's distance from the boot: it moves only when the wall
// clock is stepped (frequency adjustments slew both clocks alike).
WalkClock realtimeClock() {
    timespec real{}, boot{};
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_BOOTTIME, &boot);
    return {real, ns(real) - ns(boot)};
}

// Which filesystem, through which mount: the worktree's fstatfs f_fsid
// (ext4, Btrfs: the volume's UUID, Btrfs's mixed with the subvolume; tmpfs:
// one made at each mount; XFS, F2FS: the device number) and the statx id of
// the mount its fd is on, with the kind of id: 2 never reused in a boot
// (STATX_MNT_ID_UNIQUE), 1 reused once that mount is gone, 0 none given.
struct MountIdentity {
    uint64_t fsid = 0;
    uint64_t mount_id = 0;
    uint64_t mount_kind = 0;
};

bool mountIdentity(int fd, MountIdentity& out) {
    struct statfs fs;
    if (fstatfs(fd, &fs) < 0) return false;
    static_assert(sizeof fs.f_fsid == sizeof out.fsid);
    std::memcpy(&out.fsid, &fs.f_fsid, sizeof out.fsid);
    // A kernel that does not know STATX_MNT_ID_UNIQUE leaves it out of
    // stx_mask and gives the plain id.
    struct statx x;
    if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_MNT_ID | STATX_MNT_ID_UNIQUE,
              &x) < 0)
        return false;
    out.mount_kind = (x.stx_mask & STATX_MNT_ID_UNIQUE) ? 2 : (x.stx_mask & STATX_MNT_ID) ? 1 : 0;
    out.mount_id = out.mount_kind ? x.stx_mnt_id : 0;
    return true;
}

std::string bootId() {
    UniqueFd fd(open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC));
    char buf[64];
    const ssize_t n = fd ? read(fd.get(), buf, sizeof buf) : -1;
    if (n <= 0) return "";
    return std::string(buf, static_cast<size_t>(n));
}

// Little-endian fixed fields and length-prefixed strings.
void put64(std::string& out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void putString(std::string& out, std::string_view s) {
    put64(out, s.size());
    out.append(s);
}

struct Reader {
    std::string_view in;
    bool ok = true;
    uint64_t u64() {
        if (in.size() < 8) return ok = false, 0;
        uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(in[i])} << (8 * i);
        in.remove_prefix(8);
        return v;
    }
    std::string_view string() {
        const uint64_t n = u64();
        if (!ok || n > in.size()) return ok = false, std::string_view();
        std::string_view s = in.substr(0, n);
        in.remove_prefix(n);
        return s;
    }
};

// FNV-1a: not a defence against a writer (one who can write the file can
// write this too) but against a torn or scribbled file passing for a walk.
uint64_t checksum(std::string_view s) {
    uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
    return h;
}

// Everything that shaped the walk: a walk under other rules, or by another
// uid (which may list other directories), judged other names.
// The running binary's identity: its GNU build ID (a hash of its code, the
// same wherever it is installed), or where it has none, the inode, size and
// mtime of the executable. A cache holds only the names a matcher kept, so a
// binary that judges names differently must not read another's.
std::string buildIdentity() {
    std::string id;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* out) -> int {
            // The first object is the program itself.
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr)& ph = info->dlpi_phdr[i];
                if (ph.p_type != PT_NOTE) continue;
                const char* at = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
                const char* end = at + ph.p_memsz;
                while (at + sizeof(ElfW(Nhdr)) <= end) {
                    const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(at);
                    const char* name = at + sizeof(ElfW(Nhdr));
                    const char* desc = name + ((note->n_namesz + 3) & ~3u);
                    const char* next = desc + ((note->n_descsz + 3) & ~3u);
                    if (next > end) break;
                    if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
                        std::memcmp(name, "GNU", 4) == 0) {
                        static_cast<std::string*>(out)->assign(desc, note->n_descsz);
                        return 1;
                    }
                    at = next;
                }
            }
            return 1;
        },
        &id);
    if (!id.empty()) return "build-id " + id;
    struct stat self {};
    if (stat("/proc/self/exe", &self) < 0) return "unknown " + std::to_string(std::time(nullptr));
    return "exe " + std::to_string(self.st_dev) + " " + std::to_string(self.st_ino) + " " +
           std::to_string(self.st_size) + " " + std::to_string(self.st_mtim.tv_sec) + "." +
           std::to_string(self.st_mtim.tv_nsec);
}

std::string rulesText(const WalkCacheKey& key) {
    std::string out;
    for (const auto* list :
         {&key.rules->hide, &key.rules->read_only, &key.rules->show, &key.rules->writable}) {
        put64(out, list->size());
        for (const std::string& p : *list) putString(out, p);
    }
    put64(out, key.rules->max_depth);
    put64(out, key.rules->max_entries);
    put64(out, key.rules->mounted.size());
    for (const MountedPlace& m : key.rules->mounted) {
        putString(out, m.target);
        putString(out, m.source);
        put64(out, m.writable);
    }
    put64(out, geteuid());
    static const std::string identity = buildIdentity();
    putString(out, identity);
    return out;
}

std::string fileName(const struct stat& worktree) {
    char name[64];
    std::snprintf(name, sizeof name, "%s%llx-%llx", kFilePrefix,
                  static_cast<unsigned long long>(worktree.st_dev),
                  static_cast<unsigned long long>(worktree.st_ino));
    return name;
}

// The cache directory in the state directory, made when `create`; only the
// caller's, 0700 or tighter, reached through no link.
UniqueFd openCacheDir(int state_dir_fd, bool create) {
    UniqueFd fd(openat(state_dir_fd, kCacheDir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd && errno == ENOENT && create && mkdirat(state_dir_fd, kCacheDir, 0700) == 0)
        fd = UniqueFd(
            openat(state_dir_fd, kCacheDir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    if (!fd || fstat(fd.get(), &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077) != 0)
        return UniqueFd();
    return fd;
}

// The worktree's own identity and filesystem, or nothing to cache.
bool worktreeStat(const WalkCacheKey& key, struct stat& st, MountIdentity& mount) {
    return key.state_dir_fd >= 0 && key.rules && fstat(key.worktree_fd, &st) == 0 &&
           S_ISDIR(st.st_mode) && ctimeIsLocal(key.worktree_fd) &&
           mountIdentity(key.worktree_fd, mount);
}

// When the cache directory holds too many, the least recently written go.
void pruneCaches(int dir_fd, const std::string& keep) {
    UniqueFd copy(fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
    DIR* d = copy ? fdopendir(copy.get()) : nullptr;
    if (!d) return;
    copy.release();
    std::vector<std::pair<int64_t, std::string>> files;
    while (dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        struct stat st;
        if (name == keep || !name.starts_with(kFilePrefix) ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        files.push_back({ns(st.st_mtim), name});
    }
    closedir(d);
    if (files.size() + 1 <= kMaxCacheFiles) return;
    std::sort(files.begin(), files.end());
    for (size_t i = 0; i + kMaxCacheFiles < files.size() + 1; ++i)
        unlinkat(dir_fd, files[i].second.c_str(), 0);
}

}  // namespace

bool worktreeCtimeIsLocal(int fd) {
    return ctimeIsLocal(fd);
}

bool worktreeCtimeIsExactAfterQuery(int fd) {
    static const bool multigrain = [] {
        utsname u{};
        unsigned major = 0, minor = 0;
        return uname(&u) == 0 && std::sscanf(u.release, "%u.%u", &major, &minor) == 2 &&
               (major > 6 || (major == 6 && minor >= 13));
    }();
    struct statfs fs;
    if (!multigrain || fstatfs(fd, &fs) < 0) return false;
    switch (static_cast<unsigned long>(fs.f_type)) {
        case EXT4_SUPER_MAGIC:
        case XFS_SUPER_MAGIC:
        case BTRFS_SUPER_MAGIC:
        case TMPFS_MAGIC:
            return true;
        default:
            return false;
    }
}

int64_t walkClockOffsetNs() {
    return realtimeClock().offset_ns;
}

WalkClock readWalkClock() {
    return realtimeClock();
}

const char* lastWalkCacheMiss() {
    return last_miss;
}

std::shared_ptr<const WalkedDirs> loadWalkCache(const WalkCacheKey& key) {
    last_miss = "";
    struct stat wt;
    MountIdentity mount;
    if (!worktreeStat(key, wt, mount)) return miss("filesystem"), nullptr;
    UniqueFd dir = openCacheDir(key.state_dir_fd, false);
    if (!dir) return miss("directory"), nullptr;
    // Never through a link, never blocking on a FIFO, never past the bound.
    const std::string name = fileName(wt);
    auto file = readSmallFile(dir.get(), name.c_str(), name, kMaxCacheBytes);
    if (!file) {
        const int err = file.error().errnum();
        // errno 0: not a regular file, or larger than the bound.
        return miss(err == ELOOP ? "link" : err != 0 ? "absent" : "type"), nullptr;
    }
    const struct stat& st = file->st;
    if (st.st_uid != geteuid() || (st.st_mode & 077) != 0 || st.st_nlink != 1)
        return miss("owner"), nullptr;
    if (st.st_size <= 0) return miss("size"), nullptr;
    const std::string& text = file->content;
    if (text.size() < kMagic.size() + 8) return miss("parse"), nullptr;
    const std::string_view body(text.data(), text.size() - 8);
    Reader tail{std::string_view(text).substr(text.size() - 8)};
    if (!std::string_view(text).starts_with(kMagic))
        return miss(std::string_view(text).starts_with(kMagicPrefix) ? "version" : "parse"),
               nullptr;
    if (tail.u64() != checksum(body)) return miss("parse"), nullptr;
    Reader r{body.substr(kMagic.size())};
    const uint64_t dev = r.u64(), ino = r.u64();
    const uint64_t fsid = r.u64(), mount_id = r.u64(), mount_kind = r.u64();
    const std::string_view rules = r.string();
    const std::string_view boot = r.string();
    const int64_t offset = static_cast<int64_t>(r.u64());
    const uint64_t count = r.u64();
    if (!r.ok) return miss("parse"), nullptr;
    if (dev != wt.st_dev || ino != wt.st_ino) return miss("worktree"), nullptr;
    // Another filesystem, or this one unmounted since (and written by who
    // knows what), at the same device and inode numbers.
    if (fsid != mount.fsid) return miss("fsid"), nullptr;
    if (mount_kind != mount.mount_kind || mount_id != mount.mount_id || mount_kind == 0)
        return miss("mount"), nullptr;
    if (rules != rulesText(key)) return miss("rules"), nullptr;
    // Another boot's ctimes were stamped by another clock; a wall clock
    // stepped back since could stamp a later change with a kept ctime.
    if (boot != bootId() || boot.empty()) return miss("boot"), nullptr;
    if (realtimeClock().offset_ns < offset - kOffsetJitterNs) return miss("clock"), nullptr;
    auto dirs = std::make_shared<WalkedDirs>();
    // Each directory takes more than 64 bytes: a count beyond what the file
    // could hold is a lie, not a reason to reserve.
    if (count > body.size() / 64) return miss("parse"), nullptr;
    dirs->reserve(count);
    for (uint64_t i = 0; i < count && r.ok; ++i) {
        const std::string_view relative = r.string();
        WalkedDir d;
        d.dev = static_cast<dev_t>(r.u64());
        d.ino = static_cast<ino_t>(r.u64());
        d.ctime.tv_sec = static_cast<time_t>(r.u64());
        d.ctime.tv_nsec = static_cast<long>(r.u64());
        d.btime.tv_sec = static_cast<time_t>(r.u64());
        const uint64_t birth = r.u64();
        d.has_btime = (birth >> 32) != 0;
        d.btime.tv_nsec = static_cast<long>(birth & 0xffffffff);
        if ((birth >> 32) > 1 || d.btime.tv_nsec >= 1'000'000'000 || d.ctime.tv_nsec < 0 ||
            d.ctime.tv_nsec >= 1'000'000'000)
            return miss("parse"), nullptr;
        d.entries = r.u64();
        d.settled = true;
        const uint64_t names = r.u64();
        if (!r.ok || names > r.in.size() / 9 || names > d.entries) return miss("parse"), nullptr;
        d.names.reserve(names);
        for (uint64_t j = 0; j < names && r.ok; ++j) {
            const std::string_view name = r.string();
            const uint64_t flags = r.u64();
            if (name.empty() || name.find('/') != std::string_view::npos ||
                name.find('\0') != std::string_view::npos || name == "." || name == ".." ||
                flags > 31 || flags == 0)
                return miss("parse"), nullptr;
            d.names.push_back({std::string(name), (flags & 1) != 0, (flags & 2) != 0,
                               (flags & 4) != 0, (flags & 8) != 0, (flags & 16) != 0});
        }
        // Only directories on the worktree's own device: another beneath
        // it is a mount whose filesystem was not judged.
        if (d.dev != wt.st_dev) continue;
        if (!dirs->emplace(std::string(relative), std::move(d)).second)
            return miss("parse"), nullptr;
    }
    if (!r.ok || !r.in.empty()) return miss("parse"), nullptr;
    return dirs;
}

void saveWalkCache(const WalkCacheKey& key, const WalkedDirs& walked, int64_t clock_offset_ns) {
    struct stat wt;
    MountIdentity mount;
    if (!worktreeStat(key, wt, mount) || mount.mount_kind == 0) return;
    std::string out(kMagic);
    put64(out, wt.st_dev);
    put64(out, wt.st_ino);
    put64(out, mount.fsid);
    put64(out, mount.mount_id);
    put64(out, mount.mount_kind);
    putString(out, rulesText(key));
    putString(out, bootId());
    put64(out, static_cast<uint64_t>(clock_offset_ns));
    const size_t count_at = out.size();
    put64(out, 0);
    uint64_t count = 0;
    for (const auto& [relative, d] : walked) {
        if (!d.settled || d.dev != wt.st_dev) continue;
        putString(out, relative);
        put64(out, d.dev);
        put64(out, d.ino);
        put64(out, static_cast<uint64_t>(d.ctime.tv_sec));
        put64(out, static_cast<uint64_t>(d.ctime.tv_nsec));
        put64(out, static_cast<uint64_t>(d.has_btime ? d.btime.tv_sec : 0));
        put64(out, (uint64_t{d.has_btime} << 32) |
                       static_cast<uint64_t>(d.has_btime ? d.btime.tv_nsec : 0));
        put64(out, d.entries);
        put64(out, d.names.size());
        for (const WalkedName& n : d.names) {
            putString(out, n.name);
            put64(out, (n.hidden ? 1 : 0) | (n.kept ? 2 : 0) | (n.is_dir ? 4 : 0) |
                           (n.link_in_kept ? 8 : 0) | (n.on_way ? 16 : 0));
        }
        ++count;
        if (out.size() > kMaxCacheBytes) return;
    }
    std::string counted;
    put64(counted, count);
    out.replace(count_at, 8, counted);
    put64(out, checksum(out));
    if (out.size() > kMaxCacheBytes) return;

    UniqueFd dir = openCacheDir(key.state_dir_fd, true);
    if (!dir) return;
    const std::string name = fileName(wt);
    struct stat existing;
    if (fstatat(dir.get(), name.c_str(), &existing, AT_SYMLINK_NOFOLLOW) < 0)
        pruneCaches(dir.get(), name);
    // Whole or not at all: a reader sees the old file or the new one. The
    // temporary name is this process's; one left by a killed run is
    // replaced (O_EXCL after unlinkat: never written through a link).
    const std::string tmp = "." + name + ".tmp." + std::to_string(getpid());
    unlinkat(dir.get(), tmp.c_str(), 0);
    UniqueFd fd(
        openat(dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) return;
    size_t done = 0;
    while (done < out.size()) {
        const ssize_t n = write(fd.get(), out.data() + done, out.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<size_t>(n);
    }
    if (done != out.size() || close(fd.release()) < 0 ||
        renameat(dir.get(), tmp.c_str(), dir.get(), name.c_str()) < 0)
        unlinkat(dir.get(), tmp.c_str(), 0);
}

}  // namespace stockade
