// SPEC §7: dev servers. `stockade serve` publishes one port on the host's
// loopback and nothing else; the server reaches nothing; stop, ps and logs;
// readiness; replacement; a killed supervisor. Every case in both modes; the
// publishing and zero-egress cases also as root with --net-backend veth, which
// adds its own: the host's end of the pair out of reach, and nothing of the
// pair (link, nftables table, address slot) left after any ending.
#include <arpa/inet.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "harness.h"
#include "host_listener.h"
#include "served.h"

using namespace stockade::itest;
using nlohmann::json;
using stockade::UniqueFd;
using namespace std::chrono_literals;

namespace {

// The veth backend's address slot of a supervisor: /run/stockade/net/slot-N
// holds its pid (runtime/net/veth_backend.h).
std::optional<int> vethSlotOf(pid_t supervisor) {
    for (int slot = 0; slot < 8192; ++slot) {
        const std::string path = "/run/stockade/net/slot-" + std::to_string(slot);
        if (!pathExists(path)) continue;
        if (readFileOrEmpty(path) == std::to_string(supervisor) + "\n") return slot;
    }
    return std::nullopt;
}

// 169.254.128.0 + 4N + host_part: .1 is the host's end, .2 the sandbox's.
std::string vethAddress(int slot, int host_part) {
    const uint32_t address =
        0xa9fe8000u + 4u * static_cast<uint32_t>(slot) + static_cast<uint32_t>(host_part);
    return std::to_string(address >> 24) + "." + std::to_string((address >> 16) & 255) + "." +
           std::to_string((address >> 8) & 255) + "." + std::to_string(address & 255);
}

// What the host still holds of a slot: its link, its nftables table, its file.
std::vector<std::string> vethLeftovers(int slot) {
    std::vector<std::string> left;
    const std::string link = "stk" + std::to_string(slot) + "h";
    const std::string table = "stockade_" + std::to_string(slot);
    const std::string links = hostOutput("ip -br link show 2>&1");
    if (links.find(link + " ") != std::string::npos || links.find(link + "@") != std::string::npos)
        left.push_back("link " + link);
    const std::string tables = hostOutput("nft list tables 2>&1");
    if (tables.find("table inet " + table + "\n") != std::string::npos)
        left.push_back("table inet " + table);
    if (pathExists("/run/stockade/net/slot-" + std::to_string(slot)))
        left.push_back("/run/stockade/net/slot-" + std::to_string(slot));
    return left;
}

// A non-blocking connect from the host bounded at `ms`: "ok" or the errno's
// name as the probe prints it.
std::string connectWithin(const std::string& address, uint16_t port, int ms) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    ::inet_pton(AF_INET, address.c_str(), &addr.sin_addr);
    int err = 0;
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) {
        err = errno;
        if (err == EINPROGRESS) {
            pollfd p{fd.get(), POLLOUT, 0};
            if (::poll(&p, 1, ms) == 0) return "ETIMEDOUT";
            socklen_t len = sizeof err;
            ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        }
    }
    if (err == 0) return "ok";
    if (err == ETIMEDOUT) return "ETIMEDOUT";
    if (err == ECONNREFUSED) return "ECONNREFUSED";
    if (err == ENETUNREACH) return "ENETUNREACH";
    if (err == EHOSTUNREACH) return "EHOSTUNREACH";
    return std::strerror(err);
}

}  // namespace

TEST_CASE("serve: a python http.server answers on the host's loopback, and stop frees the port",
          "[serve]") {
    STOCKADE_EACH_SERVE_SETUP(mode, backend);
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    Served served(sandbox, serviceName(), port, httpServer(port), {}, backend);
    INFO(served.started().describe());
    REQUIRE(served.ready());
    CHECK(served.readyEvent().value("event", "") == "ready");
    CHECK(served.readyEvent().value("name", "") == served.name());
    CHECK(served.readyEvent().value("port", 0) == port);
    CHECK(served.readyEvent().contains("elapsed_ms"));
    // The way it took, said: by default direct as root; rootless the
    // forwarder, with the cause in backend_fallback (ready event and ps),
    // and nothing on stderr (no one asked for direct by name).
    CHECK(served.readyEvent().value("backend", "") == serve_setup_.took);
    const json fallback = served.readyEvent().value("backend_fallback", json());
    if (backend == "default" && mode == Mode::Rootless) {
        REQUIRE(fallback.is_string());
        CHECK(fallback.get<std::string>().rfind("direct: ", 0) == 0);
        CHECK(served.started().err.find("--net-backend") == std::string::npos);
    } else {
        CHECK(fallback.is_null());
    }

    const std::string page = httpGet(AF_INET, port, "/");
    CHECK(page.rfind("HTTP/1.0 200", 0) == 0);
    CHECK(page.find("README") != std::string::npos);  // the worktree's listing
    std::optional<int> slot;
    if (backend == "veth") {
        // The connection came over the pair: from the host's end, by the DNAT.
        slot = vethSlotOf(served.supervisor());
        REQUIRE(slot.has_value());
        CHECK(served.stockade({"logs", served.name()}).out.find(vethAddress(*slot, 1) + " - -") !=
              std::string::npos);
    }
    // [::1] reaches the server, which bound 127.0.0.1 only, where IPv6 is up.
    if (connectResult(AF_INET6, port) == "ok")
        CHECK(httpGet(AF_INET6, port, "/README").find("integration tests") != std::string::npos);

    const json entry = served.psEntry();
    REQUIRE(entry.is_object());
    CHECK(entry.value("backend", "") == serve_setup_.took);
    CHECK(entry.value("backend_fallback", json()) == fallback);
    CHECK(entry.value("port", 0) == port);
    CHECK(entry.value("pid", 0) == served.supervisor());
    CHECK(entry.value("ready", false));
    const pid_t sandbox_pid = entry.value("sandbox_pid", 0);
    REQUIRE(sandbox_pid > 0);
    CHECK(procStatusField(sandbox_pid, "Uid").value_or("") != "0\t0\t0\t0");

    const Completed stop = served.stockade({"stop", served.name()});
    CHECK(stop.exitCode == 0);
    CHECK(stop.out.find("stopped") != std::string::npos);
    // stop returns once the supervisor, the sandbox and the port are gone.
    CHECK(processGone(served.supervisor()));
    CHECK(processGone(sandbox_pid));
    CHECK(connectResult(AF_INET, port) == std::strerror(ECONNREFUSED));
    CHECK(served.psEntry().is_null());
    // No link, no table, no slot file.
    if (slot) CHECK(waitUntil([&] { return vethLeftovers(*slot).empty(); }, 5s));
    // Idempotent: stopping what is gone succeeds.
    const Completed again = served.stockade({"stop", served.name()});
    CHECK(again.exitCode == 0);
    CHECK(served.stockade({"stop", "--port", std::to_string(port)}).exitCode == 0);
    // The log outlives the server.
    const Completed logs = served.stockade({"logs", served.name()});
    CHECK(logs.exitCode == 0);
    CHECK(logs.out.find("GET / HTTP") != std::string::npos);
}

TEST_CASE(
    "serve: a node server on localhost, with a long-lived stream and a half-close pass through",
    "[serve]") {
    STOCKADE_EACH_SERVE_SETUP(mode, backend);
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    // Echoes what it gets; answers "bye" only once the client has finished
    // sending (half-close), then ends.
    const std::string script =
        "require('net').createServer(s => { s.on('data', d => s.write(d));"
        " s.on('end', () => s.end('bye\\n')); }).listen(" +
        std::to_string(port) + ", 'localhost')";
    Served served(sandbox, serviceName(), port, {"node", "-e", script}, {}, backend);
    INFO(served.started().describe());
    REQUIRE(served.ready());

    int err = 0;
    UniqueFd conn = connectFromHost(AF_INET, port, err);
    REQUIRE(err == 0);
    std::string sent, echoed;
    std::thread reader([&] { echoed = readToEof(conn.get()); });
    for (int i = 0; i < 20; ++i) {  // about a second, in pieces, with pauses
        const std::string chunk(64 * 1024, static_cast<char>('a' + i));
        sendAll(conn.get(), chunk);
        sent += chunk;
        std::this_thread::sleep_for(50ms);
    }
    ::shutdown(conn.get(), SHUT_WR);
    reader.join();
    CHECK(echoed.size() == sent.size() + 4);
    CHECK(echoed == sent + "bye\n");
}

