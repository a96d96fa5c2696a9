// G2: the synthesized parts of the sandbox's tree (/etc, /proc, /dev) and the
// extra mounts a caller asks for.
#include <set>

#include "harness.h"

using namespace stockade::itest;

namespace {

const std::vector<std::string> kRefusedWrite = {"EROFS", "EACCES"};

// A masked /proc path reads as nothing: /dev/null bound over a file, an empty
// read-only tmpfs over a directory, or not there at all.
void checkMasked(const Sandbox& sandbox, const std::string& path) {
    const ProbeRun stat = sandbox.probe({"stat", path});
    INFO(path << "\n" << stat.describe());
    REQUIRE(stat.exitCode() == 0);
    if (stat.result() != "ok") {
        CHECK_THAT(stat.result(), IsOneOf({"ENOENT", "EACCES"}));
        return;
    }
    const std::string type = stat.report.get("type");
    if (type == "dir") {
        const ProbeRun list = sandbox.probe({"list-dir", path});
        INFO(list.describe());
        CHECK(list.report.all("entry").empty());
        CHECK(stat.report.get("readonly") == "1");
        // Docker mounts a read-only tmpfs there: nothing may be put in it.
        const ProbeRun create = sandbox.probe({"create-in", path});
        INFO(create.describe());
        CHECK_THAT(create.result(), IsOneOf(kRefusedWrite));
        return;
    }
    if (type == "char") CHECK(stat.report.get("rdev") == "1:3");
    const ProbeRun read = sandbox.probe({"read-file", path});
    INFO(read.describe());
    if (read.result() == "ok")
        CHECK(read.report.get("bytes") == "0");
    else
        CHECK_THAT(read.result(), IsOneOf({"EACCES", "EPERM", "ENOENT"}));
}

}  // namespace

TEST_CASE("G2: --mount binds read-only unless :rw", "[G2][mount]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    // World-writable, so that only the mount's flag can refuse a write.
    const std::string payload = sandbox.scratch().makeDir("payload", 0777);
    sandbox.scratch().writeFile("payload/data", "payload\n");

    SECTION("read-only by default") {
        sandbox.option("--mount", payload + ":/data");
        const ProbeRun read = sandbox.probe({"read-file", "/data/data"});
        INFO(read.describe());
        CHECK(read.result() == "ok");
        CHECK(read.report.get("content") == "payload\\n");
        const ProbeRun create = sandbox.probe({"create-in", "/data"});
        INFO(create.describe());
        CHECK(create.result() == "EROFS");
        CHECK(sandbox.probe({"stat", "/data"}).report.get("readonly") == "1");
    }
    SECTION("writable with :rw") {
        sandbox.option("--mount", payload + ":/data:rw");
        const ProbeRun create = sandbox.probe({"create-in", "/data"});
        INFO(create.describe());
        CHECK(create.result() == "ok");
    }
}

TEST_CASE("G2: /etc is a curated read-only subset with synthesized files", "[G2][etc]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const ProbeRun list = sandbox.probe({"list-dir", "/etc"});
    INFO(list.describe());
    REQUIRE(list.result() == "ok");
    const std::vector<std::string> entries = list.report.all("entry");
    const std::set<std::string> names(entries.begin(), entries.end());
    for (const char* wanted : {"passwd", "group", "hosts", "hostname"}) {
        INFO("/etc/" << wanted);
        CHECK(names.count(wanted) == 1);
    }
    for (const char* secret : {"shadow", "gshadow", "sudoers", "ssh"}) {
        const ProbeRun read = sandbox.probe({"read-file", std::string("/etc/") + secret});
        INFO("/etc/" << secret << "\n" << read.describe());
        CHECK(read.result() != "ok");
    }
    const ProbeRun passwd = sandbox.probe({"read-file", "/etc/passwd"});
    INFO(passwd.describe());
    REQUIRE(passwd.result() == "ok");
    // Synthesized: not the host's, which names the host's users.
    const std::string hostPasswd = readFileOrEmpty("/etc/passwd").substr(0, 4096);
    CHECK(probeEscape(hostPasswd) != passwd.report.get("content"));
    const ProbeRun hosts = sandbox.probe({"read-file", "/etc/hosts"});
    CHECK(hosts.report.get("content").find("localhost") != std::string::npos);
    const ProbeRun hostname = sandbox.probe({"read-file", "/etc/hostname"});
    CHECK(hostname.report.get("content").find("stockade") != std::string::npos);
    CHECK(sandbox.probe({"stat", "/etc/passwd"}).report.get("readonly") == "1");
}

