// The monitor's pure parts (oci/monitor.h): which wait statuses from init's
// Finished message become the record's end, and the end and the monitor's
// identity kept across the record's write and read. lifecycle.py shows the
// monitor itself, both modes.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "oci/monitor.h"
#include "oci/state.h"

using namespace stockade::oci;

TEST_CASE("oci monitor: an exit or a death by a signal is an end, nothing else is", "[oci]") {
    Record::End end;
    REQUIRE(endFromWaitStatus(3 << 8, end));
    CHECK(end.exit_status == 3);
    CHECK(end.signal == 0);

    end = {};
    REQUIRE(endFromWaitStatus(15, end));
    CHECK(end.signal == 15);
    CHECK_FALSE(end.core_dumped);

    end = {};
    REQUIRE(endFromWaitStatus(11 | 0x80, end));
    CHECK(end.signal == 11);
    CHECK(end.core_dumped);

    end = {};
    CHECK_FALSE(endFromWaitStatus(0x137f, end));       // stopped by SIGSTOP: not an end
    CHECK_FALSE(endFromWaitStatus(0xffff, end));       // continued
    CHECK_FALSE(endFromWaitStatus(0x10000 | 3, end));  // bits no wait status has
    CHECK_FALSE(endFromWaitStatus(-1, end));
    CHECK_FALSE(endFromWaitStatus(0x7e, end));  // signal 126: none
    CHECK(end.exit_status == -1);
    CHECK(end.signal == 0);
}

TEST_CASE("oci monitor: the end and the monitor's pid survive the record's write and read",
          "[oci]") {
    char dir_template[] = "/tmp/stockade-monitor-test-XXXXXX";
    REQUIRE(mkdtemp(dir_template) != nullptr);
    const int dir = open(dir_template, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(dir >= 0);
    Record r;
    r.id = "c1";
    r.pid = 4242;
    r.start_time = 7;
    r.bundle = "/b";
    r.monitor_pid = 4243;
    r.monitor_start_time = 8;
    r.end = Record::End{true, -1, 9, false, 2, "", "2026-01-01T00:00:00.000000000Z"};
    REQUIRE(writeRecord(dir, r));
    auto back = readRecord(dir, "c1");
    REQUIRE(back);
    CHECK(back->monitor_pid == 4243);
    CHECK(back->monitor_start_time == 8);
    REQUIRE(back->end);
    CHECK(back->end->reported);
    CHECK(back->end->signal == 9);
    CHECK(back->end->stragglers == 2);
    const std::string state = stateJson(*back, Status3::Stopped);
    CHECK(state.find("\"stragglersKilled\": 2") != std::string::npos);
    CHECK(state.find("\"signal\": 9") != std::string::npos);

    // A record naming pid 1 as its monitor is not one this runtime wrote:
    // delete would signal it.
    r.monitor_pid = 1;
    REQUIRE(writeRecord(dir, r));
    CHECK_FALSE(readRecord(dir, "c1"));

    unlinkat(dir, kStateFile, 0);
    close(dir);
    rmdir(dir_template);
}

TEST_CASE("oci monitor: refusals by name are bounded in the record, the rest counted", "[oci]") {
    // A container refusing every number it can: the collector's 1024 names
    // and "other" become the 64 most refused, the rest summed, none lost.
    std::vector<std::pair<std::string, uint64_t>> counts;
    uint64_t sum = 0;
    for (int nr = 0; nr < 1024; ++nr) {
        counts.emplace_back("syscall_" + std::to_string(nr), static_cast<uint64_t>(nr % 7 + 1));
        sum += static_cast<uint64_t>(nr % 7 + 1);
    }
    counts.emplace_back("keyctl", 1000);
    counts.emplace_back("other", 5);
    sum += 1005;
    Record::Denials d;
    d.counted = true;
    denialsIntoRecord(counts, d);
    REQUIRE(d.by_name.size() == kMaxDenialNames);
    CHECK(d.by_name[0] == std::make_pair(std::string("keyctl"), uint64_t{1000}));
    CHECK(d.by_name[1].second == 7);
    CHECK(d.total == sum);
    uint64_t kept = 0;
    for (const auto& [name, count] : d.by_name) kept += count;
    CHECK(kept + d.others == sum);

    // Kept across the record's write and read, and shown by state.
    char dir_template[] = "/tmp/stockade-monitor-test-XXXXXX";
    REQUIRE(mkdtemp(dir_template) != nullptr);
    const int dir = open(dir_template, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(dir >= 0);
    Record r;
    r.id = "c1";
    r.pid = 4242;
    r.start_time = 7;
    r.bundle = "/b";
    r.denials = d;
    r.denials.final = true;
    REQUIRE(writeRecord(dir, r));
    auto back = readRecord(dir, "c1");
    REQUIRE(back);
    CHECK(back->denials.by_name == d.by_name);
    CHECK(back->denials.others == d.others);
    CHECK(back->denials.total == sum);
    const std::string state = stateJson(*back, Status3::Stopped);
    CHECK(state.find("\"keyctl\": 1000") != std::string::npos);
    CHECK(state.find("\"final: counted") != std::string::npos);

    // A record holding more names than the monitor ever writes is not one
    // it wrote.
    r.denials.by_name.emplace_back("one_more", 1);
    REQUIRE(writeRecord(dir, r));
    CHECK_FALSE(readRecord(dir, "c1"));

    unlinkat(dir, kStateFile, 0);
    close(dir);
    rmdir(dir_template);
}