TEST_CASE("serve: the server reaches nothing outside its sandbox", "[serve][G1]") {
    STOCKADE_EACH_SERVE_SETUP(mode, backend);
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    HostListener host_lo = HostListener::tcp(AF_INET, "127.0.0.1");
    REQUIRE(host_lo.ok());
    const std::string outside = hostExternalAddress();
    HostListener host_out =
        HostListener::tcp(AF_INET, outside.empty() ? "127.0.0.1" : outside.c_str());
    const std::string abstract = randomToken("stockade-itest-serve");
    HostListener host_abstract = HostListener::abstractUnix(abstract);
    REQUIRE(host_abstract.ok());
    // Each attempt's answer goes to /repo/out; the TCP connects to the
    // documentation addresses run only where a route lookup (which sends
    // nothing) already found no way out, so even a broken sandbox sends no
    // packet off this machine.
    const std::string p = "/probe/stockade-probe";
    const std::string script =
        "mkdir -p /repo/out && cd /repo/out && " + p + " route-udp 192.0.2.1 80 > route4; " +
        "grep -qx result=ENETUNREACH route4 && " + p + " connect-tcp 192.0.2.1 80 > tcp4; " + p +
        " route-udp 2001:db8::1 80 > route6; " + "grep -qx result=ENETUNREACH route6 && " + p +
        " connect-tcp 2001:db8::1 80 > tcp6; " + p + " connect-tcp 127.0.0.1 " + host_lo.port() +
        " > host_lo; " + p + " connect-tcp " + (outside.empty() ? "127.0.0.1" : outside) + " " +
        host_out.port() + " > host_out; " + p + " connect-abstract " + abstract +
        " > abstract; exec python3 -m http.server --bind 127.0.0.1 " + std::to_string(port);
    Served served(sandbox, serviceName(), port, {"sh", "-c", script}, {}, backend);
    INFO(served.started().describe());
    REQUIRE(served.ready());
    CHECK(httpGet(AF_INET, port, "/").rfind("HTTP/1.0 200", 0) == 0);

    auto answer = [&](const char* file) {
        return ProbeReport(readFile(sandbox.worktree() + "/out/" + file)).result();
    };
    CHECK(answer("route4") == "ENETUNREACH");
    CHECK(answer("tcp4") == "ENETUNREACH");
    CHECK_THAT(answer("route6"), IsOneOf({"ENETUNREACH", "EAFNOSUPPORT", "EADDRNOTAVAIL"}));
    if (answer("route6") == "ENETUNREACH") CHECK(answer("tcp6") == "ENETUNREACH");
    // The sandbox's 127.0.0.1 is its own: nothing listens on that port there.
    CHECK(answer("host_lo") == "ECONNREFUSED");
    CHECK(answer("host_out") == "ENETUNREACH");
    CHECK_THAT(answer("abstract"), IsOneOf({"ECONNREFUSED", "EPERM"}));
    // And from the host's side: nobody came.
    CHECK_FALSE(host_lo.sawConnection());
    CHECK_FALSE(host_out.sawConnection());
    CHECK_FALSE(host_abstract.sawConnection());
}

TEST_CASE("serve: a second port opened inside is not published", "[serve]") {
    STOCKADE_EACH_SERVE_SETUP(mode, backend);
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    uint16_t second = freeLoopbackPort();
    while (second == port) second = freeLoopbackPort();
    const std::string script = "/probe/stockade-probe listen-tcp 127.0.0.1 " +
                               std::to_string(second) + " 60 > /repo/second & exec python3 -m " +
                               "http.server --bind 127.0.0.1 " + std::to_string(port);
    Served served(sandbox, serviceName(), port, {"sh", "-c", script}, {}, backend);
    INFO(served.started().describe());
    REQUIRE(served.ready());
    REQUIRE(waitUntil([&] { return !readFile(sandbox.worktree() + "/second").empty(); }, 5s));
    // Inside, the server may bind what it likes; the port is still
    // unreachable from the host.
    CHECK(ProbeReport(readFile(sandbox.worktree() + "/second")).result() == "ok");
    CHECK(connectResult(AF_INET, second) == std::strerror(ECONNREFUSED));
    CHECK(httpGet(AF_INET, port, "/").rfind("HTTP/1.0 200", 0) == 0);
    if (backend == "veth") {
        // Nor over the pair: a SYN to the sandbox's address on another port is
        // dropped inside (a closed port would answer with a reset).
        const std::optional<int> slot = vethSlotOf(served.supervisor());
        REQUIRE(slot.has_value());
        CHECK(connectWithin(vethAddress(*slot, 2), port, 3000) == "ok");
        CHECK(connectWithin(vethAddress(*slot, 2), second, 1500) == "ETIMEDOUT");
    }
}

// The shape of `vite` + `node api.js`: a second process of the sandbox
// serves on other ports of its loopback, and the published server reaches it
// there, over TCP on both loopbacks and over UDP, and through a listener it
// opens on an ephemeral port. Only the published port crosses.
TEST_CASE(
    "serve: a web server proxies to an API it started on other ports, over TCP on 127.0.0.1 and "
    "::1 and UDP",
    "[serve][G10]") {
    STOCKADE_EACH_SERVE_SETUP(mode, backend);
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    uint16_t api = freeLoopbackPort();
    while (api == port) api = freeLoopbackPort();
    sandbox.scratch().writeFile("worktree/api.py", R"(import socket, sys, threading
port = int(sys.argv[1])
def serve_tcp(family, address):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((address, port))
    s.listen(16)
    while True:
        c, _ = s.accept()
        c.recv(4096)
        c.sendall(b"api over " + address.encode())
        c.close()
def serve_udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", port))
    while True:
        data, peer = s.recvfrom(4096)
        s.sendto(b"udp echo " + data, peer)
threading.Thread(target=serve_tcp, args=(socket.AF_INET6, "::1"), daemon=True).start()
threading.Thread(target=serve_udp, daemon=True).start()
serve_tcp(socket.AF_INET, "127.0.0.1")
)");
    sandbox.scratch().writeFile("worktree/web.py", R"(import http.server, socket, sys, time
port, api = int(sys.argv[1]), int(sys.argv[2])
def ask(family, address):
    s = socket.create_connection((address, api), timeout=5) if family == socket.AF_INET else socket.socket(family)
    if family != socket.AF_INET:
        s.settimeout(5)
        s.connect((address, api))
    s.sendall(b"GET")
    answer = s.recv(4096)
    s.close()
    return answer
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    s.sendto(b"ping", ("127.0.0.1", api))
    return s.recvfrom(4096)[0]
def ephemeral():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    c = socket.create_connection(listener.getsockname(), timeout=5)
    peer, _ = listener.accept()
    c.sendall(b"ephemeral ok")
    return peer.recv(4096)
# Up only once the API answers, so readiness means both are.
for _ in range(400):
    try:
        ask(socket.AF_INET, "127.0.0.1")
        break
    except OSError:
        time.sleep(0.025)
routes = {"/api": lambda: ask(socket.AF_INET, "127.0.0.1"),
          "/api6": lambda: ask(socket.AF_INET6, "::1"), "/udp": udp, "/ephemeral": ephemeral}
class Web(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        try:
            body = routes[self.path]()
        except Exception as e:
            body = ("failed: %r" % e).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Web).serve_forever()
)");
    const std::string p = std::to_string(port), a = std::to_string(api);
    Served served(
        sandbox, serviceName(), port,
        {"sh", "-c", "python3 /repo/api.py " + a + " & exec python3 /repo/web.py " + p + " " + a},
        {}, backend);
    INFO(served.started().describe());
    REQUIRE(served.ready());
    auto body = [&](const std::string& path) {
        const std::string response = httpGet(AF_INET, port, path);
        const size_t end = response.find("\r\n\r\n");
        return end == std::string::npos ? response : response.substr(end + 4);
    };
    CHECK(body("/api") == "api over 127.0.0.1");
    if (hostHasIpv6Loopback()) CHECK(body("/api6") == "api over ::1");
    CHECK(body("/udp") == "udp echo ping");
    CHECK(body("/ephemeral") == "ephemeral ok");
    // From the host, the API's port is nobody's on either loopback.
    CHECK(connectResult(AF_INET, api) == std::strerror(ECONNREFUSED));
    if (hostHasIpv6Loopback()) CHECK(connectResult(AF_INET6, api) == std::strerror(ECONNREFUSED));
}

// A hot-reload channel: an HTTP upgrade to a websocket (RFC 6455) on the
// published port, held open, frames both ways, the server pushing one of its
// own. The server binds `::` dual-stack, as Node and Python servers told
// "all addresses" do, and is reached through both of the host's loopbacks.
TEST_CASE(
    "serve: a websocket on the published port of a dual-stack server carries frames both "
    "ways",
    "[serve]") {
    STOCKADE_EACH_SERVE_SETUP(mode, backend);
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    sandbox.scratch().writeFile("worktree/ws.py", R"(import base64, hashlib, socket, sys, threading
GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
def frame(text):
    data = text.encode()
    return bytes([0x81, len(data)]) + data
def session(c):
    request = b""
    while b"\r\n\r\n" not in request:
        chunk = c.recv(4096)
        if not chunk:
            return
        request += chunk
    # The client may send its first frame with the request.
    request, pending = request.split(b"\r\n\r\n", 1)
    def recv_exact(n):
        nonlocal pending
        while len(pending) < n:
            chunk = c.recv(4096)
            if not chunk:
                raise EOFError
            pending += chunk
        out, pending = pending[:n], pending[n:]
        return out
    key = [l.split(b":", 1)[1].strip() for l in request.split(b"\r\n")
           if l.lower().startswith(b"sec-websocket-key:")][0]
    accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
              b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n")
    head = recv_exact(2)
    length = head[1] & 0x7f
    mask = recv_exact(4)
    payload = bytes(b ^ mask[i % 4] for i, b in enumerate(recv_exact(length)))
    c.sendall(frame("echo:" + payload.decode()))
    c.sendall(frame("update:/src/App.tsx"))
    c.recv(1)  # held until the client goes
    c.close()
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", int(sys.argv[1])))
s.listen(16)
while True:
    c, _ = s.accept()
    threading.Thread(target=session, args=(c,), daemon=True).start()
)");
    Served served(sandbox, serviceName(), port, {"python3", "/repo/ws.py", std::to_string(port)},
                  {}, backend);
    INFO(served.started().describe());
    REQUIRE(served.ready());

    std::vector<int> families = {AF_INET};
    if (hostHasIpv6Loopback()) families.push_back(AF_INET6);
    UniqueFd held;  // the last session, open across the stop below
    for (int family : families) {
        INFO("family " << (family == AF_INET ? "AF_INET" : "AF_INET6"));
        int err = 0;
        UniqueFd fd = connectFromHost(family, port, err);
        REQUIRE(fd);
        // RFC 6455's own example key, whose answer it gives.
        sendAll(fd.get(),
                "GET /hmr HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: "
                "Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n");
        // A masked text frame "hello" (mask 1,2,3,4), as a browser sends it.
        const std::string text = "hello";
        std::string masked = {'\x81', static_cast<char>(0x80 | text.size()), 1, 2, 3, 4};
        for (size_t i = 0; i < text.size(); ++i) masked += static_cast<char>(text[i] ^ (1 + i % 4));
        sendAll(fd.get(), masked);
        const std::string want_echo =
            "\x81\x0a"
            "echo:hello";
        const std::string want_push = std::string("\x81\x13") + "update:/src/App.tsx";
        std::string got;
        char buf[4096];
        while (got.find(want_push) == std::string::npos) {
            const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);  // 5 s SO_RCVTIMEO
            if (n <= 0) break;
            got.append(buf, static_cast<size_t>(n));
        }
        CHECK(got.rfind("HTTP/1.1 101 Switching Protocols\r\n", 0) == 0);
        CHECK(got.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n") !=
              std::string::npos);
        CHECK(got.find(want_echo) != std::string::npos);
        CHECK(got.find(want_push) != std::string::npos);
        held = std::move(fd);
    }
    // Stopped mid-session: the client sees its connection end (EOF or a
    // reset, never a hang), and the port is free.
    REQUIRE(served.stockade({"stop", served.name()}).exitCode == 0);
    char byte;
    const ssize_t n = ::recv(held.get(), &byte, 1, 0);
    CHECK((n == 0 || (n < 0 && errno == ECONNRESET)));
    CHECK(connectResult(AF_INET, port) == std::strerror(ECONNREFUSED));
}

