// G3's id map as programs see it: the synthesized passwd and group name the
// ids the map holds, and rootless --map-subids maps the caller's subordinate
// ids (newuidmap), so another id is refused with EPERM as on a host.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "harness.h"

using namespace stockade::itest;
using namespace std::chrono_literals;

namespace {

// "a:b:c" lines of an /etc/passwd or /etc/group read by the probe.
std::vector<std::vector<std::string>> colonLines(const std::string& escaped) {
    std::string text = escaped;
    for (size_t at; (at = text.find("\\n")) != std::string::npos;) text.replace(at, 2, "\n");
    std::vector<std::vector<std::string>> out;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        std::vector<std::string> fields;
        std::istringstream in(line);
        for (std::string f; std::getline(in, f, ':');) fields.push_back(f);
        if (fields.size() >= 3) out.push_back(fields);
    }
    return out;
}

// Whether the uid_map/gid_map text (escaped, as the probe prints it) maps
// inside id `id`.
bool mapHolds(const std::string& escaped, unsigned long id) {
    std::string text = escaped;
    for (size_t at; (at = text.find("\\n")) != std::string::npos;) text.replace(at, 2, "\n");
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream in(line);
        unsigned long inside = 0, outside = 0, count = 0;
        if (in >> inside >> outside >> count && id >= inside && id < inside + count) return true;
    }
    return false;
}

bool mapHasExtent(const std::string& escaped, unsigned long inside, unsigned long outside,
                  unsigned long count) {
    std::string text = escaped;
    for (size_t at; (at = text.find("\\n")) != std::string::npos;) text.replace(at, 2, "\n");
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream in(line);
        unsigned long i = 0, o = 0, c = 0;
        if (in >> i >> o >> c && i == inside && o == outside && c == count) return true;
    }
    return false;
}

size_t mapExtents(const std::string& escaped) {
    size_t n = 0;
    for (size_t at = 0; (at = escaped.find("\\n", at)) != std::string::npos; at += 2) ++n;
    return n;
}

// newuidmap and newgidmap read /etc/subuid and /etc/subgid and nothing else.
// The test gives them files of its own and never writes the host's: this test
// process (ctest runs one case per process) moves into a mount namespace of its
// own, private, and binds two scratch files over the pair. stockade and the
// helpers it starts inherit the namespace; a killed test leaves nothing.
class PrivateSubids {
  public:
    PrivateSubids() : scratch_(scratchRoot(), "subids", 0, 0) {
        if (::unshare(CLONE_NEWNS) < 0)
            throw std::runtime_error("unshare(CLONE_NEWNS): " + std::string(std::strerror(errno)));
        if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0)
            throw std::runtime_error("make / private: " + std::string(std::strerror(errno)));
        for (const char* file : kFiles) {
            const std::string own = scratch_.writeFile(std::string(file).substr(5), "");
            if (::mount(own.c_str(), file, nullptr, MS_BIND, nullptr) < 0)
                throw std::runtime_error("bind over " + std::string(file) + ": " +
                                         std::strerror(errno));
        }
    }
    // What both files say from now on: one grant to uid 65534, or none.
    void grant(const std::string& line) const {
        for (const char* file : kFiles) std::ofstream(file, std::ios::trunc) << line;
    }

  private:
    static constexpr const char* kFiles[] = {"/etc/subuid", "/etc/subgid"};
    ScratchDir scratch_;
};

// One namespace per process, made on first use.
const PrivateSubids& privateSubids() {
    static const PrivateSubids files;
    return files;
}

}  // namespace

TEST_CASE("G3: the synthesized passwd and group name only ids the map holds", "[G3][uid][passwd]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const ProbeRun passwd = sandbox.probe({"read-file", "/etc/passwd"});
    const ProbeRun group = sandbox.probe({"read-file", "/etc/group"});
    const ProbeRun uid_map = sandbox.probe({"read-file", "/proc/self/uid_map"});
    const ProbeRun gid_map = sandbox.probe({"read-file", "/proc/self/gid_map"});
    const ProbeRun ids = sandbox.probe({"ids"});
    INFO(passwd.describe() << group.describe() << uid_map.describe() << ids.describe());
    REQUIRE(passwd.result() == "ok");
    REQUIRE(group.result() == "ok");
    REQUIRE(uid_map.result() == "ok");
    REQUIRE(gid_map.result() == "ok");
    std::set<unsigned long> users, groups;
    for (const auto& f : colonLines(passwd.report.get("content"))) {
        const unsigned long uid = std::stoul(f[2]);
        users.insert(uid);
        INFO("passwd: " << f[0] << " " << uid);
        // 65534 is also the overflow id: what every unmapped owner shows as.
        CHECK((uid == kNobody || mapHolds(uid_map.report.get("content"), uid)));
    }
    for (const auto& f : colonLines(group.report.get("content"))) {
        const unsigned long gid = std::stoul(f[2]);
        groups.insert(gid);
        INFO("group: " << f[0] << " " << gid);
        CHECK((gid == kNobody || mapHolds(gid_map.report.get("content"), gid)));
    }
    CHECK(users.count(kNobody) == 1);
    // Root is listed exactly when it is mapped: as root (a block), not rootless.
    CHECK((users.count(0) == 1) == (mode == Mode::Root));
    CHECK((groups.count(5) == 1) == (mode == Mode::Root));
}

