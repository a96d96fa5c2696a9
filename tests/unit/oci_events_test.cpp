// `events` (oci/events.h): what the cgroup files say, in runc's shapes.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "oci/events.h"
#include "tests/unit/oracle_test_support.h"

using namespace stockade;
using nlohmann::json;
using oracle_test::TempDir;

namespace {

void put(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
}

}  // namespace

TEST_CASE("oci events: v1 hierarchies and a v2 directory read as runc prints them", "[oci]") {
    TempDir v1;  // a memory and a pids hierarchy's directories, as v1 has them
    REQUIRE(system(("mkdir -p " + v1 / "memory " + v1 / "pids").c_str()) == 0);
    put(v1 / "memory/memory.usage_in_bytes", "1302528\n");
    put(v1 / "memory/memory.max_usage_in_bytes", "2000000\n");
    put(v1 / "memory/memory.limit_in_bytes", "67108864\n");
    put(v1 / "memory/memory.failcnt", "0\n");
    put(v1 / "memory/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
    put(v1 / "pids/pids.current", "2\n");
    put(v1 / "pids/pids.max", "max\n");
    oci::CgroupStats s = oci::readCgroupStats({v1 / "memory", v1 / "pids"});
    json ev = json::parse(oci::statsEvent("c1", s));
    CHECK(ev["type"] == "stats");
    CHECK(ev["id"] == "c1");
    CHECK(ev["data"]["memory"]["usage"] ==
          json{{"usage", 1302528}, {"max", 2000000}, {"limit", 67108864}, {"failcnt", 0}});
    CHECK(ev["data"]["pids"] == json{{"current", 2}, {"limit", 0}});  // "max": none
    CHECK_FALSE(ev["data"].contains("cpu"));
    CHECK(s.oom_kills == 2u);

    TempDir v2;
    put(v2 / "memory.current", "4096\n");
    put(v2 / "memory.max", "max\n");
    put(v2 / "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n");
    put(v2 / "cpu.stat", "usage_usec 5\nuser_usec 3\nsystem_usec 2\n");
    put(v2 / "pids.current", "not-a-number\n");
    s = oci::readCgroupStats({v2.path()});
    ev = json::parse(oci::statsEvent("c2", s));
    CHECK(ev["data"]["memory"]["usage"]["limit"] == UINT64_MAX);
    CHECK(ev["data"]["memory"]["usage"]["failcnt"] == 3);
    CHECK(ev["data"]["cpu"]["usage"]["total"] == 5000);
    CHECK_FALSE(ev["data"].contains("pids"));  // unreadable: left out, not made up
    CHECK(json::parse(oci::oomEvent("c2")) == json{{"type", "oom"}, {"id", "c2"}});
}

TEST_CASE("oci events: --interval takes Go's durations and nothing else", "[oci]") {
    CHECK(*oci::intervalMs("5s") == 5000);
    CHECK(*oci::intervalMs("500ms") == 500);
    CHECK(*oci::intervalMs("2m") == 120000);
    for (const char* bad : {"", "5", "s", "5x", "-1s", "0s", "1.5s", "9999999s"})
        CHECK_FALSE(oci::intervalMs(bad));
}