// A real framework as projects run it: Vite's dev server proxying /api to a
// node server the same command started, in every mode and backend. The npm
// packages are scripts/vite-app.sh's (made by `make check`'s test-root step),
// bound read-only at /repo/node_modules; Vite's own cache goes to /tmp, and
// its config is imported as it is (--configLoader native), not bundled into
// node_modules.
TEST_CASE("serve: a Vite dev server proxies /api to a node server it started, HMR included",
          "[serve][real]") {
    STOCKADE_EACH_SERVE_SETUP(mode, backend);
    const char* from_env = std::getenv("STOCKADE_VITE_APP");
    const std::string app = from_env ? from_env : "/var/cache/stockade-test/vite-app";
    INFO("the Vite test's npm packages: " << app << " (as root: sh scripts/vite-app.sh)");
    REQUIRE(pathExists(app + "/node_modules/.bin/vite"));
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    uint16_t api = freeLoopbackPort();
    while (api == port) api = freeLoopbackPort();
    const std::string a = std::to_string(api), p = std::to_string(port);
    sandbox.scratch().writeFile("worktree/package.json", R"({"type": "module"})");
    sandbox.scratch().writeFile("worktree/index.html",
                                "<!doctype html><title>stockade vite test</title>\n");
    sandbox.scratch().writeFile("worktree/vite.config.js",
                                "export default { cacheDir: '/tmp/vite-cache', server: { proxy: "
                                "{ '/api': 'http://127.0.0.1:" +
                                    a + "' } } };\n");
    sandbox.scratch().writeFile("worktree/api.js",
                                "import http from 'node:http';\n"
                                "http.createServer((req, res) => {\n"
                                "  res.setHeader('content-type', 'application/json');\n"
                                "  res.end(JSON.stringify({ from: 'api', path: req.url }));\n"
                                "}).listen(" +
                                    a + ", '127.0.0.1');\n");
    sandbox.scratch().makeDir("worktree/node_modules");
    Served served(sandbox, serviceName(), port,
                  {"sh", "-c",
                   "cd /repo && node api.js & cd /repo && exec node_modules/.bin/vite "
                   "--configLoader native --port " +
                       p + " --strictPort --host 127.0.0.1"},
                  {"--mount", app + "/node_modules:/repo/node_modules", "--ready-timeout", "60"},
                  backend);
    INFO(served.started().describe());
    REQUIRE(served.ready());
    // Vite compiles its client and config on the first requests: seconds on
    // a loaded machine, which the 5 s default would take for no answer.
    constexpr int kFirstAnswer = 60;
    const std::string page = httpGet(AF_INET, port, "/", kFirstAnswer);
    INFO(page);
    CHECK(page.find(" 200 ") != std::string::npos);
    CHECK(page.find("/@vite/client") != std::string::npos);
    const std::string proxied = httpGet(AF_INET, port, "/api/hello", kFirstAnswer);
    CHECK(proxied.find(R"({"from":"api","path":"/api/hello"})") != std::string::npos);
    // The hot-reload channel: a websocket upgrade with Vite's protocol and
    // the token its client script carries.
    const std::string client = httpGet(AF_INET, port, "/@vite/client", kFirstAnswer);
    const std::string marker = "wsToken = \"";
    const size_t at = client.find(marker);
    REQUIRE(at != std::string::npos);
    const size_t begin = at + marker.size();
    const std::string token = client.substr(begin, client.find('"', begin) - begin);
    int err = 0;
    UniqueFd ws = connectFromHost(AF_INET, port, err, kFirstAnswer);
    REQUIRE(ws);
    sendAll(ws.get(), "GET /?token=" + token + " HTTP/1.1\r\nHost: 127.0.0.1:" + p +
                          "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "
                          "dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                          "Sec-WebSocket-Protocol: vite-hmr\r\n\r\n");
    char buf[4096];
    const ssize_t n = ::recv(ws.get(), buf, sizeof buf, 0);
    const std::string reply(buf, n > 0 ? static_cast<size_t>(n) : 0);
    INFO(reply);
    CHECK(reply.rfind("HTTP/1.1 101", 0) == 0);
}

namespace {

// The SYN_RECV entries for a local port in /proc/net/tcp or tcp6: half-open
// connections a listener holds, one per SYN it answered whose handshake did
// not complete (the kernel lists request sockets in state 03).
int synReceivedOn(int family, uint16_t port) {
    std::ifstream table(family == AF_INET6 ? "/proc/net/tcp6" : "/proc/net/tcp");
    char local_port[8];
    std::snprintf(local_port, sizeof local_port, ":%04X", port);
    int count = 0;
    std::string line;
    std::getline(table, line);  // the header
    while (std::getline(table, line)) {
        std::istringstream fields(line);
        std::string slot, local, remote, state;
        fields >> slot >> local >> remote >> state;
        if (local.ends_with(local_port) && state == "03") ++count;
    }
    return count;
}

// The cgroup v2 mount points, from /proc/self/mountinfo.
std::vector<std::string> cgroup2Mounts() {
    std::vector<std::string> mounts;
    std::ifstream mountinfo("/proc/self/mountinfo");
    for (std::string line; std::getline(mountinfo, line);) {
        if (line.find(" - cgroup2 ") == std::string::npos) continue;
        std::istringstream fields(line);
        std::string id, parent, device, root, mount;
        fields >> id >> parent >> device >> root >> mount;
        mounts.push_back(mount);
    }
    return mounts;
}

// The listener cgroups (runtime/net/listener_cgroup.h) present in the cgroup v2
// mount: none outlives the making of a server's listeners.
// The listener cgroups a supervisor (the ready event's pid) left; other
// tests' supervisors may make theirs meanwhile (ctest runs in parallel).
std::vector<std::string> listenerLeaves(const Served& served) {
    const std::string name =
        "stockade-listeners-" + std::to_string(served.readyEvent().value("pid", 0));
    std::vector<std::string> found;
    std::ifstream mountinfo("/proc/self/mountinfo");
    for (std::string line; std::getline(mountinfo, line);) {
        const size_t dash = line.find(" - cgroup2 ");
        if (dash == std::string::npos) continue;
        std::istringstream fields(line);
        std::string id, parent, device, root, mount;
        fields >> id >> parent >> device >> root >> mount;
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(mount, ec))
            if (entry.path().filename().string() == name) found.push_back(entry.path().string());
    }
    return found;
}

}  // namespace

// The direct ingress hands the server a socket of the host's network
// namespace. What a hostile server does with it and with a connection
// accepted from it, from inside: undo the confinement, turn the connection
// back into one that connects (connect(AF_UNSPEC), then connect) to a host
// listener, a closed host port and an outside address, or one that binds
// (to list the host's addresses and ports), Fast Open, the drop counter, the
// interface ioctls. Every answer is the kernel's: the listener cgroup's
// programs refuse the bind and the connect (EPERM) before the kernel looks
// at the address, so no SYN leaves; the host's listeners never see one.
TEST_CASE("serve --net-backend direct: the host's socket in the server's hands reaches nothing",
          "[serve][G1][direct]") {
    if (!modeUsable(Mode::Root)) return;
    Sandbox sandbox(Mode::Root);
    const uint16_t port = freeLoopbackPort();
    HostListener host_lo = HostListener::tcp(AF_INET, "127.0.0.1");
    REQUIRE(host_lo.ok());
    const bool v6 = hostHasIpv6Loopback();
    HostListener host_lo6 = v6 ? HostListener::tcp(AF_INET6, "::1") : HostListener();
    if (v6) REQUIRE(host_lo6.ok());
    uint16_t closed = freeLoopbackPort();
    while (closed == port) closed = freeLoopbackPort();
    // clang-format off
    const std::string hostile = R"PY(import ctypes, errno, json, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
port, host_port, closed_port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
host_port6 = int(sys.argv[4])  # 0: no IPv6 loopback
def answer(f):
    try:
        r = f()
        return "ok" if r is None else r
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def disconnect(s):
    unspec = ctypes.create_string_buffer(16)
    if libc.connect(s.fileno(), unspec, 16) != 0:
        raise OSError(ctypes.get_errno(), "connect to AF_UNSPEC")
def reconnect(s, address):
    disconnect(s)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_SYNCNT, 1)
    s.settimeout(4)
    s.connect(address)
    return "connected"
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(8)
if host_port6:
    listener6 = socket.socket(socket.AF_INET6)
    listener6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    listener6.bind(("::1", port))
    listener6.listen(8)
