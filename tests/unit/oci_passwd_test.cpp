// HOME for a process whose env names none (oci/passwd.h): the home of its uid
// in the container's /etc/passwd, "/" otherwise, and the image's file read
// only when it is a small regular file inside the image.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "oci/passwd.h"
#include "tests/unit/oracle_test_support.h"

using namespace stockade;
using oracle_test::TempDir;
using oracle_test::writeFile;

TEST_CASE("oci HOME: the first entry of the uid gives it, '/' without one", "[oci]") {
    const std::string passwd =
        "# a comment:x:0:0::/comment:/bin/sh\n"
        "root:x:0:0:root:/root:/bin/sh\n"
        "toor:x:0:0::/second:/bin/sh\n"
        "short:x:7\n"
        "notnum:x:1x:1::/wrong:/bin/sh\n"
        "app:x:1000:1000:App,,,:/home/app:/bin/bash\n"
        "empty:x:1001:1001:::/bin/sh\n"
        "relative:x:1002:1002::home/rel:/bin/sh\n"
        "last:x:4294967294:1::/last:/bin/sh";  // no newline at the end
    CHECK(oci::homeOfUid(passwd, 0) == "/root");
    CHECK(oci::homeOfUid(passwd, 1000) == "/home/app");
    CHECK(oci::homeOfUid(passwd, 1001) == "/");
    CHECK(oci::homeOfUid(passwd, 1002) == "/");
    CHECK(oci::homeOfUid(passwd, 7) == "/");
    CHECK(oci::homeOfUid(passwd, 1) == "/");
    CHECK(oci::homeOfUid(passwd, 4294967294u) == "/last");
    CHECK(oci::homeOfUid("", 0) == "/");
}

TEST_CASE("oci list: an owner's name is its uid's first entry, #UID without one", "[oci]") {
    const std::string passwd =
        "# root:x:5:0::/c:/bin/sh\n"
        "root:x:0:0:root:/root:/bin/sh\n"
        "toor:x:0:0::/second:/bin/sh\n"
        "short:x:7\n"
        "nobody:x:65534:65534::/nonexistent:/usr/sbin/nologin";
    CHECK(oci::nameOfUid(passwd, 0) == "root");
    CHECK(oci::nameOfUid(passwd, 65534) == "nobody");
    CHECK(oci::nameOfUid(passwd, 5) == "#5");
    CHECK(oci::nameOfUid(passwd, 7) == "#7");
    CHECK(oci::nameOfUid("", 1000) == "#1000");
}

TEST_CASE("oci HOME: a HOME the env names is kept, whatever passwd says", "[oci]") {
    std::vector<std::string> env = {"PATH=/bin", "HOME=/mine"};
    oci::addHomeIfMissing(env, 0, "root:x:0:0::/root:/bin/sh\n");
    CHECK(env == std::vector<std::string>{"PATH=/bin", "HOME=/mine"});
    std::vector<std::string> none = {"PATH=/bin", "HOMEDIR=/x"};
    oci::addHomeIfMissing(none, 0, "root:x:0:0::/root:/bin/sh\n");
    CHECK(none == std::vector<std::string>{"PATH=/bin", "HOMEDIR=/x", "HOME=/root"});
}

TEST_CASE("oci HOME: an empty HOME is none, as runc takes it (podman's exec sends HOME=)",
          "[oci]") {
    std::vector<std::string> env = {"HOME=", "PATH=/bin"};
    CHECK_FALSE(oci::envHasHome(env));
    oci::addHomeIfMissing(env, 1000, "bob:x:1000:1000::/home/bob:/bin/sh\n");
    CHECK(env == std::vector<std::string>{"PATH=/bin", "HOME=/home/bob"});
    std::vector<std::string> unknown = {"PATH=/bin", "HOME="};
    oci::addHomeIfMissing(unknown, 1234, "root:x:0:0::/root:/bin/sh\n");
    CHECK(unknown == std::vector<std::string>{"PATH=/bin", "HOME=/"});
    // The last decides: a later empty one empties it, a later value fills it.
    CHECK_FALSE(oci::envHasHome({"HOME=/a", "HOME="}));
    CHECK(oci::envHasHome({"HOME=", "HOME=/b"}));
    // Only the last kept: the process reads the first (getenv).
    std::vector<std::string> two = {"HOME=", "PATH=/bin", "HOME=/b"};
    oci::addHomeIfMissing(two, 0, "root:x:0:0::/root:/bin/sh\n");
    CHECK(two == std::vector<std::string>{"PATH=/bin", "HOME=/b"});
    std::vector<std::string> kept = {"HOME=/a", "HOME=/b"};
    oci::keepLastHome(kept);
    CHECK(kept == std::vector<std::string>{"HOME=/b"});
}

TEST_CASE("oci HOME: the image's passwd is read only as a small regular file of the image",
          "[oci]") {
    TempDir image;
    TempDir outside;
    writeFile(outside / "passwd", "root:x:0:0::/from-outside:/bin/sh\n");
    REQUIRE(mkdir((image / "etc").c_str(), 0755) == 0);
    UniqueFd root(open(image.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(root);

    SECTION("a regular file") {
        writeFile(image / "etc/passwd", "root:x:0:0::/root:/bin/sh\n");
        CHECK(oci::homeOfUid(oci::readImagePasswd(root.get()), 0) == "/root");
    }
    SECTION("a symlink is resolved in the image, never out of it") {
        writeFile(image / "etc/real", "root:x:0:0::/in-image:/bin/sh\n");
        REQUIRE(symlink("/etc/real", (image / "etc/passwd").c_str()) == 0);
        CHECK(oci::homeOfUid(oci::readImagePasswd(root.get()), 0) == "/in-image");
        REQUIRE(unlink((image / "etc/passwd").c_str()) == 0);
        REQUIRE(symlink((outside / "passwd").c_str(), (image / "etc/passwd").c_str()) == 0);
        CHECK(oci::readImagePasswd(root.get()).empty());
        REQUIRE(unlink((image / "etc/passwd").c_str()) == 0);
        const std::string climb = "../../../../../../../../../../.." + outside.path() + "/passwd";
        REQUIRE(symlink(climb.c_str(), (image / "etc/passwd").c_str()) == 0);
        CHECK(oci::readImagePasswd(root.get()).empty());
    }
    SECTION("a FIFO is never opened (no hang), a directory not read") {
        REQUIRE(mkfifo((image / "etc/passwd").c_str(), 0644) == 0);
        CHECK(oci::readImagePasswd(root.get()).empty());
        REQUIRE(unlink((image / "etc/passwd").c_str()) == 0);
        REQUIRE(mkdir((image / "etc/passwd").c_str(), 0755) == 0);
        CHECK(oci::readImagePasswd(root.get()).empty());
    }
    SECTION("a file past the bound is not read") {
        std::string big(oci::kMaxPasswdBytes, '#');
        big += "\nroot:x:0:0::/root:/bin/sh\n";
        writeFile(image / "etc/passwd", big);
        CHECK(oci::readImagePasswd(root.get()).empty());
    }
    SECTION("none") {
        CHECK(oci::readImagePasswd(root.get()).empty());
    }
}
