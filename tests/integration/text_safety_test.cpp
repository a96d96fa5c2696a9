// Issue 15, points 5 and 6: bytes of the sandbox's choosing (output, names,
// arguments) reach stockade's JSON as valid UTF-8 and its messages on the
// terminal as visible escapes; `logs` escapes unless --raw. The oracle's
// side is in tests/oracle/oracle_cases.py.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "harness.h"
#include "host_listener.h"

using namespace stockade::itest;
using nlohmann::json;
using stockade::UniqueFd;
using namespace std::chrono_literals;

namespace {

const std::string kFffd = "\xEF\xBF\xBD";

std::string readWhole(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

bool hasRawControl(std::string_view text) {
    return text.find('\x1b') != std::string_view::npos ||
           text.find('\r') != std::string_view::npos || text.find('\x07') != std::string_view::npos;
}

Completed stockadeAs(Mode mode, std::vector<std::string> args) {
    Launch launch;
    launch.mode = mode;
    launch.args = std::move(args);
    launch.environment = {"PATH=/usr/bin:/bin"};
    return runStockade(launch, 30s);
}

}  // namespace

TEST_CASE("text: ill-formed UTF-8 and escapes from the command give a valid result record",
          "[text]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    // The output and an argument hold stray bytes, an overlong form, a
    // surrogate and terminal escapes.
    const Completed run = sandbox.run(
        {"sh", "-c",
         "printf 'a\\377\\376\\033[2Kb'; printf '\\300\\200\\355\\240\\200' >&2; exit 3",
         "arg\xff\x1b]0;t\x07"});
    INFO(run.describe());
    CHECK(run.exitCode == 3);
    const std::string text = readWhole(sandbox.resultPath());
    INFO(text);
    // Strict: nlohmann's parser refuses ill-formed UTF-8.
    const json r = sandbox.result();
    CHECK(r["status"] == "failed");
    CHECK(r["stdout"]["tail"] == "a" + kFffd + kFffd + "\x1b[2Kb");
    CHECK(r["stderr"]["tail"] == kFffd + kFffd + kFffd + kFffd + kFffd);
    CHECK(r["stdout"]["bytes"] == 8);  // the count and the hash are of the bytes as they came
    CHECK(r["command"][3] == "arg" + kFffd + "\x1b]0;t\x07");
    // The escapes are JSON escapes in the file: printing it drives nothing.
    CHECK_FALSE(hasRawControl(text));
    // The live echo is the command's output to its caller, as it came.
    CHECK(run.out == "a\xff\xfe\x1b[2Kb");
}

TEST_CASE("text: stockade's own messages show the command's escapes, never send them", "[text]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const Completed run = sandbox.run({"/nonexistent\r\x1b[2K\x1b[1Apassed\xff"});
    INFO(run.describe());
    CHECK(run.exitCode == 127);
    CHECK(run.err.find("/nonexistent\\r\\x1b[2K\\x1b[1Apassed\\xff") != std::string::npos);
    CHECK_FALSE(hasRawControl(run.err));
    CHECK(sandbox.result()["command"][0] == "/nonexistent\r\x1b[2K\x1b[1Apassed" + kFffd);
}

TEST_CASE("text: logs escapes control characters unless --raw, and ps and its JSON stay clean",
          "[text][serve]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    const std::string name = randomToken("itext");
    const std::string state =
        mode == Mode::Root ? "/run/stockade" : "/tmp/stockade-" + std::to_string(kNobody);
    struct Cleanup {
        Mode mode;
        std::string name, state;
        ~Cleanup() {
            stockadeAs(mode, {"stop", name});
            for (const char* suffix : {".log", ".log.1"})
                ::unlink((state + "/" + name + suffix).c_str());
        }
    } cleanup{mode, name, state};

    Launch launch = sandbox.launch(
        {"sh", "-c",
         "printf 'x\\033]0;owned\\007\\r\\033[1A\\377\\tend\\n'; exec python3 -m http.server "
         "--bind 127.0.0.1 " +
             std::to_string(port),
         "label\xff\x1b[2K"});
    launch.args[0] = "serve";
    const std::vector<std::string> options = {"--detach", "--name", name, "--port",
                                              std::to_string(port)};
    launch.args.insert(launch.args.begin() + 1, options.begin(), options.end());
    const Completed started = runStockade(launch, 60s);
    INFO(started.describe());
    REQUIRE(started.exitCode == 0);

    const Completed logs = stockadeAs(mode, {"logs", name});
    INFO(logs.describe());
    CHECK(logs.exitCode == 0);
    CHECK(logs.out.find("x\\x1b]0;owned\\x07\\r\\x1b[1A\\xff\tend\n") != std::string::npos);
    CHECK_FALSE(hasRawControl(logs.out));
    const Completed raw = stockadeAs(mode, {"logs", "--raw", name});
    CHECK(raw.exitCode == 0);
    CHECK(raw.out.find("x\x1b]0;owned\x07\r\x1b[1A\xff\tend\n") != std::string::npos);

    // The record of a command with stray bytes is written (it was a throw
    // in the supervisor) and reads back as valid JSON.
    const Completed ps_json = stockadeAs(mode, {"ps", "--json"});
    const json all = json::parse(ps_json.out, nullptr, false);
    REQUIRE(all.is_object());
    REQUIRE(all["servers"].is_array());
    json entry;
    for (const json& e : all["servers"])
        if (e.value("name", "") == name) entry = e;
    REQUIRE(entry.is_object());
    CHECK(entry["command"][3] == "label" + kFffd + "\x1b[2K");
    CHECK_FALSE(hasRawControl(ps_json.out));
    const Completed ps = stockadeAs(mode, {"ps"});
    CHECK(ps.out.find("label" + kFffd + "\\x1b[2K") != std::string::npos);
    CHECK_FALSE(hasRawControl(ps.out));
}