# Ready only now (--ready-pattern): a listen after ready is not handed over.
print("both-listening", flush=True)
def turned(s):
    disconnect(s)
    s.setblocking(False)
    return s
while True:
    held, _ = listener.accept()   # the connection to turn around
    asker, _ = listener.accept()  # where the answers go
    asker.recv(100)
    accept_all = ctypes.create_string_buffer(struct.pack("HBBI", 0x06, 0, 0, 0xffffffff))
    fprog = struct.pack("HL", 1, ctypes.addressof(accept_all))
    results = {
        "device": answer(lambda: listener.getsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, 16).rstrip(b"\0").decode()),
        "unbind": answer(lambda: listener.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"")),
        "detach": answer(lambda: listener.setsockopt(socket.SOL_SOCKET, 27, 0)),
        "replace": answer(lambda: held.setsockopt(socket.SOL_SOCKET, 26, fprog)),
        "ifconf": answer(lambda: __import__("fcntl").ioctl(listener.fileno(), 0x8912, struct.pack("iL", 0, 0))),
        "meminfo": answer(lambda: listener.getsockopt(socket.SOL_SOCKET, 55, 64)),
        "tfo_connect": answer(lambda: socket.socket().setsockopt(socket.IPPROTO_TCP, 30, 1)),
        "host_listener": answer(lambda: reconnect(held, ("127.0.0.1", host_port))),
    }
    for key, address in (("closed_port", ("127.0.0.1", closed_port)), ("outside", ("192.0.2.1", 80))):
        c, _ = listener.accept()
        results[key] = answer(lambda: reconnect(c, address))
    # Bound again, an accepted socket would tell the host's addresses apart
    # (EACCES, EADDRNOTAVAIL) and its ports (EADDRINUSE); a connect without
    # waiting shows whether a SYN went out (EINPROGRESS).
    c = turned(listener.accept()[0])
    for key, address in (("bind_lo", ("127.0.0.1", 1)), ("bind_ephemeral", ("127.0.0.1", 0)),
                         ("bind_listened", ("127.0.0.1", host_port)), ("bind_lo2", ("127.0.0.2", 1)),
                         ("bind_any", ("0.0.0.0", 1)), ("bind_outside", ("192.0.2.1", 1))):
        results[key] = answer(lambda: c.bind(address))
    results["connect_now"] = answer(lambda: c.connect(("127.0.0.1", host_port)))
    # sendmsg with an address: TCP takes the address only with Fast Open.
    # (first the disconnect's pending error, then the send's own answer)
    results["sendto_addr"] = answer(lambda: c.sendto(b"x", ("127.0.0.1", host_port)))
    results["sendto_addr_again"] = answer(lambda: c.sendto(b"x", ("127.0.0.1", host_port)))
    results["sendto_fastopen"] = answer(lambda: c.sendto(b"x", socket.MSG_FASTOPEN, ("127.0.0.1", host_port)))
    # listen on it (an ephemeral host listener, were it run), and again on
    # the handed listener (its backlog).
    results["listen_accepted"] = answer(lambda: c.listen(4))
    results["listen_again"] = answer(lambda: listener.listen(16))
    # The same socket in another process (fork: a dup in another fd table).
    r, w = __import__("os").pipe()
    if __import__("os").fork() == 0:
        __import__("os").write(w, answer(lambda: c.connect(("127.0.0.1", host_port))).encode())
        __import__("os")._exit(0)
    __import__("os").close(w)
    results["connect_child"] = __import__("os").read(r, 100).decode()
    __import__("os").wait()
    # Connect before listen: bound to the published port, connected inside,
    # then listen: the kernel's EINVAL, never the host's listener.
    inner = socket.socket()
    inner.bind(("127.0.0.1", 0))
    inner.listen(1)
    early = socket.socket()
    early.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    early.bind(("127.0.0.1", port))
    early.connect(inner.getsockname())
    results["connect_then_listen"] = answer(lambda: early.listen(4))
    results["connected_still"] = answer(lambda: early.getpeername()[1] == inner.getsockname()[1] and "same")
    if host_port6:
        c6 = turned(listener6.accept()[0])
        results["bind6_lo"] = answer(lambda: c6.bind(("::1", 1)))
        results["bind6_mapped"] = answer(lambda: c6.bind(("::ffff:127.0.0.1", 1)))
        results["connect6_now"] = answer(lambda: c6.connect(("::1", host_port6)))
    asker.sendall(json.dumps(results).encode())
    asker.close()
)PY";
    // clang-format on
    sandbox.scratch().writeFile("worktree/hostile.py", hostile);
    Served served(sandbox, serviceName(), port,
                  {"python3", "/repo/hostile.py", std::to_string(port), host_lo.port(),
                   std::to_string(closed), v6 ? host_lo6.port() : "0"},
                  {"--ready-pattern", "both-listening"}, "direct");
    INFO(served.started().describe());
    REQUIRE(served.ready());
    REQUIRE(served.readyEvent().value("backend", "") == "direct");
    CHECK(listenerLeaves(served).empty());  // removed once the listeners were made
    int err = 0;
    UniqueFd held = connectFromHost(AF_INET, port, err);
    REQUIRE(held);
    UniqueFd asker = connectFromHost(AF_INET, port, err);
    REQUIRE(asker);
    // Two more connections for the server to turn around.
    UniqueFd third = connectFromHost(AF_INET, port, err);
    UniqueFd fourth = connectFromHost(AF_INET, port, err);
    UniqueFd fifth = connectFromHost(AF_INET, port, err);
    UniqueFd sixth = v6 ? connectFromHost(AF_INET6, port, err) : UniqueFd();
    if (v6) REQUIRE(sixth);
    sendAll(asker.get(), "go");
    timeval slow{30, 0};
    ::setsockopt(asker.get(), SOL_SOCKET, SO_RCVTIMEO, &slow, sizeof slow);
    const json results = json::parse(readToEof(asker.get()), nullptr, false);
    INFO(results.dump());
    REQUIRE(results.is_object());
    CHECK(results.value("device", "") == "lo");
    CHECK(results.value("unbind", "") == "EPERM");   // needs CAP_NET_RAW over the host's netns
    CHECK(results.value("detach", "") == "EPERM");   // SO_LOCK_FILTER
    CHECK(results.value("replace", "") == "EPERM");  // on an accepted one too
    CHECK(results.value("ifconf", "") == "EPERM");   // seccomp: the host's interfaces
    CHECK(results.value("meminfo", "") == "EPERM");  // seccomp: the drop counter
    CHECK(results.value("tfo_connect", "") == "EPERM");
    // The listener cgroup's connect programs: refused before any SYN, to an
    // open port, a closed one and outside alike.
    CHECK(results.value("host_listener", "") == "EPERM");
    CHECK(results.value("closed_port", "") == "EPERM");
    CHECK(results.value("outside", "") == "EPERM");
    CHECK(results.value("connect_now", "") == "EPERM");
    CHECK(results.value("sendto_addr", "") == "ECONNRESET");   // the disconnect's error
    CHECK(results.value("sendto_addr_again", "") == "EPIPE");  // no Fast Open: not connected
    CHECK(results.value("sendto_fastopen", "") == "ENOTSUP");  // EOPNOTSUPP, by seccomp
    CHECK(results.value("listen_accepted", "") == "EINVAL");   // the supervisor's answer
    CHECK(results.value("listen_again", "") == "ok");
    CHECK(results.value("connect_child", "") == "EPERM");  // the socket's cgroup, not the caller's
    CHECK(results.value("connect_then_listen", "") == "EINVAL");
    CHECK(results.value("connected_still", "") == "same");
    // Its bind programs: one answer for every address and port, so none is
    // told from another.
    for (const char* key :
         {"bind_lo", "bind_ephemeral", "bind_listened", "bind_lo2", "bind_any", "bind_outside"})
        CHECK(results.value(key, "") == "EPERM");
    if (v6) {
        CHECK(results.value("bind6_lo", "") == "EPERM");
        CHECK(results.value("bind6_mapped", "") == "EPERM");
        CHECK(results.value("connect6_now", "") == "EPERM");
    }
    // On the host's side: no connection, and no half-open one (a SYN
    // answered whose handshake the sandbox's filter kept from completing)
    // on the host's listeners. The sandbox's connects returned before it
    // answered; a SYN sent on the loopback is received within that call.
    CHECK_FALSE(host_lo.sawConnection());
    CHECK(synReceivedOn(AF_INET, static_cast<uint16_t>(std::stoi(host_lo.port()))) == 0);
    if (v6) {
        CHECK_FALSE(host_lo6.sawConnection());
        CHECK(synReceivedOn(AF_INET6, static_cast<uint16_t>(std::stoi(host_lo6.port()))) == 0);
    }
    // Refusals are counted as any are.
    held.reset();
    const Completed stop = served.stockade({"stop", served.name()});
    CHECK(stop.exitCode == 0);
    const std::string denials = sandbox.result().at("denials").dump();
    CHECK(denials.find("ioctl") != std::string::npos);
}

