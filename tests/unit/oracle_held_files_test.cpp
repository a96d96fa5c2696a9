#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include "oracle/held_files.h"
#include "tests/unit/oracle_test_support.h"

using namespace stockade;
using namespace stockade::oracle;
using oracle_test::TempDir;
using oracle_test::writeFile;

TEST_CASE("every held file is fingerprinted by SHA-256, links by their text", "[oracle][held]") {
    TempDir dir;
    writeFile(dir / "test_math.py", "def test(): pass\n");
    writeFile(dir / "data/input.json", "{}", 0600);
    std::filesystem::create_directories(dir / "empty");
    REQUIRE(::symlink("/etc/passwd", (dir / "data/link").c_str()) == 0);
    REQUIRE(::mkfifo((dir / "pipe").c_str(), 0644) == 0);
    Result<std::map<std::string, std::string>> hashes = hashTree(dir.path());
    REQUIRE(hashes.ok());
    std::string expected = oracle_test::shell("sha256sum '" + (dir / "test_math.py") + "'");
    CHECK(hashes->at("test_math.py") == expected.substr(0, 64) + " mode:0644");
    CHECK(hashes->at("data/input.json") ==
          "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a mode:0600");
    CHECK(hashes->at("data/link") == "symlink:/etc/passwd");
    CHECK(hashes->at("data") == "directory mode:0755");
    CHECK(hashes->at("empty") == "directory mode:0755");
    CHECK(hashes->at("pipe") == "fifo mode:0644");
    CHECK(hashes->size() == 6);
}

TEST_CASE("changed, added and removed held files are all named", "[oracle][held]") {
    TempDir dir;
    writeFile(dir / "kept", "1");
    writeFile(dir / "edited", "1");
    writeFile(dir / "removed", "1");
    writeFile(dir / "chmodded", "1");
    auto before = hashTree(dir.path());
    REQUIRE(before.ok());
    writeFile(dir / "edited", "2");
    std::filesystem::remove(dir / "removed");
    writeFile(dir / "added", "3");
    REQUIRE(::chmod((dir / "chmodded").c_str(), 0444) == 0);
    auto after = hashTree(dir.path());
    REQUIRE(after.ok());
    CHECK(changedPaths(*before, *after) ==
          std::vector<std::string>{"added", "chmodded", "edited", "removed"});
    CHECK(changedPaths(*after, *after).empty());
}

TEST_CASE("held files past the bounds are an Error", "[oracle][held]") {
    TempDir dir;
    writeFile(dir / "a", std::string(600, 'a'));
    writeFile(dir / "b", std::string(600, 'b'));
    HeldLimits one_file;
    one_file.max_file_bytes = 500;
    Result<std::map<std::string, std::string>> big = hashTree(dir.path(), one_file);
    REQUIRE_FALSE(big.ok());
    CHECK(big.error().describe() ==
          "hashing held files: \"a\" is 600 bytes, more than the bound of 500; not read");
    HeldLimits total;
    total.max_total_bytes = 1000;
    Result<std::map<std::string, std::string>> all = hashTree(dir.path(), total);
    REQUIRE_FALSE(all.ok());
    CHECK(all.error().describe().find("holds more than 1000 bytes; stopped at \"b\"") !=
          std::string::npos);
    Result<std::map<std::string, std::string>> missing = hashTree(dir / "absent");
    CHECK_FALSE(missing.ok());
}

// A held file with another name (ln, cp -al from the worktree) could be
// changed through it while the test ran and put back before the hash after:
// refused, naming it and how many names it has. Its only name again, it is
// hashed.
TEST_CASE("a held file with another name is an Error", "[oracle][held]") {
    TempDir dir, elsewhere;
    writeFile(dir / "tests/t.sh", "echo ok 1\n");
    REQUIRE(::link((dir / "tests/t.sh").c_str(), (elsewhere / "t.sh").c_str()) == 0);
    Result<std::map<std::string, std::string>> linked = hashTree(dir.path());
    REQUIRE_FALSE(linked.ok());
    CHECK(linked.error().describe().find("\"tests/t.sh\" in the held directory has 2 names") !=
          std::string::npos);
    REQUIRE(::unlink((elsewhere / "t.sh").c_str()) == 0);
    CHECK(hashTree(dir.path()).ok());
}
