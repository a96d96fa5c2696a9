// ns::sysOpenat2 against the kernel: a `..` resolved beneath a directory
// while renames run elsewhere. The kernel answers such a lookup EAGAIN when
// a rename (or a mount) anywhere raced it; the wrapper tries again.
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <thread>

#include "base/unique_fd.h"
#include "namespaces/syscalls.h"

using namespace stockade;

TEST_CASE("openat2 beneath a directory answers a `..` raced by renames, tried again", "[openat2]") {
    char dir_template[] = "/tmp/stockade-openat2-XXXXXX";
    REQUIRE(mkdtemp(dir_template) != nullptr);
    const std::string dir = dir_template;
    REQUIRE(mkdir((dir + "/a").c_str(), 0755) == 0);
    REQUIRE(mkdir((dir + "/a/b").c_str(), 0755) == 0);
    REQUIRE(mkdir((dir + "/c").c_str(), 0755) == 0);
    REQUIRE(mkdir((dir + "/spin").c_str(), 0755) == 0);
    UniqueFd root(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(root);

    // Renames as fast as one thread makes them, in a directory of their own.
    const std::string x = dir + "/spin/x", y = dir + "/spin/y";
    REQUIRE(mkdir(x.c_str(), 0755) == 0);
    std::atomic<bool> stop{false};
    std::thread renamer([&] {
        for (bool at_x = true; !stop; at_x = !at_x)
            (void)rename(at_x ? x.c_str() : y.c_str(), at_x ? y.c_str() : x.c_str());
    });
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
    int raw_eagain = 0, wrapped_failures = 0;
    for (int i = 0; i < 20000; ++i) {
        int fd =
            static_cast<int>(syscall(SYS_openat2, root.get(), "a/b/../../c", &how, sizeof how));
        if (fd >= 0)
            close(fd);
        else if (errno == EAGAIN)
            ++raw_eagain;
        fd = ns::sysOpenat2(root.get(), "a/b/../../c", &how);
        if (fd >= 0)
            close(fd);
        else
            ++wrapped_failures;
    }
    stop = true;
    renamer.join();
    // What the bare call met, for the record: the race is the kernel's
    // and this machine's to show, not an assertion.
    INFO("bare openat2 answered EAGAIN " << raw_eagain << " times in 20000");
    CHECK(wrapped_failures == 0);
    for (const char* p : {"/spin/x", "/spin/y", "/spin", "/a/b", "/a", "/c"})
        (void)rmdir((dir + p).c_str());
    (void)rmdir(dir.c_str());
}
