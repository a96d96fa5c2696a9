#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>

#include "oracle/safe_read.h"
#include "tests/unit/oracle_test_support.h"

using namespace stockade;
using namespace stockade::oracle;
using oracle_test::TempDir;
using oracle_test::writeFile;

namespace {

UniqueFd openDir(const std::string& path) {
    Result<UniqueFd> fd = openDirectory(path);
    REQUIRE(fd.ok());
    return std::move(*fd);
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a regular file is read whole, up to and including the bound", "[oracle][safe_read]") {
    TempDir dir;
    writeFile(dir / "report/result.xml", "<testsuites/>\n");
    writeFile(dir / "empty", "");
    UniqueFd fd = openDir(dir.path());
    CHECK(*readBeneath(fd.get(), "report/result.xml", 14) == "<testsuites/>\n");
    CHECK(readBeneath(fd.get(), "empty", 0).value().empty());
    Result<std::string> over = readBeneath(fd.get(), "report/result.xml", 13);
    REQUIRE_FALSE(over.ok());
    CHECK(over.error().describe() ==
          "\"report/result.xml\" is 14 bytes, more than the bound of 13; not read");
}

TEST_CASE("a symlink to a host file is refused, not followed", "[oracle][safe_read]") {
    TempDir dir;
    REQUIRE(::symlink("/etc/passwd", (dir / "report.xml").c_str()) == 0);
    REQUIRE(::symlink("../../../../../../etc/passwd", (dir / "relative.xml").c_str()) == 0);
    UniqueFd fd = openDir(dir.path());
    for (const char* name : {"report.xml", "relative.xml"}) {
        Result<std::string> read = readBeneath(fd.get(), name, 1 << 20);
        REQUIRE_FALSE(read.ok());
        INFO(read.error().describe());
        CHECK(contains(read.error().describe(), "is a symlink, not a regular file; refused"));
    }
}

TEST_CASE("a symlink in a middle component is refused", "[oracle][safe_read]") {
    TempDir dir;
    REQUIRE(::symlink("/etc", (dir / "etc").c_str()) == 0);
    writeFile(dir / "real/file", "x");
    REQUIRE(::symlink("real", (dir / "inner").c_str()) == 0);
    UniqueFd fd = openDir(dir.path());
    for (const char* path : {"etc/passwd", "inner/file"}) {
        Result<std::string> read = readBeneath(fd.get(), path, 1 << 20);
        REQUIRE_FALSE(read.ok());
        INFO(read.error().describe());
        CHECK(contains(read.error().describe(), "goes through a symlink, which is never followed"));
        CHECK(read.error().errnum() == ELOOP);
    }
    CHECK(*readBeneath(fd.get(), "real/file", 1) == "x");
}

TEST_CASE("paths that leave the directory are refused", "[oracle][safe_read]") {
    TempDir dir;
    writeFile(dir / "inside/file", "x");
    UniqueFd fd = openDir(dir / "inside");
    for (const char* path : {"../inside/file", "/etc/passwd", "./../../etc/passwd"}) {
        Result<std::string> read = readBeneath(fd.get(), path, 1 << 20);
        REQUIRE_FALSE(read.ok());
        INFO(read.error().describe());
        CHECK(read.error().errnum() == EXDEV);
        CHECK(contains(read.error().describe(), "leaves the directory or crosses a mount point"));
    }
}

TEST_CASE("a mount point and a magic link are not crossed", "[oracle][safe_read]") {
    // /proc is a mount of its own beneath "/", and /proc/self/root a magic link.
    UniqueFd root = openDir("/");
    Result<std::string> proc = readBeneath(root.get(), "proc/version", 1 << 20);
    REQUIRE_FALSE(proc.ok());
    CHECK(proc.error().errnum() == EXDEV);
    UniqueFd proc_fd = openDir("/proc");
    Result<std::string> magic = readBeneath(proc_fd.get(), "self/root/etc/passwd", 1 << 20);
    REQUIRE_FALSE(magic.ok());
    CHECK((magic.error().errnum() == ELOOP || magic.error().errnum() == EXDEV));
}

TEST_CASE("a FIFO is refused without blocking the reader", "[oracle][safe_read]") {
    TempDir dir;
    REQUIRE(::mkfifo((dir / "report.xml").c_str(), 0644) == 0);
    UniqueFd fd = openDir(dir.path());
    auto read = std::async(std::launch::async,
                           [&] { return readBeneath(fd.get(), "report.xml", 1 << 20); });
    if (read.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
        // Release the blocked reader before failing, so the test can end.
        int writer = ::open((dir / "report.xml").c_str(), O_WRONLY | O_NONBLOCK);
        read.wait();
        if (writer >= 0) ::close(writer);
        FAIL("readBeneath blocked on a FIFO");
    }
    Result<std::string> result = read.get();
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().describe() == "\"report.xml\" is a FIFO, not a regular file; refused");
}

