// readSmallFile: the bound, links, FIFOs and /proc's size-0 files.
#include "base/small_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

using namespace stockade;

namespace {

struct Dir {
    std::filesystem::path path;
    Dir() {
        char name[] = "/tmp/stockade-small-file-XXXXXX";
        REQUIRE(mkdtemp(name) != nullptr);
        path = name;
    }
    ~Dir() { std::filesystem::remove_all(path); }
    void write(const std::string& name, const std::string& content) const {
        std::ofstream(path / name, std::ios::binary) << content;
    }
};

}  // namespace

TEST_CASE("small file: read whole up to the bound, refused past it", "[small_file]") {
    Dir d;
    const std::string content(10000, 'x');
    d.write("f", content);
    auto whole = readSmallFile(AT_FDCWD, (d.path / "f").c_str(), "f", 64u << 20);
    REQUIRE(whole);
    CHECK(whole->content == content);
    // A bound of many megabytes sizes the buffer by the file, not the bound.
    CHECK(whole->content.capacity() < (1u << 20));
    CHECK(readSmallFile(AT_FDCWD, (d.path / "f").c_str(), "f", 10000));
    CHECK_FALSE(readSmallFile(AT_FDCWD, (d.path / "f").c_str(), "f", 9999));
}

TEST_CASE("small file: a link, a FIFO and a directory are refused", "[small_file]") {
    Dir d;
    d.write("f", "x");
    REQUIRE(symlink((d.path / "f").c_str(), (d.path / "l").c_str()) == 0);
    REQUIRE(mkfifo((d.path / "p").c_str(), 0600) == 0);
    auto link = readSmallFile(AT_FDCWD, (d.path / "l").c_str(), "l", 100);
    REQUIRE_FALSE(link);
    CHECK(link.error().errnum() == ELOOP);
    CHECK_FALSE(readSmallFile(AT_FDCWD, (d.path / "p").c_str(), "p", 100));
    CHECK_FALSE(readSmallFile(AT_FDCWD, d.path.c_str(), "dir", 100));
}

TEST_CASE("small file: /proc's size-0 files are read past their first page", "[small_file]") {
    // smaps says size 0 and holds a block of lines for each mapping: far
    // more than the first page the buffer starts with.
    auto smaps = readSmallFile(AT_FDCWD, "/proc/self/smaps", "smaps", 4u << 20);
    REQUIRE(smaps);
    CHECK(smaps->st.st_size == 0);
    CHECK(smaps->content.size() > 8192);
    CHECK(smaps->content.back() == '\n');
}
