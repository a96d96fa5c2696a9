// What one entry of the sandbox's root costs, built each way the child could
// build it (issue 24: is a mount operation fewer worth its design?). Each
// round forks a child that takes a mount namespace of its own (and a user
// namespace when not root, as a rootless run does), mounts a staging tmpfs,
// then times, for kEntries entries of each kind:
//   dir mask   bind of an empty dir + read-only remount (today's /proc/acpi)
//              against one read-only empty tmpfs (one operation fewer)
//   device     open_tree clone + mount_setattr + move_mount (today's /dev/null)
//              against mount(MS_BIND) + remount
//   etc file   a copy into the tmpfs (open, sendfile to EOF, close: today's
//              curated /etc file) against a bind of the host file
//              (open_tree + mount_setattr + move_mount)
//   etc tree   one read-only bind of a directory holding kEntries files, with
//              the two fstatat per entry that checking it (the prepared entry
//              and its source) would take: the "prepared /etc" design
// and the detach of the staging tree with everything on it (the teardown).
// Prints the median over the rounds of each figure, in µs per entry.
// Usage: mount_ops_bench [rounds] (default 31).

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "namespaces/syscalls.h"

namespace {

namespace ns = stockade::ns;

constexpr int kEntries = 20;
constexpr int kFigures = 9;
const char* const kNames[kFigures] = {
    "dir mask: bind + read-only remount",
    "dir mask: read-only tmpfs (1 op)",
    "device: open_tree + setattr + move_mount",
    "device: bind + remount",
    "etc file: copy into the tmpfs",
    "etc file: bind of the host file",
    "etc tree: 1 bind / entry, plus fstatat x2",
    "teardown: detach the staging tree / entry",
    "teardown of the same tree, copies only",
};

double nowUs() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

void must(bool ok, const char* what) {
    if (ok) return;
    std::perror(what);
    _exit(2);
}

std::string at(const char* root, const char* stem, int i) {
    return std::string(root) + "/" + stem + std::to_string(i);
}

void bindAttach(int from, const std::string& to, unsigned attrs) {
    int tree = ns::sysOpenTree(from, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
    must(tree >= 0, "open_tree");
    mount_attr attr{};
    attr.attr_set = attrs;
    must(ns::sysMountSetattr(tree, "", AT_EMPTY_PATH, &attr) == 0, "mount_setattr");
    must(ns::sysMoveMount(tree, "", AT_FDCWD, to.c_str(), MOVE_MOUNT_F_EMPTY_PATH) == 0,
         "move_mount");
    close(tree);
}

constexpr unsigned long kRo = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;

// One round, in a child of its own namespace; writes kFigures doubles to `out`.
void measureRound(const char* stage, const char* source_dir, int out) {
    if (geteuid() == 0) {
        must(unshare(CLONE_NEWNS) == 0, "unshare");
    } else {
        // The caller as root of the new user namespace, as stockade's
        // rootless runs map it: files made in the tmpfs need a mapped owner.
        const uid_t uid = geteuid();
        const gid_t gid = getegid();
        must(unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0, "unshare(CLONE_NEWUSER)");
        auto put = [](const char* file, const std::string& text) {
            int fd = open(file, O_WRONLY | O_CLOEXEC);
            must(
                fd >= 0 && write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()),
                file);
            close(fd);
        };
        put("/proc/self/setgroups", "deny");
        put("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1");
        put("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1");
    }
    must(mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0, "mount private");
    must(mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m") == 0, "mount tmpfs");
    const char* names[] = {"a", "b", "c", "d", "e", "f", "g"};
    for (const char* n : names)
        for (int i = 0; i < kEntries; ++i) {
            std::string p = at(stage, n, i);
            if (n[0] == 'c' || n[0] == 'd' || n[0] == 'f')
                close(open(p.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
            else if (n[0] != 'e')
                mkdir(p.c_str(), 0755);
        }
    std::string empty = std::string(stage) + "/empty";
    mkdir(empty.c_str(), 0755);
    double fig[kFigures] = {};
    double t = nowUs();
    for (int i = 0; i < kEntries; ++i) {
        std::string p = at(stage, "a", i);
        must(mount(empty.c_str(), p.c_str(), nullptr, MS_BIND, nullptr) == 0, "bind");
        must(mount(nullptr, p.c_str(), nullptr, kRo, nullptr) == 0, "remount");
    }
    fig[0] = nowUs() - t;
    t = nowUs();
    for (int i = 0; i < kEntries; ++i)
        must(mount("tmpfs", at(stage, "b", i).c_str(), "tmpfs",
                   MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,mode=0755") == 0,
             "tmpfs mask");
    fig[1] = nowUs() - t;
    int null_fd = open("/dev/null", O_PATH | O_CLOEXEC);
    must(null_fd >= 0, "open /dev/null");
    t = nowUs();
    for (int i = 0; i < kEntries; ++i) bindAttach(null_fd, at(stage, "c", i), MOUNT_ATTR_NOSUID);
    fig[2] = nowUs() - t;
    t = nowUs();
    for (int i = 0; i < kEntries; ++i) {
        std::string p = at(stage, "d", i);
        must(mount("/dev/null", p.c_str(), nullptr, MS_BIND, nullptr) == 0, "bind dev");
        must(mount(nullptr, p.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_NOSUID, nullptr) == 0,
             "remount dev");
    }
    fig[3] = nowUs() - t;
    std::vector<int> sources;
    for (int i = 0; i < kEntries; ++i) {
        std::string p = at(source_dir, "f", i);
        int fd = open(p.c_str(), O_RDONLY | O_CLOEXEC);
        must(fd >= 0, "open source");
        sources.push_back(fd);
    }
    t = nowUs();
    for (int i = 0; i < kEntries; ++i) {
        int fd = open(at(stage, "e", i).c_str(),
                      O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
        must(fd >= 0, "create copy");
        off_t off = 0;
        while (sendfile(fd, sources[i], &off, 1 << 20) > 0) {
        }
        close(fd);
    }
    fig[4] = nowUs() - t;
    t = nowUs();
    for (int i = 0; i < kEntries; ++i)
        bindAttach(sources[i], at(stage, "f", i), MOUNT_ATTR_NOSUID | MOUNT_ATTR_RDONLY);
    fig[5] = nowUs() - t;
    int dir = open(source_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    must(dir >= 0, "open source dir");
    t = nowUs();
    struct stat st;
    for (int i = 0; i < kEntries; ++i) {
        std::string name = "f" + std::to_string(i);
        must(fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0, "fstatat");
        must(fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0, "fstatat");
    }
    bindAttach(dir, at(stage, "g", 0), MOUNT_ATTR_NOSUID | MOUNT_ATTR_RDONLY);
    fig[6] = nowUs() - t;
    t = nowUs();
    must(umount2(stage, MNT_DETACH) == 0, "umount2");
    fig[7] = nowUs() - t;
    // The same staging tmpfs holding only the copies: what the entries cost
    // to tear down when none of them is a mount.
    must(mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m") == 0, "mount tmpfs");
    for (int i = 0; i < kEntries; ++i) {
        int fd = open(at(stage, "e", i).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        off_t off = 0;
        while (sendfile(fd, sources[i], &off, 1 << 20) > 0) {
        }
        close(fd);
    }
    t = nowUs();
    must(umount2(stage, MNT_DETACH) == 0, "umount2");
    fig[8] = nowUs() - t;
    // Per entry: the tree is one bind for all entries, the teardown covers
    // every mount of the round (5 kinds of kEntries each, and the tree).
    for (double& f : fig) f /= kEntries;
    must(write(out, fig, sizeof fig) == sizeof fig, "write");
    _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
    const int rounds = argc > 1 ? std::atoi(argv[1]) : 31;
    char stage[] = "/tmp/mount-ops-stage-XXXXXX";
    char source[] = "/tmp/mount-ops-source-XXXXXX";
    if (!mkdtemp(stage) || !mkdtemp(source)) {
        std::perror("mkdtemp");
        return 2;
    }
    // Sources sized like the curated /etc's files (a few hundred bytes to 12 KiB).
    for (int i = 0; i < kEntries; ++i) {
        std::string p = at(source, "f", i);
        int fd = open(p.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        std::string body(static_cast<size_t>(200 + 600 * i), 'x');
        if (fd < 0 || write(fd, body.data(), body.size()) < 0) {
            std::perror("write source");
            return 2;
        }
        close(fd);
    }
    chmod(stage, 0777);
    std::vector<std::vector<double>> figures(kFigures);
    int status = 0;
    for (int r = 0; r < rounds; ++r) {
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) < 0) return 2;
        pid_t pid = fork();
        if (pid == 0) measureRound(stage, source, fds[1]);
        close(fds[1]);
        double fig[kFigures];
        ssize_t n = read(fds[0], fig, sizeof fig);
        close(fds[0]);
        waitpid(pid, &status, 0);
        if (n != sizeof fig) {
            std::fprintf(stderr, "mount_ops_bench: round %d failed (status %d)\n", r, status);
            status = 1;
            break;
        }
        for (int i = 0; i < kFigures; ++i) figures[i].push_back(fig[i]);
    }
    for (int i = 0; i < kEntries; ++i) unlink(at(source, "f", i).c_str());
    rmdir(source);
    rmdir(stage);
    if (figures[0].empty()) return 1;
    std::printf("median of %zu rounds, %d entries each, us per entry (uid %d)\n", figures[0].size(),
                kEntries, static_cast<int>(geteuid()));
    for (int i = 0; i < kFigures; ++i) {
        auto& v = figures[i];
        std::sort(v.begin(), v.end());
        std::printf("  %-44s %7.2f\n", kNames[i], v[v.size() / 2]);
    }
    return status == 0 ? 0 : 1;
}