// Where the listener cgroup cannot be had (bpf refused here, as it is
// without CAP_BPF and CAP_NET_ADMIN), no host socket is handed to the
// server: the forwarder serves, and stderr and the ready event say so.
// Asked for by name, stderr says it too; by default (direct where it holds)
// only the ready event and ps do.
TEST_CASE("serve --net-backend direct: bpf refused, the userspace forwarder serves and says why",
          "[serve][G1][direct]") {
    if (!modeUsable(Mode::Root)) return;
    const std::string backend = GENERATE("direct", "default");
    INFO("backend: " << backend);
    Sandbox sandbox(Mode::Root);
    const uint16_t port = freeLoopbackPort();
    Served served(sandbox, serviceName(), port, httpServer(port), {}, backend,
                  {"STOCKADE_TEST_FAIL=bpf-prog-load"});
    INFO(served.started().describe());
    REQUIRE(served.ready());
    CHECK(served.readyEvent().value("backend", "") == "userspace");
    CHECK(served.psEntry().value("backend", "") == "userspace");
    const std::string why =
        "direct: cannot make the listeners in a cgroup that refuses their "
        "bind and connect: bpf(BPF_PROG_LOAD, CGROUP_SOCK_ADDR for "
        "BPF_CGROUP_INET4_BIND): EPERM";
    CHECK(served.readyEvent().value("backend_fallback", "") == why);
    CHECK(served.psEntry().value("backend_fallback", "") == why);
    CHECK((served.started().err.find("--net-backend " + why + "; the userspace forwarder serves") !=
           std::string::npos) == (backend == "direct"));
    CHECK(httpGet(AF_INET, port, "/").rfind("HTTP/1.0 200", 0) == 0);
    CHECK(listenerLeaves(served).empty());
}

// A stockade killed between making its listener cgroup and removing it
// leaves the leaf (named by its pid) behind; the next one removes it.
TEST_CASE("serve --net-backend direct: a listener cgroup left by a dead stockade is removed",
          "[serve][direct]") {
    if (!modeUsable(Mode::Root)) return;
    const std::vector<std::string> mounts = cgroup2Mounts();
    REQUIRE_FALSE(mounts.empty());  // as the direct backend needs, as root
    const pid_t dead = ::fork();
    if (dead == 0) ::_exit(0);
    REQUIRE(dead > 0);
    ::waitpid(dead, nullptr, 0);
    const std::string leaf = mounts.front() + "/stockade-listeners-" + std::to_string(dead);
    REQUIRE(::mkdir(leaf.c_str(), 0700) == 0);
    Sandbox sandbox(Mode::Root);
    const uint16_t port = freeLoopbackPort();
    Served served(sandbox, serviceName(), port, httpServer(port), {}, "direct");
    INFO(served.started().describe());
    REQUIRE(served.ready());
    CHECK(served.readyEvent().value("backend", "") == "direct");
    const bool left = pathExists(leaf);
    if (left) ::rmdir(leaf.c_str());
    CHECK_FALSE(left);
    CHECK(listenerLeaves(served).empty());
}

TEST_CASE("serve --net-backend veth: the host's end of the pair is out of reach from inside",
          "[serve][G1][veth]") {
    if (!modeUsable(Mode::Root)) return;
    Sandbox sandbox(Mode::Root);
    const uint16_t port = freeLoopbackPort();
    // Bound to every address of the host, the pair's end included.
    HostListener host_any = HostListener::tcp(AF_INET, "0.0.0.0");
    REQUIRE(host_any.ok());
    const std::string outside = hostExternalAddress();
    const std::string p = "/probe/stockade-probe";
    // The server runs; once the test names the host's end in /repo/go, the
    // command tries it from inside the sandbox (Landlock and nftables).
    const std::string script =
        "python3 -m http.server --bind 127.0.0.1 " + std::to_string(port) +
        " & while [ ! -s /repo/go ]; do sleep 0.05; done; read host < /repo/go; " + p +
        " connect-tcp $host " + host_any.port() + " > /repo/hostend.tmp; mv /repo/hostend.tmp " +
        "/repo/hostend; wait";
    Served served(sandbox, serviceName(), port, {"sh", "-c", script}, {}, "veth");
    INFO(served.started().describe());
    REQUIRE(served.ready());
    const std::optional<int> slot = vethSlotOf(served.supervisor());
    REQUIRE(slot.has_value());
    const std::string host_end = vethAddress(*slot, 1);
    const pid_t sandbox_pid = served.psEntry().value("sandbox_pid", 0);
    REQUIRE(sandbox_pid > 0);

    sandbox.scratch().writeFile("worktree/go", host_end + "\n");
    REQUIRE(waitUntil([&] { return pathExists(sandbox.worktree() + "/hostend"); }, 10s));
    // The sandbox's output chain drops the SYN (nothing but replies leaves
    // by eth0): a local drop answers EPERM, a lost SYN times out.
    CHECK_THAT(ProbeReport(readFile(sandbox.worktree() + "/hostend")).result(),
               IsOneOf({"ETIMEDOUT", "EPERM"}));

    // The network namespace alone, without seccomp: a probe entered into it
    // from the host. Its own rules drop the SYN.
    const std::string probe_on_host = std::string(STOCKADE_PROBE_DIR) + "/stockade-probe";
    const std::string in_netns = "nsenter -t " + std::to_string(sandbox_pid) + " -n ";
    auto from_netns = [&](const std::string& address, const std::string& port_text) {
        return ProbeReport(hostOutput(in_netns + probe_on_host + " connect-tcp " + address + " " +
                                      port_text))
            .result();
    };
    CHECK_THAT(from_netns(host_end, host_any.port()), IsOneOf({"ETIMEDOUT", "EPERM"}));
    if (!outside.empty()) CHECK(from_netns(outside, host_any.port()) == "ENETUNREACH");
    // And with the sandbox's own table gone (as if its rules were broken),
    // the host's table still drops what comes from its end: a connection
    // to the listener would otherwise be accepted.
    hostOutput(in_netns + "nft delete table inet stockade");
    CHECK(hostOutput(in_netns + "nft list tables").find("stockade") == std::string::npos);
    CHECK(from_netns(host_end, host_any.port()) == "ETIMEDOUT");
    CHECK_FALSE(host_any.sawConnection());
}

TEST_CASE("serve --net-backend veth is refused when not root: 125, nothing made",
          "[serve][cli][veth]") {
    if (!modeUsable(Mode::Rootless)) return;
    Sandbox sandbox(Mode::Rootless);
    const uint16_t port = freeLoopbackPort();
    Served served(sandbox, serviceName(), port, httpServer(port), {}, "veth");
    INFO(served.started().describe());
    CHECK(served.started().exitCode == 125);
    CHECK(served.started().err.find("needs root") != std::string::npos);
    CHECK(served.psEntry().is_null());
    CHECK(connectResult(AF_INET, port) == std::strerror(ECONNREFUSED));
    const Completed bad = served.stockade(
        {"serve", "--net-backend", "tap", "--port", std::to_string(port), "--", "true"});
    CHECK(bad.exitCode == 125);
    CHECK(bad.err.find("--net-backend") != std::string::npos);
}

TEST_CASE("serve: not ready in time is torn down: blocked, not_ready, exit 124", "[serve]") {
    STOCKADE_EACH_SERVE_SETUP(mode, backend);
    Sandbox sandbox(mode);
    TokenReaper reaper(randomToken("notready"));
    const uint16_t port = freeLoopbackPort();
    Served served(sandbox, serviceName(), port,
                  probeCommand({"sleep-with-token", reaper.token(), "60"}),
                  {"--ready-timeout", "1"}, backend);
    INFO(served.started().describe());
    CHECK(served.started().exitCode == 124);
    CHECK_FALSE(served.ready());
    CHECK(served.started().err.find("was not ready within 1 s: nothing listened on 127.0.0.1:" +
                                    std::to_string(port)) != std::string::npos);
    const json result = sandbox.result();
    CHECK(result.value("status", "") == "blocked");
    CHECK(result.value("reason", "") == "not_ready");
    CHECK(waitUntilNoProcessHas(reaper.token(), 5s));
    CHECK(served.psEntry().is_null());
    CHECK(connectResult(AF_INET, port) == std::strerror(ECONNREFUSED));
    if (hostHasIpv6Loopback()) CHECK(connectResult(AF_INET6, port) == std::strerror(ECONNREFUSED));
}

// A server that listens, but on another port than --port: never ready (a
// port not published is not reached), and nothing of it is left bound on the
// host, neither port. Where the supervisor sees its listens (direct), the
// line names the port it took instead.
TEST_CASE("serve: a server listening on another port is not_ready, and nothing stays bound",
          "[serve]") {
    STOCKADE_EACH_SERVE_SETUP(mode, backend);
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    const uint16_t other = freeLoopbackPort();
    REQUIRE(other != port);
    Served served(sandbox, serviceName(), port, httpServer(other), {"--ready-timeout", "1"},
                  backend);
    INFO(served.started().describe());
    CHECK(served.started().exitCode == 124);
    CHECK_FALSE(served.ready());
    CHECK(served.started().err.find("was not ready within 1 s") != std::string::npos);
    if (std::string(serve_setup_.took) == "direct")
        CHECK(served.started().err.find("; it listened on " + std::to_string(other) +
                                        " instead;") != std::string::npos);
    CHECK(sandbox.result().value("reason", "") == "not_ready");
    CHECK(served.psEntry().is_null());
    for (uint16_t p : {port, other}) {
        CHECK(connectResult(AF_INET, p) == std::strerror(ECONNREFUSED));
        if (hostHasIpv6Loopback()) CHECK(connectResult(AF_INET6, p) == std::strerror(ECONNREFUSED));
    }
}

TEST_CASE("serve: --ready-pattern needs a word-bounded match", "[serve]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    // "ready" inside "Already" is no match: the server listens, but it is
    // never ready.
    const std::string script =
        "echo 'Already exists'; exec python3 -m http.server --bind "
        "127.0.0.1 " +
        std::to_string(port);
    {
        Served served(sandbox, serviceName(), port, {"sh", "-c", script},
                      {"--ready-pattern", "ready", "--ready-timeout", "2"});
        INFO(served.started().describe());
        CHECK(served.started().exitCode == 124);
        CHECK(sandbox.result().value("reason", "") == "not_ready");
    }
    // Coloured, as dev servers print it: the escapes do not glue to the word.
    const std::string coloured =
        "printf '\\033[32mready\\033[0m in 5 ms\\n'; " + script.substr(script.find("exec"));
    Served served(sandbox, serviceName(), port, {"sh", "-c", coloured},
                  {"--ready-pattern", "ready", "--ready-timeout", "10"});
    INFO(served.started().describe());
    CHECK(served.ready());
}

