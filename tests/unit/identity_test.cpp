#include "runtime/plan/identity.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

using namespace stockade;

namespace {

// A lease directory of the test's own, so no real run's lease is touched.
class LeaseDir {
  public:
    LeaseDir() {
        char templ[] = "/tmp/stockade-id-leases-XXXXXX";
        REQUIRE(mkdtemp(templ) != nullptr);
        parent_ = templ;
        path_ = parent_ + "/ids";
    }
    ~LeaseDir() { std::filesystem::remove_all(parent_); }
    const std::string& path() const { return path_; }
    std::string file(uint32_t id) const { return path_ + "/" + std::to_string(id); }

  private:
    std::string parent_;
    std::string path_;
};

bool exists(const std::string& path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("an id range is BASE:COUNT, never holding root or (uid_t)-1", "[identity]") {
    auto range = parseIdRange("2013265920:65536");
    REQUIRE(range.ok());
    CHECK(range->base == 2013265920u);
    CHECK(range->count == 65536u);
    CHECK(parseIdRange("4294967294:1").ok());
    for (const char* bad : {"", "5", ":5", "5:", "0:10", "10:0", "-1:5", "5:-1", "1e3:4", "x:1",
                            "4294967295:1", "4294967290:6", "99999999999:1", "1:2:3", " 1:2"}) {
        INFO(bad);
        CHECK_FALSE(parseIdRange(bad).ok());
    }
    CHECK(parseIdRange("0:10").error().describe().find("root") != std::string::npos);
    CHECK(parseIdRange("abc").error().describe().find("STOCKADE_UID_RANGE") != std::string::npos);
}

TEST_CASE("leases are exclusive, lowest first, and end with their owner", "[identity]") {
    LeaseDir dir;
    const IdRange range{3000000000u, 2};
    auto first = IdLease::acquire(range, dir.path());
    REQUIRE(first.ok());
    CHECK(first->id() == 3000000000u);
    auto second = IdLease::acquire(range, dir.path());
    REQUIRE(second.ok());
    CHECK(second->id() == 3000000001u);

    auto third = IdLease::acquire(range, dir.path());
    REQUIRE_FALSE(third.ok());
    CHECK(third.error().describe().find("3000000000-3000000001") != std::string::npos);

    // Released: the file goes with the lock, and the id is leased again.
    CHECK(exists(dir.file(3000000000u)));
    *first = IdLease();
    CHECK_FALSE(exists(dir.file(3000000000u)));
    auto again = IdLease::acquire(range, dir.path());
    REQUIRE(again.ok());
    CHECK(again->id() == 3000000000u);
}

TEST_CASE("the lease of a dead holder is taken over, however its file was left", "[identity]") {
    LeaseDir dir;
    const IdRange range{3000000000u, 1};
    // As a run killed with SIGKILL leaves it: the file, with the dead
    // holder's pid, and no lock on it.
    {
        auto lease = IdLease::acquire(range, dir.path());
        REQUIRE(lease.ok());
    }
    REQUIRE((::mkdir(dir.path().c_str(), 0700) == 0 || errno == EEXIST));
    const int fd = ::open(dir.file(3000000000u).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, "999999\n", 7) == 7);
    ::close(fd);
    auto taken = IdLease::acquire(range, dir.path());
    REQUIRE(taken.ok());
    CHECK(taken->id() == 3000000000u);

    // A lock held elsewhere (another open file description) is respected.
    auto lost = IdLease::acquire(range, dir.path());
    CHECK_FALSE(lost.ok());
}

TEST_CASE("a planted symlink in the lease directory is not followed", "[identity]") {
    LeaseDir dir;
    const IdRange range{3000000000u, 1};
    REQUIRE(::mkdir(dir.path().c_str(), 0700) == 0);
    const std::string target = dir.path() + "/../target";
    REQUIRE(::symlink(target.c_str(), dir.file(3000000000u).c_str()) == 0);
    auto lease = IdLease::acquire(range, dir.path());
    CHECK_FALSE(lease.ok());
    CHECK_FALSE(exists(target));
}

TEST_CASE("a range of a block or more leases whole blocks, aligned on its base", "[identity]") {
    LeaseDir dir;
    const IdRange range{3000000000u, 3 * kIdBlock + 5};
    CHECK(range.leaseWidth() == kIdBlock);
    CHECK(IdRange{3000000000u, kIdBlock - 1}.leaseWidth() == 1);
    std::vector<IdLease> held;
    for (uint32_t k = 0; k < 3; ++k) {
        auto lease = IdLease::acquire(range, dir.path());
        REQUIRE(lease.ok());
        CHECK(lease->id() == 3000000000u + k * kIdBlock);
        CHECK(lease->width() == kIdBlock);
        held.push_back(std::move(*lease));
    }
    // The 5 ids left over make no block: the range is full.
    CHECK_FALSE(IdLease::acquire(range, dir.path()).ok());
    // Moved by assignment, a lease keeps its whole width (it once lost it).
    IdLease moved;
    moved = std::move(held.back());
    CHECK(moved.id() == 3000000000u + 2 * kIdBlock);
    CHECK(moved.width() == kIdBlock);
}

TEST_CASE("subuid lines grant by name or by number, the largest range wins", "[identity][subids]") {
    const std::string file =
        "# comment\n"
        "alice:100000:65536\n"
        "bob:200000:10\n"
        "1001:300000:70000\n"
        "bob:400000:65536\n"
        "broken line\n"
        "bob:x:5\n"
        "bob:1:0\n"
        "bob:4294967295:2\n"
        "bob:500000:99999";  // no newline at the end
    const auto bob = subordinateRangeFor(file, "bob", 1002);
    REQUIRE(bob);
    CHECK(bob->start == 500000);
    CHECK(bob->count == 99999);
    const auto by_number = subordinateRangeFor(file, "", 1001);
    REQUIRE(by_number);
    CHECK(by_number->start == 300000);
    CHECK_FALSE(subordinateRangeFor(file, "carol", 1003));
    CHECK_FALSE(subordinateRangeFor("", "alice", 1000));
    // A name is not matched as a prefix.
    CHECK_FALSE(subordinateRangeFor("alicex:1:5\n", "alice", 1000));
}

TEST_CASE("a subordinate mapping is a block with the caller's own ids inside it",
          "[identity][subids]") {
    const auto m =
        subordinateMapping(65534, 65534, 65534, 65534, {1946157056, 65536}, {1946157056, 65536});
    REQUIRE(m);
    CHECK(m->subordinate);
    CHECK(m->count == 65536);
    CHECK(m->host_uid == 65534);
    CHECK(m->subuid_base == 1946157056);
    CHECK(ns::mapsInsideUid(*m, 0));
    CHECK(ns::mapsInsideGid(*m, 5));
    CHECK_FALSE(ns::mapsInsideUid(*m, 65536));

    // A small grant makes a small block, still holding the caller's uid.
    const auto small = subordinateMapping(1000, 1000, 1000, 1000, {100000, 1000}, {100000, 4000});
    REQUIRE(small);
    CHECK(small->count == 1001);
    // Too small to hold it: refused, naming the file and the numbers.
    const auto refused = subordinateMapping(1000, 1000, 1000, 1000, {100000, 999}, {100000, 4000});
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().text(), Catch::Contains("/etc/subuid"));
    CHECK_THAT(refused.error().text(), Catch::Contains("999"));
    const auto refused_gid =
        subordinateMapping(1000, 1000, 1000, 1000, {100000, 4000}, {100000, 10});
    REQUIRE_FALSE(refused_gid);
    CHECK_THAT(refused_gid.error().text(), Catch::Contains("/etc/subgid"));
}