TEST_CASE("a device node is refused without being opened for reading", "[oracle][safe_read]") {
    TempDir dir;
    // The same device as /dev/null (char 1:3); only root may make one.
    if (::mknod((dir / "report.xml").c_str(), S_IFCHR | 0644, makedev(1, 3)) != 0) {
        oracle_test::skipLoudly("mknod of a character device needs CAP_MKNOD: " +
                                std::string(strerror(errno)));
        return;
    }
    UniqueFd fd = openDir(dir.path());
    Result<std::string> read = readBeneath(fd.get(), "report.xml", 1 << 20);
    REQUIRE_FALSE(read.ok());
    CHECK(read.error().describe() ==
          "\"report.xml\" is a character device, not a regular file; refused");
}

TEST_CASE("a socket is refused", "[oracle][safe_read]") {
    TempDir dir;
    int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(sock >= 0);
    UniqueFd owner(sock);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::string path = dir / "report.xml";
    REQUIRE(path.size() < sizeof address.sun_path);
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    REQUIRE(::bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    UniqueFd fd = openDir(dir.path());
    Result<std::string> read = readBeneath(fd.get(), "report.xml", 1 << 20);
    REQUIRE_FALSE(read.ok());
    CHECK(read.error().describe() == "\"report.xml\" is a socket, not a regular file; refused");
}

TEST_CASE("a directory where a file is expected is refused", "[oracle][safe_read]") {
    TempDir dir;
    std::filesystem::create_directories(dir / "report.xml/inner");
    UniqueFd fd = openDir(dir.path());
    Result<std::string> read = readBeneath(fd.get(), "report.xml", 1 << 20);
    REQUIRE_FALSE(read.ok());
    CHECK(read.error().describe() == "\"report.xml\" is a directory, not a regular file; refused");
    Result<std::string> missing = readBeneath(fd.get(), "absent.xml", 1 << 20);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().errnum() == ENOENT);
}