TEST_CASE("serve: serving a running name again replaces it", "[serve]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    const std::string name = serviceName();
    Served first(sandbox, name, port, httpServer(port));
    INFO(first.started().describe());
    REQUIRE(first.ready());
    Served second(sandbox, name, port, httpServer(port));
    INFO(second.started().describe());
    REQUIRE(second.ready());
    CHECK(second.started().err.find("stopped the running") != std::string::npos);
    CHECK(processGone(first.supervisor()));
    CHECK(second.psEntry().value("pid", 0) == second.supervisor());
    CHECK(httpGet(AF_INET, port, "/").rfind("HTTP/1.0 200", 0) == 0);
}

TEST_CASE("serve: a supervisor killed with SIGKILL takes its sandbox down and frees the port",
          "[serve][G6]") {
    STOCKADE_EACH_SERVE_SETUP(mode, backend);
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    Served served(sandbox, serviceName(), port, httpServer(port), {}, backend);
    INFO(served.started().describe());
    REQUIRE(served.ready());
    std::optional<int> slot;
    if (backend == "veth") {
        slot = vethSlotOf(served.supervisor());
        REQUIRE(slot.has_value());
    }
    const pid_t sandbox_pid = served.psEntry().value("sandbox_pid", 0);
    REQUIRE(sandbox_pid > 0);
    // A client mid-request when it happens: half a request sent, so the
    // server holds the connection open.
    int err = 0;
    UniqueFd mid = connectFromHost(AF_INET, port, err);
    REQUIRE(mid);
    sendAll(mid.get(), "GET / HTTP/1.0\r\n");
    std::this_thread::sleep_for(200ms);
    REQUIRE(::kill(served.supervisor(), SIGKILL) == 0);
    CHECK(waitUntil([&] { return processGone(served.supervisor()); }, 5s));
    CHECK(waitUntil([&] { return processGone(sandbox_pid); }, 5s));
    // It ends: EOF or a reset, never a wait.
    timeval slow{10, 0};
    ::setsockopt(mid.get(), SOL_SOCKET, SO_RCVTIMEO, &slow, sizeof slow);
    char b;
    const ssize_t n = ::recv(mid.get(), &b, 1, 0);
    CHECK((n == 0 || (n < 0 && errno == ECONNRESET)));
    CHECK(connectResult(AF_INET, port) == std::strerror(ECONNREFUSED));
    // The stale record goes at the next look, and with it (veth) the host's
    // table and the slot; the link went with the sandbox's namespace.
    CHECK(served.psEntry().is_null());
    if (slot) CHECK(waitUntil([&] { return vethLeftovers(*slot).empty(); }, 5s));
}

// The server itself dies (SIGKILL from inside) with a client's connection
// open: the client reads EOF or a reset, serve ends with the signal named,
// nothing of the sandbox is left and the port is refused on both loopbacks.
TEST_CASE("serve: a server that dies mid-connection ends it, and the port is freed", "[serve]") {
    STOCKADE_EACH_SERVE_SETUP(mode, backend);
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    // clang-format off
    const std::string script = R"PY(import os, signal, socket, sys
port = int(sys.argv[1])
l = socket.socket(socket.AF_INET6)
l.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
l.bind(("::", port))
l.listen(8)
def asked():  # the readiness probe's connections (forwarders) ask nothing
    while True:
        c, _ = l.accept()
        if c.recv(1):
            return c
        c.close()
held = asked()
held.sendall(b"held")
asked()
os.kill(os.getpid(), signal.SIGKILL)
)PY";
    // clang-format on
    sandbox.scratch().writeFile("worktree/dies.py", script);
    Served served(sandbox, serviceName(), port, {"python3", "/repo/dies.py", std::to_string(port)},
                  {}, backend);
    INFO(served.started().describe());
    REQUIRE(served.ready());
    const pid_t sandbox_pid = served.psEntry().value("sandbox_pid", 0);
    REQUIRE(sandbox_pid > 0);
    int err = 0;
    UniqueFd held = connectFromHost(AF_INET, port, err);
    REQUIRE(held);
    sendAll(held.get(), "h");
    timeval slow{10, 0};
    ::setsockopt(held.get(), SOL_SOCKET, SO_RCVTIMEO, &slow, sizeof slow);
    char buf[4] = {};
    REQUIRE(::recv(held.get(), buf, 4, MSG_WAITALL) == 4);
    UniqueFd killer = connectFromHost(AF_INET, port, err);
    REQUIRE(killer);
    sendAll(killer.get(), "die");
    char b;
    const ssize_t n = ::recv(held.get(), &b, 1, 0);
    CHECK((n == 0 || (n < 0 && errno == ECONNRESET)));
    CHECK(waitUntil([&] { return processGone(served.supervisor()); }, 10s));
    CHECK(processGone(sandbox_pid));
    CHECK(sandbox.result().value("status", "") != "ok");
    CHECK(served.stockade({"logs", served.name()}).out.find("was killed by signal 9") !=
          std::string::npos);
    CHECK(served.psEntry().is_null());
    CHECK(connectResult(AF_INET, port) == std::strerror(ECONNREFUSED));
    if (hostHasIpv6Loopback()) CHECK(connectResult(AF_INET6, port) == std::strerror(ECONNREFUSED));
}

TEST_CASE("serve: another user can neither see nor stop a dev server", "[serve]") {
    if (!modeUsable(Mode::Root) || !modeUsable(Mode::Rootless)) return;
    Sandbox sandbox(Mode::Root);
    Sandbox other(Mode::Rootless);
    const uint16_t port = freeLoopbackPort();
    Served served(sandbox, serviceName(), port, httpServer(port));
    INFO(served.started().describe());
    REQUIRE(served.ready());
    Served peek(other, served.name(), 0, {"true"});  // --port 0: refused, nothing started
    CHECK(peek.started().exitCode == 125);
    CHECK(peek.psEntry().is_null());
    CHECK(peek.stockade({"stop", served.name()}).exitCode == 0);  // not theirs: "not running"
    CHECK(peek.stockade({"stop", "--port", std::to_string(port)}).exitCode == 0);
    CHECK_FALSE(processGone(served.supervisor()));
    CHECK(httpGet(AF_INET, port, "/").rfind("HTTP/1.0 200", 0) == 0);
}

TEST_CASE("serve: bad input is refused with exit 125 and leaves no record", "[serve][cli]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string name = serviceName();
    const std::vector<std::vector<std::string>> cases = {
        {"--port", "0"},
        {"--port", "65536"},
        {"--port", "http"},
        {"--port", "8000", "--name", "../escape"},
        {"--port", "8000", "--ready-pattern", "("},
        {"--port", "8000", "--ready-timeout", "0"},
        {"--port", "8000", "--profile", "held-test"},
    };
    for (const auto& options : cases) {
        Launch launch = sandbox.launch({"true"});
        launch.args[0] = "serve";
        launch.args.insert(launch.args.begin() + 1, options.begin(), options.end());
        const Completed c = runStockade(launch);
        INFO(c.describe());
        CHECK(c.exitCode == 125);
        CHECK(c.err.find("stockade: ") != std::string::npos);
    }
    Served probe(sandbox, name, 0, {"true"});
    CHECK(probe.psEntry().is_null());
}

// After ready, the listener the forwarder serves is the supervisor's alone:
// a server that listens on the other loopback later (blocking, then shut
// down, as a red team did to stall the forwarder) gets a socket of its own,
// inside, and both loopbacks go on answering; stop is prompt.
TEST_CASE(
    "serve --net-backend direct: a late listen on the other loopback cannot take the "
    "forwarder's listener",
    "[serve][direct]") {
    if (!modeUsable(Mode::Root) || !hostHasIpv6Loopback()) return;
    Sandbox sandbox(Mode::Root);
    const uint16_t port = freeLoopbackPort();
    // clang-format off
    sandbox.scratch().writeFile("worktree/late.py", R"PY(import os, socket, sys, threading, time
port = int(sys.argv[1])
def serve(s):
    while True:
        c, _ = s.accept()
        c.recv(4096)
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
        c.close()
first = socket.socket()
first.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
first.bind(("127.0.0.1", port))
first.listen(16)
threading.Thread(target=serve, args=(first,), daemon=True).start()
while not os.path.exists("/repo/go"):
    time.sleep(0.05)
late = socket.socket(socket.AF_INET6)
late.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
late.bind(("::1", port))
late.listen(16)
late.shutdown(socket.SHUT_RDWR)
open("/repo/done", "w").write("listened")
time.sleep(3600)
)PY");
    // clang-format on
    Served served(sandbox, serviceName(), port, {"python3", "/repo/late.py", std::to_string(port)},
                  {}, "direct");
    INFO(served.started().describe());
    REQUIRE(served.ready());
    REQUIRE(served.readyEvent().value("backend", "") == "direct");
    sandbox.scratch().writeFile("worktree/go", "");
    REQUIRE(waitUntil([&] { return pathExists(sandbox.worktree() + "/done"); }, 10s));
    for (int i = 0; i < 10; ++i) {
        CHECK(httpGet(AF_INET6, port, "/").find("\r\n\r\nok") != std::string::npos);
        CHECK(httpGet(AF_INET, port, "/").find("\r\n\r\nok") != std::string::npos);
    }
    const auto before = std::chrono::steady_clock::now();
    CHECK(served.stockade({"stop", served.name()}).exitCode == 0);
    INFO("stop took " << std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - before)
                             .count()
                      << " ms");
    CHECK(processGone(served.supervisor()));
}

