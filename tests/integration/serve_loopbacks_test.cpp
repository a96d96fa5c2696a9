// SPEC §7 under the default backend: a server that listens on one loopback
// only answers on both of the host's. As root the default is direct: the
// server holds the host's listener of the family it took, and the forwarder
// carries the other loopback to it (docs/dev-servers.md, "Both loopbacks,
// whichever the server took"); rootless the forwarder carries both. The
// server answers each request with the peer the kernel gave its accept(),
// so the test reads who connected: the host client itself (nothing in
// between), or the forwarder.
#include <netinet/in.h>
#include <sys/socket.h>

#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "host_listener.h"
#include "served.h"

using namespace stockade::itest;
using nlohmann::json;
using stockade::UniqueFd;

namespace {

// The handler both servers use: every GET is answered "peer ADDRESS PORT",
// accept()'s address of the connection.
constexpr const char* kPeerHandler = R"(
import http.server, socket, sys
class Peer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("peer %s %d\n" % self.client_address[:2]).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
)";

// A server of that handler on `bind`. With `probe`, it first listens on
// 0.0.0.0 and :: and closes each at once, as Vite 8 does to see that the port
// is free before it listens on `localhost` ([::1] here).
const std::string kPeerServer = std::string(kPeerHandler) + R"(
port, bind, probe = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "probe"
if probe:
    for family, address in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        s = socket.socket(family, socket.SOCK_STREAM)
        s.bind((address, port))
        s.listen()
        s.close()
class Server(http.server.HTTPServer):
    address_family = socket.AF_INET6 if ":" in bind else socket.AF_INET
Server((bind, port), Peer).serve_forever()
)";

// A hostile server: it listens on 127.0.0.1 (handed the host's listener as
// root), passes that socket to itself over a unix socket and closes it, so
// no /proc/PID/fd shows it when the supervisor looks at ready, and serves
// on [::1]. Later it takes the listener back, makes it blocking (what would
// stall a supervisor accepting on it) and serves on it too.
const std::string kHidingServer = std::string(kPeerHandler) + R"(
import threading, time
port = int(sys.argv[1])
class Six(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6
keep, back = socket.socketpair()
four = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
four.bind(("127.0.0.1", port))
four.listen()
socket.send_fds(keep, [b"x"], [four.fileno()])
four.close()
six = Six(("::1", port), Peer)
threading.Thread(target=six.serve_forever, daemon=True).start()
time.sleep(1.5)
_, fds, _, _ = socket.recv_fds(back, 1, 1)
got = socket.socket(fileno=fds[0])
got.setblocking(True)
again = http.server.ThreadingHTTPServer(("127.0.0.1", port), Peer, bind_and_activate=False)
again.socket.close()
again.socket = got
again.serve_forever()
)";

struct Fetched {
    std::string error;  // empty when a response came
    uint16_t client_port = 0;
    std::string peer_address;
    uint16_t peer_port = 0;
};

// GET / from the host's loopback of `family`, with the client's own port.
Fetched fetchPeer(int family, uint16_t port) {
    Fetched out;
    int err = 0;
    UniqueFd fd = connectFromHost(family, port, err);
    if (!fd) {
        out.error = std::string("connect: ") + std::strerror(err);
        return out;
    }
    sockaddr_storage mine{};
    socklen_t length = sizeof mine;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&mine), &length);
    out.client_port = ntohs(family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(mine).sin6_port
                                               : reinterpret_cast<sockaddr_in&>(mine).sin_port);
    sendAll(fd.get(), "GET / HTTP/1.0\r\nHost: localhost\r\n\r\n");
    const std::string response = readToEof(fd.get());  // 5 s receive timeout
    const size_t at = response.find("\r\n\r\npeer ");
    if (response.rfind("HTTP/1.0 200", 0) != 0 || at == std::string::npos) {
        out.error = "no answer: \"" + response + "\"";
        return out;
    }
    const std::string body = response.substr(at + 9);
    const size_t space = body.find(' ');
    out.peer_address = body.substr(0, space);
    out.peer_port = static_cast<uint16_t>(std::stoi(body.substr(space + 1)));
    return out;
}

}  // namespace