TEST_CASE("G2: /proc is fresh, with Docker's masked and read-only paths", "[G2][proc]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    for (const std::string path :
         {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug",
          "/proc/latency_stats", "/proc/timer_stats", "/proc/acpi", "/proc/scsi", "/proc/asound"}) {
        checkMasked(sandbox, path);
    }
    for (const std::string path :
         {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"}) {
        if (!pathExists(path)) continue;
        const ProbeRun stat = sandbox.probe({"stat", path});
        INFO(path << "\n" << stat.describe());
        CHECK(stat.report.get("readonly") == "1");
    }
    // Writing a kernel setting with the value it already holds: harmless
    // even where the sandbox is broken, refused where it is not.
    const ProbeRun core = sandbox.probe({"rewrite-same", "/proc/sys/kernel/core_pattern"});
    INFO(core.describe());
    CHECK(core.report.get("stage") == "open");
    CHECK_THAT(core.result(), IsOneOf(kRefusedWrite));
    const ProbeRun sysrq = sandbox.probe({"open-write", "/proc/sysrq-trigger"});
    INFO(sysrq.describe());
    CHECK_THAT(sysrq.result(), IsOneOf({"EROFS", "EACCES", "ENOENT"}));
}

TEST_CASE("G2: /dev holds only null, zero, full, random, urandom, tty, shm, pts and ptmx",
          "[G2][dev]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const ProbeRun list = sandbox.probe({"list-dir", "/dev"});
    INFO(list.describe());
    REQUIRE(list.result() == "ok");
    const std::set<std::string> allowed = {"null",  "zero",   "full",  "random", "urandom",
                                           "tty",   "shm",    "pts",   "ptmx",   "fd",
                                           "stdin", "stdout", "stderr"};
    for (const std::string& entry : list.report.all("entry")) {
        INFO("/dev/" << entry);
        CHECK(allowed.count(entry) == 1);
    }
    const std::map<std::string, std::string> devices = {{"null", "1:3"},    {"zero", "1:5"},
                                                        {"full", "1:7"},    {"random", "1:8"},
                                                        {"urandom", "1:9"}, {"tty", "5:0"}};
    for (const auto& [name, rdev] : devices) {
        const ProbeRun stat = sandbox.probe({"stat", "/dev/" + name});
        INFO("/dev/" << name << "\n" << stat.describe());
        CHECK(stat.result() == "ok");
        CHECK(stat.report.get("type") == "char");
        CHECK(stat.report.get("rdev") == rdev);
    }
    CHECK(sandbox.probe({"open-write", "/dev/null"}).result() == "ok");
    CHECK(sandbox.probe({"stat", "/dev/shm"}).report.get("type") == "dir");
}

TEST_CASE("G2: the old root is detached, and every mount is one the sandbox means to have",
          "[G2][mount]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const ProbeRun run = sandbox.probe({"mounts"});
    INFO(run.describe());
    REQUIRE(run.exitCode() == 0);
    const std::vector<std::string> mounts = run.report.all("mount");
    REQUIRE_FALSE(mounts.empty());
    auto under = [](const std::string& path, const std::string& dir) {
        return path == dir || path.rfind(dir + "/", 0) == 0;
    };
    std::set<std::string> points;
    for (const std::string& line : mounts) {
        const std::string point = line.substr(0, line.find(' '));
        const std::string options = line.substr(line.rfind(' ') + 1);
        points.insert(point);
        INFO("mount " << line);
        const bool expected =
            point == "/" || point == "/probe" || under(point, "/usr") || under(point, "/bin") ||
            under(point, "/sbin") || point.rfind("/lib", 0) == 0 || under(point, "/etc") ||
            under(point, "/repo") || under(point, "/tmp") || under(point, "/var/tmp") ||
            under(point, "/proc") || under(point, "/dev");
        CHECK(expected);
        const bool mustBeReadOnly = point == "/" || point == "/probe" || under(point, "/usr") ||
                                    under(point, "/bin") || under(point, "/sbin") ||
                                    point.rfind("/lib", 0) == 0 || under(point, "/etc") ||
                                    under(point, "/repo/.git");
        if (mustBeReadOnly) CHECK(options.rfind("ro", 0) == 0);
    }
    for (const char* wanted : {"/", "/repo", "/repo/.git", "/tmp", "/var/tmp", "/proc", "/dev"}) {
        INFO("wanted mount " << wanted);
        CHECK(points.count(wanted) == 1);
    }
}