// The direct backend's residuals (docs/dev-servers.md, "Residuals"), shown
// exactly beside the userspace backend, where the server's listen runs in
// the kernel inside its own namespace:
//  - a unix listen the supervisor performs makes it the socket's owner:
//    SO_PEERCRED of a client reads pid 0 (the supervisor is outside the
//    sandbox's PID namespace), not the server's pid;
//  - workers handed the one listener share its file, so its O_NONBLOCK is
//    the last one asked for;
//  - once the server closes the listener it was handed, the supervisor's
//    copy keeps the port and its backlog: a client's connect succeeds and it
//    waits (no reset) until the server listens on the port again, and is
//    then answered; under userspace the forwarder holds it too (trying the
//    server again every 25 ms for 3 s) and it is answered the same way.
TEST_CASE("serve: the direct backend's residuals, shown beside userspace", "[serve][direct]") {
    if (!modeUsable(Mode::Root)) return;
    const std::string backend = GENERATE("direct", "userspace");
    INFO("backend: " << backend);
    Sandbox sandbox(Mode::Root);
    const uint16_t port = freeLoopbackPort();
    // clang-format off
    const std::string script = R"PY(import fcntl, json, os, socket, struct, sys, time
port = int(sys.argv[1])
def listener(blocking):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind(("127.0.0.1", port))
    s.setblocking(blocking)
    s.listen(8)
    return s
l = listener(True)
u = socket.socket(socket.AF_UNIX)
u.bind("/tmp/u.sock")
u.listen(1)
c = socket.socket(socket.AF_UNIX)
c.connect("/tmp/u.sock")
pid, uid, gid = struct.unpack("3i", c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
r, w = os.pipe()
worker = os.fork()
if worker == 0:
    listener(False)
    os.write(w, b"x")
    time.sleep(600)
os.read(r, 1)
info = {"peer_pid": pid, "peer_uid": uid, "my_pid": os.getpid(), "my_uid": os.getuid(),
        "nonblock": bool(fcntl.fcntl(l.fileno(), fcntl.F_GETFL) & os.O_NONBLOCK)}
os.kill(worker, 9)
os.waitpid(worker, 0)
l.setblocking(True)
print("residuals-ready", flush=True)
while True:  # the readiness probe's connections (userspace) ask nothing
    conn, _ = l.accept()
    if conn.recv(1):
        break
    conn.close()
conn.sendall(json.dumps(info).encode())
conn.close()
l.close()
while not os.path.exists("/repo/relisten"):
    time.sleep(0.05)
l = listener(True)
while True:
    conn, _ = l.accept()
    conn.sendall(b"again")
    conn.close()
)PY";
    // clang-format on
    sandbox.scratch().writeFile("worktree/residuals.py", script);
    Served served(sandbox, serviceName(), port,
                  {"python3", "/repo/residuals.py", std::to_string(port)},
                  {"--ready-pattern", "residuals-ready"}, backend);
    INFO(served.started().describe());
    REQUIRE(served.ready());
    REQUIRE(served.readyEvent().value("backend", "") == backend);
    int err = 0;
    UniqueFd first = connectFromHost(AF_INET, port, err);
    REQUIRE(first);
    sendAll(first.get(), "i");
    const json info = json::parse(readToEof(first.get()), nullptr, false);
    INFO(info.dump());
    REQUIRE(info.is_object());
    if (backend == "direct") {
        CHECK(info.value("peer_pid", -1) == 0);
        CHECK(info.value("peer_pid", -1) != info.value("my_pid", -1));
        CHECK(info.value("nonblock", false));
    } else {
        CHECK(info.value("peer_pid", -1) == info.value("my_pid", -1));
        CHECK(info.value("peer_uid", -1) == info.value("my_uid", -2));
        CHECK_FALSE(info.value("nonblock", true));
    }
    // The listener closed: a new client.
    std::this_thread::sleep_for(200ms);
    UniqueFd waiting = connectFromHost(AF_INET, port, err);
    REQUIRE(waiting);
    timeval second{1, 0};
    ::setsockopt(waiting.get(), SOL_SOCKET, SO_RCVTIMEO, &second, sizeof second);
    char b = 0;
    const ssize_t n = ::recv(waiting.get(), &b, 1, 0);
    const int recv_err = errno;
    // Queued in the supervisor's copy (direct) or held by the forwarder,
    // which finds nothing inside yet (userspace): no answer, no reset.
    CHECK(n < 0);
    CHECK(recv_err == EAGAIN);
    sandbox.scratch().writeFile("worktree/relisten", "");
    timeval slow{30, 0};
    ::setsockopt(waiting.get(), SOL_SOCKET, SO_RCVTIMEO, &slow, sizeof slow);
    CHECK(readToEof(waiting.get()) == "again");  // from the queue, or carried
    UniqueFd later;
    CHECK(waitUntil(
        [&] {
            later = connectFromHost(AF_INET, port, err);
            if (!later) return false;
            ::setsockopt(later.get(), SOL_SOCKET, SO_RCVTIMEO, &slow, sizeof slow);
            return readToEof(later.get()) == "again";
        },
        20s));
}

// Servers as they start in real life: one that calls listen twice on its
// socket (a framework's and then the app's), and a second worker process
// with a socket of its own on the same port (SO_REUSEPORT, as cluster and
// pre-fork servers do). Every request is answered by one of them.
TEST_CASE("serve: a server that listens twice, and a second worker on the port, are served",
          "[serve]") {
    STOCKADE_EACH_SERVE_SETUP(mode, backend);
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    // clang-format off
    sandbox.scratch().writeFile("worktree/workers.py", R"PY(import os, socket, sys
port = int(sys.argv[1])
def listener():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind(("127.0.0.1", port))
    s.listen(5)
    s.listen(128)
    return s
def serve(s, me):
    while True:
        c, _ = s.accept()
        c.recv(4096)
        body = me.encode()
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        c.close()
first = listener()
if os.fork() == 0:
    serve(listener(), "second")
serve(first, "first")
)PY");
    // clang-format on
    Served served(sandbox, serviceName(), port,
                  {"python3", "/repo/workers.py", std::to_string(port)}, {}, backend);
    INFO(served.started().describe());
    REQUIRE(served.ready());
    for (int i = 0; i < 20; ++i) {
        const std::string response = httpGet(AF_INET, port, "/");
        const std::string body = response.substr(response.find("\r\n\r\n") + 4);
        INFO(response);
        CHECK_THAT(body, IsOneOf({"first", "second"}));
        if (body != "first" && body != "second") {
            INFO(served.logs());
            FAIL("the server's output above");
        }
    }
}

// A port another program holds: refused before anything runs, naming the
// holder as far as the caller may see it (root: the pid and its name;
// another user: whose it is), and nothing is left behind.
TEST_CASE("serve: a port another program holds is refused, naming its holder", "[serve][cli]") {
    STOCKADE_EACH_SERVE_SETUP(mode, backend);
    Sandbox sandbox(mode);
    HostListener held = HostListener::tcp(AF_INET, "127.0.0.1");
    REQUIRE(held.ok());
    const uint16_t port = static_cast<uint16_t>(std::stoi(held.port()));
    const std::string name = serviceName();
    Served served(sandbox, name, port, httpServer(port), {}, backend);
    INFO(served.started().describe());
    CHECK(served.started().exitCode == 125);
    const std::string said = served.started().err;
    CHECK(said.find("port " + held.port() + " is in use on the host's loopback by ") !=
          std::string::npos);
    if (mode == Mode::Root)
        CHECK(said.find("pid " + std::to_string(::getpid()) + " (") != std::string::npos);
    else
        CHECK(said.find("a process of uid 0") != std::string::npos);
    CHECK(served.psEntry().is_null());
    CHECK_FALSE(held.sawConnection());
}

TEST_CASE("serve: the sandbox is run's, but for the published port", "[serve]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--profile", "dev-server");
    // What the command sees of its own confinement, written to the worktree.
    auto report = [](const std::string& file) {
        const std::string p = "/probe/stockade-probe";
        return p + " ids > " + file + "; " + p + " caps >> " + file + "; " + p + " mounts >> " +
               file + "; " + p + " ifaces | grep -v '^route6' >> " + file + "; " + p + " env >> " +
               file + "; cat /proc/self/limits >> " + file +
               "; grep -E '^(Seccomp|NoNewPrivs|Cap)' /proc/self/status >> " + file +
               "; hostname >> " + file;
    };
    const Completed run = sandbox.run({"sh", "-c", report("/repo/run.txt")});
    INFO(run.describe());
    REQUIRE(run.exitCode == 0);
    const json run_result = sandbox.result();

    const uint16_t port = freeLoopbackPort();
    {
        Served served(sandbox, serviceName(), port,
                      {"sh", "-c",
                       report("/repo/serve.txt") + "; exec python3 -m http.server --bind " +
                           "127.0.0.1 " + std::to_string(port)});
        INFO(served.started().describe());
        REQUIRE(served.ready());
    }  // stopped here; its result is written as it ends
    const json serve_result = sandbox.result();
    const std::string seen_by_run = readFile(sandbox.worktree() + "/run.txt");
    REQUIRE(!seen_by_run.empty());
    CHECK(seen_by_run == readFile(sandbox.worktree() + "/serve.txt"));
    CHECK(run_result.at("enforced") == serve_result.at("enforced"));
    CHECK(run_result.at("degraded") == serve_result.at("degraded"));
    CHECK(serve_result.value("status", "") == "cancelled");  // ended by stop
}

