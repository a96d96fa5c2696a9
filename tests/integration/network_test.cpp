// G1: the network namespace; G9: the UTS namespace.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "harness.h"
#include "host_listener.h"

using namespace stockade::itest;
using stockade::UniqueFd;

TEST_CASE("G1: only lo exists, it is up, and there is no route out", "[G1][network]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const ProbeRun run = sandbox.probe({"ifaces"});
    INFO(run.describe());
    REQUIRE(run.exitCode() == 0);
    CHECK(run.report.all("iface") == std::vector<std::string>{"lo:up"});
    CHECK(run.report.all("route4").empty());
    for (const std::string& route : run.report.all("route6")) {
        INFO(route);
        CHECK(route.size() >= 2);
        CHECK(route.substr(route.size() - 2) == "lo");
    }

    // A UDP connect only looks the route up; no packet leaves, even from a
    // broken sandbox. 192.0.2.1 and 2001:db8::1 are documentation addresses.
    const ProbeRun v4 = sandbox.probe({"route-udp", "192.0.2.1", "9"});
    INFO(v4.describe());
    CHECK(v4.result() == "ENETUNREACH");
    const ProbeRun v6 = sandbox.probe({"route-udp", "2001:db8::1", "9"});
    INFO(v6.describe());
    CHECK_THAT(v6.result(), IsOneOf({"ENETUNREACH", "EAFNOSUPPORT", "EADDRNOTAVAIL"}));
}

TEST_CASE("G1: a TCP listener on the host's loopback is out of reach", "[G1][network]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    HostListener v4 = HostListener::tcp(AF_INET, "127.0.0.1");
    REQUIRE(v4.ok());
    const ProbeRun run = sandbox.probe({"connect-tcp", "127.0.0.1", v4.port()});
    INFO(run.describe());
    REQUIRE(run.exitCode() == 0);
    CHECK_THAT(run.result(), IsOneOf({"ECONNREFUSED", "ENETUNREACH"}));
    CHECK_FALSE(v4.sawConnection());

    HostListener v6 = HostListener::tcp(AF_INET6, "::1");
    if (v6.ok()) {
        const ProbeRun run6 = sandbox.probe({"connect-tcp", "::1", v6.port()});
        INFO(run6.describe());
        CHECK_THAT(run6.result(),
                   IsOneOf({"ECONNREFUSED", "ENETUNREACH", "EADDRNOTAVAIL", "EAFNOSUPPORT"}));
        CHECK_FALSE(v6.sawConnection());
    }
}

TEST_CASE("G1: a listener on the host's own outside address is out of reach", "[G1][network]") {
    STOCKADE_EACH_MODE(mode);
    const std::string address = hostExternalAddress();
    if (address.empty()) {
        WARN("this host has no non-loopback IPv4 address; nothing to try");
        return;
    }
    Sandbox sandbox(mode);
    // Bound to the host's own address: a connection to it never leaves the
    // machine, even from a broken sandbox.
    HostListener listener = HostListener::tcp(AF_INET, address.c_str());
    REQUIRE(listener.ok());
    const ProbeRun run = sandbox.probe({"connect-tcp", address, listener.port()});
    INFO(address << "\n" << run.describe());
    CHECK(run.result() == "ENETUNREACH");
    CHECK_FALSE(listener.sawConnection());
}

TEST_CASE("G1: an abstract unix socket on the host is out of reach", "[G1][network]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string name = randomToken("stockade-itest-abstract");
    HostListener listener = HostListener::abstractUnix(name);
    REQUIRE(listener.ok());
    const ProbeRun run = sandbox.probe({"connect-abstract", name});
    INFO(run.describe());
    REQUIRE(run.exitCode() == 0);
    // EPERM where Landlock (ABI 6) scopes abstract sockets as well.
    CHECK_THAT(run.result(), IsOneOf({"ECONNREFUSED", "EPERM"}));
    CHECK_FALSE(listener.sawConnection());
}

TEST_CASE("G9: the host name is stockade and cannot be changed", "[G9][uts]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const ProbeRun run = sandbox.probe({"hostname"});
    INFO(run.describe());
    CHECK(run.report.get("value") == "stockade");
    // Sets the name it already has: harmless even from a broken sandbox.
    const ProbeRun set = sandbox.probe({"sethostname-same"});
    INFO(set.describe());
    CHECK(set.result() == "EPERM");
}