TEST_CASE("serve (default backend): a server on one loopback answers on both", "[serve]") {
    const Mode mode = GENERATE(Mode::Root, Mode::Rootless);
    // The address the server binds, and whether it probes the port first.
    const auto [bind, probe] = GENERATE(std::pair<std::string, bool>{"::1", false},
                                        std::pair<std::string, bool>{"127.0.0.1", false},
                                        std::pair<std::string, bool>{"::1", true});
    INFO("mode: " << modeName(mode) << ", bind: " << bind << (probe ? ", probing first" : ""));
    if (!modeUsable(mode)) return;
    if (!hostHasIpv6Loopback()) {
        // Both loopbacks are the point; CI's hosts have them.
        if (std::getenv("CI")) FAIL("no IPv6 loopback on this host");
        WARN("no IPv6 loopback on this host: not run");
        return;
    }
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    Served served(
        sandbox, serviceName(), port,
        {"python3", "-c", kPeerServer, std::to_string(port), bind, probe ? "probe" : "bare"}, {},
        "default");
    INFO(served.started().describe());
    REQUIRE(served.ready());

    const bool direct = mode == Mode::Root;
    const int held = bind == "::1" ? AF_INET6 : AF_INET;
    const int other = held == AF_INET6 ? AF_INET : AF_INET6;
    const std::string held_address = held == AF_INET6 ? "::1" : "127.0.0.1";
    const std::string other_address = other == AF_INET6 ? "::1" : "127.0.0.1";
    CHECK(served.readyEvent().value("backend", "") == (direct ? "direct" : "userspace"));
    // As root nothing fell back: the server holds its loopback's listener.
    if (direct) CHECK(served.readyEvent().value("backend_fallback", json()).is_null());
    const json forwarded = served.readyEvent().value("forwarded_loopbacks", json());
    CHECK(forwarded == (direct ? json{other_address} : json{"127.0.0.1", "::1"}));
    const json entry = served.psEntry();
    REQUIRE(entry.is_object());
    CHECK(entry.value("forwarded_loopbacks", json()) == forwarded);
    // Every host listener of the port is bound to lo (ss's ADDR%lo), the
    // handed one and the forwarder's alike: a packet for it that arrives by
    // another interface (route_localnet=1) is not delivered.
    const std::string listeners = hostOutput("ss -ltnH 'sport = :" + std::to_string(port) + "'");
    INFO("ss -ltn:\n" << listeners);
    std::istringstream lines(listeners);
    int bound_to_lo = 0, seen = 0;
    for (std::string line; std::getline(lines, line);) {
        if (line.find("LISTEN") == std::string::npos) continue;
        ++seen;
        if (line.find("127.0.0.1%lo:" + std::to_string(port)) != std::string::npos ||
            line.find("[::1]%lo:" + std::to_string(port)) != std::string::npos)
            ++bound_to_lo;
    }
    CHECK(seen == 2);
    CHECK(bound_to_lo == 2);

    // Each loopback, twice (a connection that waited in a backlog no one
    // accepts would time out here instead).
    for (int round = 0; round < 2; ++round) {
        const Fetched same = fetchPeer(held, port);
        INFO("the server's own loopback: " << same.error);
        REQUIRE(same.error.empty());
        const Fetched across = fetchPeer(other, port);
        INFO("the other loopback: " << across.error);
        REQUIRE(across.error.empty());
        if (direct) {
            // The kernel's accept() gave the server the host client itself...
            CHECK(same.peer_address == held_address);
            CHECK(same.peer_port == same.client_port);
            // ...and on the other loopback the forwarder's connection to the
            // listener the server holds, from the server's own family.
            CHECK(across.peer_address == held_address);
            CHECK(across.peer_port != across.client_port);
        } else {
            // Rootless, the forwarder's connection from inside on both.
            CHECK(same.peer_port != same.client_port);
            CHECK(across.peer_port != across.client_port);
            CHECK(same.peer_address == held_address);
            CHECK(across.peer_address == held_address);
        }
    }
}

TEST_CASE("serve (default backend): a listener hidden in flight at ready is never the forwarder's",
          "[serve]") {
    const Mode mode = GENERATE(Mode::Root, Mode::Rootless);
    INFO("mode: " << modeName(mode));
    if (!modeUsable(mode)) return;
    if (!hostHasIpv6Loopback()) {
        if (std::getenv("CI")) FAIL("no IPv6 loopback on this host");
        WARN("no IPv6 loopback on this host: not run");
        return;
    }
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    Served served(sandbox, serviceName(), port,
                  {"python3", "-c", kHidingServer, std::to_string(port)}, {}, "default");
    INFO(served.started().describe());
    REQUIRE(served.ready());
    const bool direct = mode == Mode::Root;
    CHECK(served.readyEvent().value("backend", "") == (direct ? "direct" : "userspace"));
    if (direct) {
        // The supervisor released the listener no process showed, closed
        // its copy, and the kernel refused a new bind of 127.0.0.1:PORT:
        // the socket still lived. Nothing forwards that loopback, and the
        // supervisor never accepts on the sandbox's socket.
        CHECK(served.readyEvent().value("forwarded_loopbacks", json()) == json::array());
        CHECK(served.started().err.find("that loopback is not forwarded") != std::string::npos);
        CHECK(served.started().err.find("EADDRINUSE") != std::string::npos);
    } else {
        CHECK(served.readyEvent().value("forwarded_loopbacks", json()) ==
              json({"127.0.0.1", "::1"}));
    }
    // [::1] answers at once; 127.0.0.1 once the server has taken its listener
    // back (1.5 s after it started), blocking: as root it is the server's
    // own accept() (the client's port is the peer's), and a supervisor that
    // had accepted on it would now be stalled, with [::1] unanswered.
    const Fetched six = fetchPeer(AF_INET6, port);
    INFO("[::1]: " << six.error);
    REQUIRE(six.error.empty());
    const Fetched four = fetchPeer(AF_INET, port);
    INFO("127.0.0.1: " << four.error);
    REQUIRE(four.error.empty());
    CHECK(four.peer_address == "127.0.0.1");
    if (direct) {
        CHECK(six.peer_port == six.client_port);
        CHECK(four.peer_port == four.client_port);
    }
    const Fetched after = fetchPeer(AF_INET6, port);
    INFO("[::1] after: " << after.error);
    CHECK(after.error.empty());
}