TEST_CASE("serve: a state directory others could reach is refused, not used", "[serve]") {
    if (!modeUsable(Mode::Rootless)) return;
    // $XDG_RUNTIME_DIR/stockade exists but is open to everyone (0755): a
    // record or lock there could be planted or read by another user.
    ScratchDir runtime(scratchRoot(), "xdg", kNobody, kNobody);
    const std::string state = runtime.makeDir("stockade", 0755);
    Launch launch;
    launch.mode = Mode::Rootless;
    launch.args = {"ps"};
    launch.environment = {"PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR=" + runtime.path()};
    const Completed ps = runStockade(launch);
    INFO(ps.describe());
    CHECK(ps.exitCode == 125);
    CHECK(ps.err.find("not private") != std::string::npos);
    // Made private, the same directory is used.
    REQUIRE(::chmod(state.c_str(), 0700) == 0);
    CHECK(runStockade(launch).exitCode == 0);
}

// A rootless sandbox writes files as its user, so a run given a path that
// holds the user's state directory (/tmp/stockade-UID, $XDG_RUNTIME_DIR) can
// leave a lock and a record there naming any pid of that user. stop (and
// serve, which stops the name first) signals only the process that marked
// itself the lock's holder (a POSIX lock, reported with its owner's pid).
TEST_CASE("serve: stop signals only the lock's marked holder, never the pid a planted record names",
          "[serve]") {
    if (!modeUsable(Mode::Rootless)) return;
    ScratchDir runtime(scratchRoot(), "xdg", kNobody, kNobody);
    const std::string state = runtime.makeDir("stockade", 0700);
    const std::string name = serviceName();
    const std::string lock = state + "/" + name + ".lock";
    // The victim: a process of the same user that is no server.
    HostProcess victim({"/bin/sleep", "60"}, kNobody, kNobody);
    // What the planter holds: the name's flock, and even a POSIX lock of its
    // own, so the name looks live and marked, by another pid than the record's.
    HostProcess holder({"/usr/bin/python3", "-c",
                        "import fcntl, sys, time\n"
                        "f = open(sys.argv[1], 'a')\n"
                        "fcntl.flock(f, fcntl.LOCK_EX)\n"
                        "fcntl.lockf(f, fcntl.LOCK_EX, 1)\n"
                        "time.sleep(60)\n",
                        lock},
                       kNobody, kNobody);
    const std::string held = " " + std::to_string(holder.pid()) + " ";
    for (int i = 0;
         i < 250 &&
         readFileOrEmpty("/proc/locks").find("POSIX  ADVISORY  WRITE" + held) == std::string::npos;
         ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    REQUIRE(readFileOrEmpty("/proc/locks").find(held) != std::string::npos);
    json record = {{"schema", "stockade.service/v1"},
                   {"name", name},
                   {"port", 1},
                   {"pid", victim.pid()},
                   {"sandbox_pid", victim.pid()},
                   {"started_ms", 0},
                   {"ready", true},
                   {"profile", "dev-server"},
                   {"command", {"sleep"}},
                   {"log", state + "/" + name + ".log"}};
    runtime.writeFile("stockade/" + name + ".json", record.dump());
    Launch launch;
    launch.mode = Mode::Rootless;
    launch.args = {"stop", name};
    launch.environment = {"PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR=" + runtime.path()};
    const Completed stop = runStockade(launch);
    INFO(stop.describe());
    CHECK(stop.exitCode != 0);
    CHECK(stop.err.find("not the holder of its lock") != std::string::npos);
    // The host's side: the victim was never signalled.
    CHECK(victim.alive());
}

// Issue 15: std::regex recursed per character, so `\s+` over one line of
// about 40 KB killed the supervisor (SIGSEGV); RE2 over a bounded window
// does not. The long line is written whole and then dribbled a byte per
// write, and the server is ready on the line after it.
TEST_CASE(
    "serve: a 200 KB line against a pattern with unbounded runs neither kills nor stalls "
    "the supervisor",
    "[serve][ready]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    const std::string script =
        "python3 -c \"import sys\n"
        "sys.stdout.write('Local:' + ' ' * 204800 + '!\\n'); sys.stdout.flush()\n"
        "for c in 'Local:' + ' ' * 20000 + '!\\n': sys.stdout.write(c); sys.stdout.flush()\n"
        "print('listening on 127.0.0.1:" +
        std::to_string(port) + "', flush=True)\"; exec python3 -m http.server --bind 127.0.0.1 " +
        std::to_string(port);
    Served served(sandbox, serviceName(), port, {"sh", "-c", script},
                  {"--ready-pattern", "(Local:\\s+http|listening on .*)", "--ready-timeout", "30"});
    INFO(served.started().describe());
    REQUIRE(served.ready());
    CHECK(served.psEntry().value("pid", 0) == served.supervisor());
    CHECK_FALSE(processGone(served.supervisor()));
    CHECK(httpGet(AF_INET, port, "/").rfind("HTTP/1.0 200", 0) == 0);
    // The whole of the output reached the log, the long line included.
    const Completed logs = served.stockade({"logs", served.name()});
    CHECK(logs.out.find("Local:" + std::string(204800, ' ') + "!\n") != std::string::npos);
}

TEST_CASE("serve: a --ready-pattern RE2 cannot use is refused with 125 before anything runs",
          "[serve][ready][cli]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"(a)\\1", "no backreferences"},
        {"ready(?=!)", "no lookaround"},
        {"(unclosed", "missing )"},
        {".*", "matches the empty string"},
        {"", "empty"},
        {"a{1001}", "up to 1000"},
    };
    for (const auto& [pattern, why] : cases) {
        TokenReaper reaper(randomToken("badpattern"));
        ::unlink(sandbox.resultPath().c_str());  // this case's record, not the last one's
        Served served(sandbox, serviceName(), port,
                      probeCommand({"sleep-with-token", reaper.token(), "60"}),
                      {"--ready-pattern", pattern});
        INFO(pattern << "\n" << served.started().describe());
        CHECK(served.started().exitCode == 125);
        CHECK(served.started().err.find("stockade: --ready-pattern") != std::string::npos);
        CHECK(served.started().err.find(why) != std::string::npos);
        CHECK(served.started().out.empty());  // no ready event
        // Nothing started: no process of the command, no record, no port.
        CHECK(findProcessesWithToken(reaper.token(), false).empty());
        CHECK(served.psEntry().is_null());
        CHECK(connectResult(AF_INET, port) == std::strerror(ECONNREFUSED));
        const json result = sandbox.result();
        CHECK(result.value("status", "") == "error");
        CHECK(result["error"].value("stage", "") == "arguments");
    }
}

// Issue 23: `serve --port 80` as root said nothing on the terminal: the host
// side bound port 80, but inside, the server (no capabilities) could not,
// and exited. The sandbox binds any port on its own loopback, as Docker's
// containers do; rootless, the host's own bound refuses the port, said with
// the bound and the fix.
TEST_CASE("serve: port 80 is served as root, and rootless the host's bound is named with the fix",
          "[serve]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const uint16_t port = 80;
    if (mode == Mode::Root) {
        // The host's port 80 must be free for the case to mean anything.
        // SO_REUSEADDR: a connection of an earlier run in TIME_WAIT is no
        // holder (stockade's own listener sets it too).
        UniqueFd probe(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        const int on = 1;
        ::setsockopt(probe.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        INFO("something on this host holds 127.0.0.1:80; the case needs it free");
        REQUIRE(::bind(probe.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    }
    const int unprivileged_start =
        std::atoi(readFile("/proc/sys/net/ipv4/ip_unprivileged_port_start").c_str());
    Served served(sandbox, serviceName(), port, httpServer(port));
    INFO(served.started().describe());
    if (mode == Mode::Root || static_cast<int>(port) >= unprivileged_start) {
        REQUIRE(served.ready());
        CHECK(httpGet(AF_INET, port, "/").rfind("HTTP/1.0 200", 0) == 0);
        return;
    }
    CHECK(served.started().exitCode == 125);
    CHECK(served.started().out.empty());
    const std::string& err = served.started().err;
    CHECK(err.find("cannot publish port 80: bind(127.0.0.1:80): EACCES") != std::string::npos);
    CHECK(err.find("ip_unprivileged_port_start (" + std::to_string(unprivileged_start) +
                   " here)") != std::string::npos);
    CHECK(err.find("--port 8080") != std::string::npos);
}

// The readiness probe and --ready-timeout run on one timer: were its arming
// to fail unnoticed, the server would be neither judged ready nor late, and
// `serve --detach` would wait for ever (issue 15). A refusal, named once.
TEST_CASE("serve: a failed timerfd_settime of the readiness probe is a refusal",
          "[serve][supervisor]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    TokenReaper reaper(randomToken("timerless"));
    const uint16_t port = freeLoopbackPort();
    const std::string name = serviceName();
    Served served(sandbox, name, port, probeCommand({"sleep-with-token", reaper.token(), "60"}),
                  {"--ready-timeout", "30"}, "userspace",
                  {"STOCKADE_TEST_FAIL=serve-timerfd_settime"});
    const Completed& done = served.started();
    INFO(done.describe());
    CHECK(done.exitCode == 125);
    CHECK(done.err.find("stockade: arm the readiness probe: timerfd_settime(every 25 ms): "
                        "EINVAL\n") != std::string::npos);
    CHECK(done.err.find("EINVAL") == done.err.rfind("EINVAL"));
    CHECK_FALSE(served.ready());
    CHECK(waitUntilNoProcessHas(reaper.token(), 5s));
    // Nothing left that says it runs: no live lock, no record.
    CHECK(served.psEntry().is_null());
    const std::string state =
        mode == Mode::Root ? "/run/stockade" : "/tmp/stockade-" + std::to_string(kNobody);
    struct stat st;
    CHECK(::lstat((state + "/" + name + ".json").c_str(), &st) < 0);
    CHECK(::lstat((state + "/" + name + ".lock").c_str(), &st) < 0);
}
