// The monitor's pure parts (oci/monitor.h): which wait statuses from init's
// Finished message become the record's end, and the end and the monitor's
// identity kept across the record's write and read. lifecycle.py shows the
// monitor itself, both modes.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

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