TEST_CASE("G3: rootless --map-subids maps the caller's subordinate ids, so other ids are EPERM",
          "[G3][uid][subids]") {
    STOCKADE_EACH_MODE(mode);
    if (::access("/usr/bin/newuidmap", X_OK) != 0 || ::access("/usr/bin/newgidmap", X_OK) != 0) {
        // scripts/install-deps.sh installs uidmap; a CI without it is broken.
        if (std::getenv("CI") != nullptr) FAIL("newuidmap/newgidmap missing (package uidmap)");
        WARN("SKIP: newuidmap/newgidmap missing (package uidmap)");
        return;
    }
    const PrivateSubids& subids = privateSubids();

    SECTION("with no grant: refused, exit 125, naming /etc/subuid") {
        subids.grant("");
        Sandbox sandbox(mode);
        sandbox.option("--map-subids");
        const Completed done = sandbox.run(probeCommand({"ids"}));
        INFO(done.describe());
        if (mode == Mode::Rootless) {
            CHECK(done.exitCode == 125);
            CHECK(done.err.find("--map-subids") != std::string::npos);
            CHECK(done.err.find("/etc/subuid") != std::string::npos);
        } else {
            // As root the sandbox's block is leased already: the flag adds nothing.
            CHECK(done.exitCode == 0);
        }
    }

    SECTION("with a grant: a block of 65536 around the caller's own id") {
        // A base clear of the root-mode lease range (0x78000000 upward); the
        // files are this test's own, so no other grant can overlap it.
        const unsigned long base = 0x74000000ul;
        subids.grant(std::to_string(kNobody) + ":" + std::to_string(base) + ":65536\n");
        Sandbox sandbox(mode);
        sandbox.option("--map-subids");
        const std::vector<std::vector<std::string>> attempts = {
            {"chown-scratch", "0", "-1"}, {"chown-scratch", "-1", "0"}, {"setuid-to", "65533"},
            {"setgid-to", "65533"},       {"setuid-to", "0"},
        };
        for (const std::vector<std::string>& attempt : attempts) {
            const ProbeRun run = sandbox.probe(attempt);
            INFO(attempt.front() << " " << attempt[1] << "\n" << run.describe());
            REQUIRE(run.exitCode() == 0);
            CHECK(run.result() == "EPERM");
        }
        const ProbeRun map = sandbox.probe({"read-file", "/proc/self/uid_map"});
        INFO(map.describe());
        REQUIRE(map.result() == "ok");
        const std::string content = map.report.get("content");
        CHECK(mapHolds(content, 0));
        CHECK(mapHolds(content, 65533));
        CHECK(mapHolds(content, 65535));
        CHECK_FALSE(mapHolds(content, 65536));
        if (mode == Mode::Rootless) {
            // 0..65533 from the grant, 65534 the caller, 65535 the grant's next.
            CHECK(mapExtents(content) == 3);
            CHECK(mapHasExtent(content, 0, base, 65534));
            CHECK(mapHasExtent(content, 65534, 65534, 1));
            CHECK(mapHasExtent(content, 65535, base + 65534, 1));
            // A file made in /repo is the caller's on the host, as without the flag.
            const ProbeRun made = sandbox.probe({"create-file", "/repo/subids-made", "x"});
            INFO(made.describe());
            CHECK(made.result() == "ok");
            struct stat st {};
            REQUIRE(::stat((sandbox.worktree() + "/subids-made").c_str(), &st) == 0);
            CHECK(st.st_uid == kNobody);
            CHECK(st.st_gid == kNobody);
            CHECK(sandbox.result()["host_uid"] == kNobody);
        }
        // And the ptys get group tty, which the block now holds.
        const ProbeRun pty = sandbox.probe({"pty-open"});
        INFO(pty.describe());
        CHECK(pty.report.get("slave_gid") == "5");
    }
}