TEST_CASE("a 300 MiB sparse file is refused by its size, unread", "[oracle][safe_read]") {
    TempDir dir;
    {
        UniqueFd file(::open((dir / "report.xml").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
        REQUIRE(file.valid());
        REQUIRE(::ftruncate(file.get(), 300ll << 20) == 0);
    }
    UniqueFd fd = openDir(dir.path());
    auto start = std::chrono::steady_clock::now();
    Result<std::string> read = readBeneath(fd.get(), "report.xml", 64 << 20);
    auto elapsed = std::chrono::steady_clock::now() - start;
    REQUIRE_FALSE(read.ok());
    CHECK(read.error().describe() ==
          "\"report.xml\" is 314572800 bytes, more than the bound of 67108864; not read");
    // Reading 300 MiB of zeros would take far longer than judging by fstat.
    CHECK(elapsed < std::chrono::milliseconds(500));
}

TEST_CASE("reading stops one byte past the bound when a file grew", "[oracle][safe_read]") {
    TempDir dir;
    writeFile(dir / "grows", std::string(100, 'x'));
    UniqueFd fd = openDir(dir.path());
    Result<OpenedFile> file = openRegularBeneath(fd.get(), "grows", 100);
    REQUIRE(file.ok());
    CHECK(file->size == 100);
    writeFile(dir / "grows", std::string(5000, 'y'));  // same inode, truncated and rewritten
    uint64_t seen = 0;
    Status read = readChunks(*file, 100, [&](std::string_view chunk) { seen += chunk.size(); });
    REQUIRE_FALSE(read.ok());
    CHECK(read.error().describe() == "the file grew past the bound of 100 bytes while being read");
    CHECK(seen == 0);  // the over-long chunk is not handed on
}

TEST_CASE("a symlink's text is read without following it", "[oracle][safe_read]") {
    TempDir dir;
    REQUIRE(::symlink("/etc/passwd", (dir / "link").c_str()) == 0);
    writeFile(dir / "file", "x");
    UniqueFd fd = openDir(dir.path());
    CHECK(*readLinkBeneath(fd.get(), "link") == "/etc/passwd");
    CHECK_FALSE(readLinkBeneath(fd.get(), "file").ok());
}

TEST_CASE("the walk lists every entry, never follows symlinks, and is bounded",
          "[oracle][safe_read]") {
    TempDir dir;
    writeFile(dir / "a/b/c.txt", "hello", 0755);
    writeFile(dir / "a-b", "");
    REQUIRE(::symlink("/etc", (dir / "a/etc").c_str()) == 0);
    REQUIRE(::symlink("missing", (dir / "dangling").c_str()) == 0);
    REQUIRE(::mkfifo((dir / "a/fifo").c_str(), 0600) == 0);
    std::filesystem::create_directories(dir / "empty");
    UniqueFd fd = openDir(dir.path());

    Result<std::vector<Entry>> walked = walkBeneath(fd.get(), WalkLimits{});
    REQUIRE(walked.ok());
    std::vector<std::string> paths;
    for (const Entry& entry : *walked) paths.push_back(entry.path);
    // A directory before its contents, siblings by name.
    CHECK(paths == std::vector<std::string>{"a", "a/b", "a/b/c.txt", "a/etc", "a/fifo", "a-b",
                                            "dangling", "empty"});
    const Entry& file = (*walked)[2];
    CHECK(file.type == FileType::Regular);
    CHECK(file.size == 5);
    CHECK(file.mode == 0755);
    const Entry& link = (*walked)[3];
    CHECK(link.type == FileType::Symlink);
    CHECK(link.link_target == "/etc");
    CHECK((*walked)[4].type == FileType::Fifo);
    CHECK((*walked)[6].link_target == "missing");

    WalkLimits few;
    few.max_entries = 5;
    Result<std::vector<Entry>> too_many = walkBeneath(fd.get(), few);
    REQUIRE_FALSE(too_many.ok());
    CHECK(too_many.error().describe() == "more than 5 entries beneath the walked directory");

    WalkLimits shallow;
    shallow.max_depth = 2;
    Result<std::vector<Entry>> too_deep = walkBeneath(fd.get(), shallow);
    REQUIRE_FALSE(too_deep.ok());
    CHECK(too_deep.error().describe() == "\"a/b\" is nested more than 2 levels deep");
}

TEST_CASE("a directory listing says when it was cut short", "[oracle][safe_read]") {
    TempDir dir;
    for (int i = 0; i < 10; ++i) writeFile(dir / ("f" + std::to_string(i)), "");
    UniqueFd fd = openDir(dir.path());
    Result<DirectoryListing> all = listDirectory(fd.get(), 10);
    REQUIRE(all.ok());
    CHECK(all->entries.size() == 10);
    CHECK_FALSE(all->truncated);
    Result<DirectoryListing> cut = listDirectory(fd.get(), 9);
    REQUIRE(cut.ok());
    CHECK(cut->truncated);
}
