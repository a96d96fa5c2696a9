// config.json's reader (oci/config.h), the ids a bundle asks for
// (oci/container_plan.h) and the state directory's id rule (oci/state.h):
// one fixture a real client could send, accepted whole, then one change to
// it per refusal, each of which must name its field.
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "oci/config.h"
#include "oci/container_plan.h"
#include "oci/groups.h"
#include "oci/resource_names.h"
#include "oci/state.h"
#include "seccomp/oci_import.h"

using namespace stockade::oci;
using nlohmann::json;

namespace {

std::filesystem::path sourceDir() {
    if (const char* dir = std::getenv("STOCKADE_SOURCE_DIR")) return dir;
    return std::filesystem::path(STOCKADE_SOURCE_DIR);
}

json fixture() {
    std::ifstream in(sourceDir() / "tests/fixtures/oci/accept.json");
    std::stringstream text;
    text << in.rdbuf();
    return json::parse(text.str());
}

std::string refusalOf(const std::function<void(json&)>& change) {
    json doc = fixture();
    change(doc);
    auto parsed = parseConfig(doc.dump());
    return parsed ? std::string() : parsed.error().describe();
}

}  // namespace

TEST_CASE("oci config: a real-world config.json is read whole", "[oci]") {
    json doc = fixture();
    auto parsed = parseConfig(doc.dump());
    REQUIRE(parsed);
    const Config& c = *parsed;
    CHECK(c.oci_version == "1.1.0");
    CHECK(c.args == std::vector<std::string>{"/bin/sh", "-c", "echo ok"});
    CHECK(c.env.size() == 2);
    CHECK(c.cwd == "/work");
    CHECK(c.uid == 1000);
    CHECK(c.gid == 1000);
    REQUIRE(c.rlimits.size() == 2);
    CHECK(c.rlimits[0].resource == RLIMIT_NOFILE);
    CHECK(c.rlimits[0].soft == 512);
    CHECK(c.rlimits[0].hard == 1024);
    CHECK(c.no_new_privileges);
    CHECK(c.root_path == "rootfs");
    CHECK(c.root_readonly);
    CHECK(c.hostname == "box");
    REQUIRE(c.mounts.size() == 7);
    CHECK(c.mounts[0].type == "proc");
    CHECK(c.mounts[0].flags == (MS_NOSUID | MS_NOEXEC | MS_NODEV));
    CHECK(c.mounts[1].data == "mode=755,size=65536k");
    CHECK(c.mounts[1].flags == (MS_NOSUID | MS_STRICTATIME));
    CHECK(c.mounts[2].data == "newinstance,ptmxmode=0666,mode=0620,gid=5");
    CHECK(c.mounts[4].flags & MS_RDONLY);
    CHECK(c.mounts[5].bind);
    CHECK(c.mounts[5].recursive);
    CHECK(c.mounts[5].flags & MS_RDONLY);
    // A mount with no type but a bind option (podman writes these).
    CHECK(c.mounts[6].type == "bind");
    CHECK_FALSE(c.mounts[6].recursive);
    CHECK(c.mounts[6].flags == (MS_NODEV | MS_NOEXEC));
    REQUIRE(c.findNamespace("network"));
    CHECK(c.findNamespace("network")->path == "/var/run/netns/cni-1234");
    CHECK(c.findNamespace("pid")->path.empty());
    // A pid namespace is joined by path (create judges the path itself).
    json joined = fixture();
    joined["linux"]["namespaces"][0]["path"] = "/proc/4242/ns/pid";
    auto with_pid = parseConfig(joined.dump());
    REQUIRE(with_pid);
    CHECK(with_pid->findNamespace("pid")->path == "/proc/4242/ns/pid");
    CHECK(with_pid->sharesPidNamespace());
    CHECK_FALSE(with_pid->callersPidNamespace());
    CHECK_FALSE(c.sharesPidNamespace());
    // None listed: the caller's (`--pid host`, a hostPID pod), built as one
    // joined (oci/pid_join.h).
    json host_pid = fixture();
    host_pid["linux"]["namespaces"].erase(0);
    auto without_pid = parseConfig(host_pid.dump());
    REQUIRE(without_pid);
    CHECK(without_pid->callersPidNamespace());
    CHECK(without_pid->sharesPidNamespace());
    CHECK_FALSE(c.findNamespace("time"));
    REQUIRE(c.uid_mappings.size() == 1);
    CHECK(c.uid_mappings[0].host_id == 100000);
    CHECK(c.masked_paths == std::vector<std::string>{"/proc/kcore", "/sys/firmware"});
    CHECK(c.readonly_paths == std::vector<std::string>{"/proc/sys"});
    REQUIRE(c.seccomp);
    CHECK(c.seccomp->rules.size() == 1);
    CHECK(c.annotations.at("org.example.key") == "value");
}

TEST_CASE("oci config: capabilities as masks by number", "[oci]") {
    json doc = fixture();
    doc["process"]["capabilities"] = {{"bounding", {"CAP_CHOWN", "CAP_KILL", "CAP_NET_RAW"}},
                                      {"permitted", {"CAP_KILL", "CAP_NET_RAW"}},
                                      {"inheritable", {"CAP_NET_RAW"}},
                                      {"effective", {"CAP_KILL"}},
                                      {"ambient", {"CAP_NET_RAW"}}};
    auto parsed = parseConfig(doc.dump());
    REQUIRE(parsed);
    const auto& c = parsed->capabilities;
    CHECK(c.bounding == ((1ull << 0) | (1ull << 5) | (1ull << 13)));
    CHECK(c.permitted == ((1ull << 5) | (1ull << 13)));
    CHECK(c.effective == (1ull << 5));
    CHECK(c.inheritable == (1ull << 13));
    CHECK(c.ambient == (1ull << 13));
    CHECK(capabilityNumber("CAP_CHECKPOINT_RESTORE") == 40);
    CHECK(capabilityNumber("CAP_SYS_ADMIN") == 21);
    CHECK(capabilityNumber("SYS_ADMIN") == -1);
    CHECK(capabilityNames().size() == 41);
}

TEST_CASE("oci config: namespaced sysctls are read", "[oci]") {
    json doc = fixture();
    // The fixture joins a network namespace by path: net.* needs a new one.
    for (auto& ns : doc["linux"]["namespaces"]) ns.erase("path");
    doc["linux"]["sysctl"] = {{"net.ipv4.ping_group_range", "0 0"}, {"kernel.shmmni", "100"}};
    auto parsed = parseConfig(doc.dump());
    REQUIRE(parsed);
    CHECK(parsed->sysctl.at("net.ipv4.ping_group_range") == "0 0");
    CHECK(parsed->sysctl.at("kernel.shmmni") == "100");
}

TEST_CASE("oci config: podman's umask, cgroup mount and a joined network's sysctl are read",
          "[oci]") {
    json doc = fixture();
    doc["process"]["user"]["umask"] = 18;
    doc["mounts"].push_back(
        {{"destination", "/sys/fs/cgroup"},
         {"type", "cgroup"},
         {"source", "cgroup"},
         {"options", {"rprivate", "nosuid", "noexec", "nodev", "relatime", "ro"}}});
    // The fixture joins a network namespace by path; create judges that it
    // is not the host's and writes the sysctl there.
    doc["linux"]["sysctl"] = {{"net.ipv4.ping_group_range", "0 0"}};
    auto parsed = parseConfig(doc.dump());
    REQUIRE(parsed);
    CHECK(parsed->umask == 022);
    CHECK(!parsed->oom_score_adj);
    CHECK(parsed->mounts.back().type == "cgroup");
    CHECK((parsed->mounts.back().flags & MS_RDONLY) != 0);
    CHECK(parsed->sysctl.at("net.ipv4.ping_group_range") == "0 0");
}

TEST_CASE("oci config: memory and pids limits and the cgroup path are read", "[oci]") {
    json doc = fixture();
    doc["linux"]["cgroupsPath"] = "/stockade-test/c1";
    doc["linux"]["resources"]["memory"] = {{"limit", 67108864}, {"swap", nullptr}};
    doc["linux"]["resources"]["pids"] = {{"limit", 20}};
    auto parsed = parseConfig(doc.dump());
    REQUIRE(parsed);
    CHECK(parsed->cgroups_path == "/stockade-test/c1");
    CHECK(parsed->resources.memory_limit == 67108864);
    CHECK(parsed->resources.pids_limit == 20);
}

TEST_CASE("oci config: the execution domain and the cpuset lists are read", "[oci]") {
    json doc = fixture();
    doc["linux"]["personality"] = {{"domain", "LINUX32"}, {"flags", json::array()}};
    // CPU 0 and memory node 0 are online on every host.
    doc["linux"]["resources"]["cpu"] = {{"cpus", "0"}, {"mems", "0-0"}};
    auto parsed = parseConfig(doc.dump());
    REQUIRE(parsed);
    CHECK(parsed->personality == 0x0008ul);
    CHECK(parsed->resources.cpuset_cpus == "0");
    CHECK(parsed->resources.cpuset_mems == "0-0");
    CHECK(parsed->resources.any());
    doc["linux"]["personality"] = {{"domain", "LINUX"}};
    doc["linux"]["resources"]["cpu"] = {{"cpus", ""}, {"mems", ""}};
    parsed = parseConfig(doc.dump());
    REQUIRE(parsed);
    CHECK(parsed->personality == 0ul);
    CHECK_FALSE(parsed->resources.any());
    doc["linux"].erase("personality");
    parsed = parseConfig(doc.dump());
    REQUIRE(parsed);
    CHECK_FALSE(parsed->personality);
}

TEST_CASE("oci update: linux.resources alone, read as config.json's and refused by name", "[oci]") {
    auto parsed = parseResources(
        R"({"memory": {"limit": 134217728, "swap": 268435456}, "pids": {"limit": 50},
            "cpu": {"shares": 512, "quota": 50000, "period": 100000, "cpus": ""},
            "devices": [{"allow": false, "access": "rwm"}], "hugepageLimits": []})");
    REQUIRE(parsed);
    CHECK(parsed->memory_limit == 134217728);
    CHECK(parsed->swap_limit == 268435456);
    CHECK(parsed->pids_limit == 50);
    CHECK(parsed->cpu_shares == 512u);
    CHECK(parsed->cpu_quota == 50000);
    CHECK(parsed->cpu_period == 100000u);
    auto zero = parseResources(R"({"cpu": {"shares": 0, "quota": 0, "period": 0}})");
    REQUIRE(zero);
    CHECK_FALSE(zero->any());
    auto tuning = parseResources(
        R"({"memory": {"reservation": 67108864, "swappiness": 0, "disableOOMKiller": true}})");
    REQUIRE(tuning);
    CHECK(tuning->memory_reservation == 67108864);
    CHECK(tuning->swappiness == 0u);
    CHECK(tuning->disable_oom_killer);
    CHECK(tuning->any());
    auto unset = parseResources(R"({"memory": {"reservation": 0, "disableOOMKiller": false}})");
    REQUIRE(unset);
    CHECK_FALSE(unset->any());
    for (const char* bad :
         {R"({"memory": {"kernel": 1}})", R"({"cpu": {"cpus": "0-"}})",
          R"({"memory": {"swappiness": 101}})", R"({"memory": {"disableOOMKiller": 1}})",
          R"({"unified": {"cgroup.procs": "1"}})", R"({"cpu": {"period": 10}})",
          R"({"unified": {"../memory.max": "1"}})", R"({"unified": {"memory.high": 1}})",
          R"({"hugepageLimits": [{"pageSize": "2048KB", "limit": 0}]})",
          R"({"hugepageLimits": [{"pageSize": "3MB", "limit": 0}]})",
          R"({"hugepageLimits": [{"pageSize": "2MB"}]})",
          R"({"hugepageLimits": [{"pageSize": "2MB", "limit": -1}]})",
          R"({"hugepageLimits": [{"pageSize": "2MB", "limit": 0},
                                                   {"pageSize": "2MB", "limit": 1}]})",
          R"({"hugepageLimits": {"pageSize": "2MB"}})", R"({"pids": 5})", "[1]", "{"}) {
        auto r = parseResources(bad);
        CHECK_FALSE(r);
        if (!r) CHECK(r.error().describe().starts_with("linux.resources"));
    }
}

TEST_CASE("oci config: runtime-spec 1.3 is read (containerd 2.2 writes it)", "[oci]") {
    json doc = fixture();
    doc["ociVersion"] = "1.3.0";
    auto parsed = parseConfig(doc.dump());
    INFO((parsed ? std::string() : parsed.error().describe()));
    REQUIRE(parsed);
    CHECK(parsed->oci_version == "1.3.0");
    doc["ociVersion"] = "1.4.0";
    CHECK_FALSE(parseConfig(doc.dump()));
}

TEST_CASE("oci config: a spec without seccomp runs without a filter, as runc", "[oci]") {
    json doc = fixture();
    doc["linux"].erase("seccomp");
    auto parsed = parseConfig(doc.dump());
    REQUIRE(parsed);
    CHECK_FALSE(parsed->seccomp);
}

TEST_CASE("oci config: what stockade cannot honour is refused, naming the field", "[oci]") {
    struct Case {
        const char* field;
        std::function<void(json&)> change;
    };
    const Case cases[] = {
        {"ociVersion", [](json& d) { d["ociVersion"] = "2.0.0"; }},
        {"ociVersion", [](json& d) { d.erase("ociVersion"); }},
        {"root.path", [](json& d) { d.erase("root"); }},
        {"process.terminal", [](json& d) { d["process"]["terminal"] = "yes"; }},
        {"process.consoleSize.height",
         [](json& d) {
             d["process"]["terminal"] = true;
             d["process"]["consoleSize"] = {{"height", 70000}, {"width", 80}};
         }},
        {"process.args", [](json& d) { d["process"]["args"] = json::array(); }},
        {"process.cwd", [](json& d) { d["process"]["cwd"] = "work"; }},
        {"process.cwd", [](json& d) { d["process"]["cwd"] = "/a/../b"; }},
        {"process.env", [](json& d) { d["process"]["env"] = {"NOEQUALS"}; }},
        {"process.user.uid", [](json& d) { d["process"]["user"]["uid"] = -1; }},
        {"process.user.additionalGids",
         [](json& d) { d["process"]["user"]["additionalGids"] = json::parse("[-1]"); }},
        {"process.user.additionalGids",
         [](json& d) { d["process"]["user"]["additionalGids"] = "10"; }},
        {"process.user.additionalGids",
         [](json& d) { d["process"]["user"]["additionalGids"] = json::parse("[4294967295]"); }},
        {"process.user.additionalGids",
         [](json& d) {
             d["process"]["user"]["additionalGids"] = json::array();
             for (int i = 0; i < 65537; ++i) d["process"]["user"]["additionalGids"].push_back(5);
         }},
        {"process.user.umask", [](json& d) { d["process"]["user"]["umask"] = 01000; }},
        {"process.capabilities.bounding",
         [](json& d) { d["process"]["capabilities"]["bounding"] = {"CAP_BOGUS"}; }},
        {"process.capabilities.effective",
         [](json& d) { d["process"]["capabilities"]["effective"] = {"CAP_KILL"}; }},
        {"process.capabilities.permitted",
         [](json& d) { d["process"]["capabilities"]["permitted"] = {"CAP_KILL"}; }},
        {"process.rlimits[0].type",
         [](json& d) { d["process"]["rlimits"][0]["type"] = "RLIMIT_BOGUS"; }},
        {"process.rlimits[1].type",
         [](json& d) { d["process"]["rlimits"][1]["type"] = "RLIMIT_NOFILE"; }},
        {"process.rlimits[0]", [](json& d) { d["process"]["rlimits"][0]["soft"] = 4096; }},
        {"process.apparmorProfile",
         [](json& d) { d["process"]["apparmorProfile"] = "containers-default"; }},
        {"process.selinuxLabel", [](json& d) { d["process"]["selinuxLabel"] = "system_u"; }},
        {"process.oomScoreAdj", [](json& d) { d["process"]["oomScoreAdj"] = 1001; }},
        {"mounts[5] (/data).options",
         [](json& d) { d["mounts"][5]["options"].push_back("tmpcopyup"); }},
        {"mounts[5] (/data).options",
         [](json& d) { d["mounts"][5]["options"].push_back("rshared"); }},
        // A bind's slave propagation is judged by create (taken for a file);
        // any other mount's is refused here.
        {"mounts[0] (/proc).options",
         [](json& d) { d["mounts"][0]["options"].push_back("rslave"); }},
        // Reaches the kernel as host root's when a pid namespace is joined.
        {"mounts[0] (/proc).options",
         [](json& d) { d["mounts"][0]["options"].push_back("pidns=/dev/null"); }},
        {"mounts[5] (/data).options",
         [](json& d) { d["mounts"][5]["options"].push_back("idmap"); }},
        {"mounts[5] (/data).options",
         [](json& d) { d["mounts"][5]["options"].push_back("idmap=uids=0-1000-10"); }},
        {"mounts[0] (/proc).options",
         [](json& d) {
             d["mounts"][0] = {{"destination", "/proc"},
                               {"type", "cgroup"},
                               {"source", "cgroup"},
                               {"options", {"memory"}}};
         }},
        {"mounts[0] (/proc).type", [](json& d) { d["mounts"][0]["type"] = "overlay"; }},
        {"mounts[0].destination", [](json& d) { d["mounts"][0]["destination"] = "proc"; }},
        {"mounts[5] (/data).source", [](json& d) { d["mounts"][5].erase("source"); }},
        {"linux.namespaces[7].type",
         [](json& d) {
             d["linux"]["namespaces"].push_back({{"type", "time"}});
         }},
        {"linux.namespaces[7].type",
         [](json& d) {
             d["linux"]["namespaces"].push_back({{"type", "pid"}});
         }},
        {"linux.namespaces[0].path",
         [](json& d) { d["linux"]["namespaces"][0]["path"] = "proc/1/ns/pid"; }},
        {"linux.namespaces[1].path",
         [](json& d) { d["linux"]["namespaces"][1]["path"] = "/proc/1/ns/mnt"; }},
        {"linux.namespaces[5].path",
         [](json& d) { d["linux"]["namespaces"][5]["path"] = "/proc/1/ns/cgroup"; }},
        {"linux.namespaces[6].path",
         [](json& d) { d["linux"]["namespaces"][6]["path"] = "/proc/1/ns/user"; }},
        // The mount namespace's entry missing (a pid one missing is the
        // caller's: read, below).
        {"linux.namespaces", [](json& d) { d["linux"]["namespaces"].erase(1); }},
        {"linux.uidMappings[0].size", [](json& d) { d["linux"]["uidMappings"][0]["size"] = 0; }},
        {"linux.gidMappings[0].size",
         [](json& d) {
             // Past the last id: it would wrap (host 4294967000 + 65536).
             d["linux"]["gidMappings"][0]["hostID"] = 4294967000u;
             d["linux"]["gidMappings"][0]["size"] = 65536;
         }},
        {"linux.sysctl.net.ipv4.ip_forward",
         [](json& d) {
             json kept = json::array();
             for (auto& ns : d["linux"]["namespaces"])
                 if (ns["type"] != "network") kept.push_back(ns);
             d["linux"]["namespaces"] = kept;
             d["linux"]["sysctl"] = {{"net.ipv4.ip_forward", "1"}};
         }},
        {"linux.sysctl.kernel.domainname",
         [](json& d) {
             d["linux"]["sysctl"] = {{"kernel.domainname", "x"}};
         }},
        {"linux.sysctl.vm.swappiness",
         [](json& d) {
             d["linux"]["sysctl"] = {{"vm.swappiness", "1"}};
         }},
        {"linux.sysctl.net/../x",
         [](json& d) {
             d["linux"]["sysctl"] = {{"net/../x", "1"}};
         }},
        {"linux.sysctl.kernel.shmmax",
         [](json& d) {
             d["linux"]["sysctl"] = {{"kernel.shmmax", "1"}};
             auto& ns = d["linux"]["namespaces"];
             for (size_t i = 0; i < ns.size(); ++i)
                 if (ns[i]["type"] == "ipc") ns.erase(i);
         }},
        {"linux.devices[0].type",
         [](json& d) {
             d["linux"]["devices"] = {
                 {{"path", "/dev/pipe"}, {"type", "p"}, {"major", 0}, {"minor", 0}}};
         }},
        {"linux.devices[1].path",
         [](json& d) {
             d["linux"]["devices"] = {
                 {{"path", "/dev/fuse"}, {"type", "c"}, {"major", 10}, {"minor", 229}},
                 {{"path", "/dev/./fuse/"}, {"type", "c"}, {"major", 10}, {"minor", 229}}};
         }},
        {"linux.resources.devices[1].access",
         [](json& d) {
             d["linux"]["resources"]["devices"] = {{{"allow", false}, {"access", "rwm"}},
                                                   {{"allow", true}, {"access", "rx"}}};
         }},
        {"linux.resources.devices[0].major",
         [](json& d) {
             d["linux"]["resources"]["devices"] = {
                 {{"allow", true}, {"type", "c"}, {"major", -2}, {"access", "r"}}};
         }},
        {"linux.resources.devices[0].minor",
         [](json& d) {
             d["linux"]["resources"]["devices"] = {
                 {{"allow", true}, {"type", "c"}, {"minor", 1048576}, {"access", "r"}}};
         }},
        {"linux.resources.devices[0].major",
         [](json& d) {
             // cgroup v1 reads 4294967295 as any device: refused.
             d["linux"]["resources"]["devices"] = {
                 {{"allow", true}, {"type", "c"}, {"major", 4294967295LL}, {"access", "r"}}};
         }},
        {"linux.devices[0].path",
         [](json& d) {
             d["linux"]["devices"] = {
                 {{"path", "dev/fuse"}, {"type", "c"}, {"major", 10}, {"minor", 229}}};
         }},
        {"linux.devices[0]",
         [](json& d) {
             d["linux"]["devices"] = {{{"path", "/dev/fuse"}, {"type", "c"}}};
         }},
        {"linux.resources.memory.swap",
         [](json& d) {
             d["linux"]["resources"]["memory"] = {{"limit", 1 << 20}, {"swap", 1 << 19}};
         }},
        {"linux.resources.pids.limit",
         [](json& d) {
             d["linux"]["resources"]["pids"] = {{"limit", "ten"}};
         }},
        {"linux.resources.cpu.realtimeRuntime",
         [](json& d) {
             d["linux"]["resources"]["cpu"] = {{"shares", 1024}, {"realtimeRuntime", 950000}};
         }},
        {"linux.resources.blockIO",
         [](json& d) {
             d["linux"]["resources"]["blockIO"] = {{"weight", 10}};
         }},
        {"linux.cgroupsPath", [](json& d) { d["linux"]["cgroupsPath"] = 7; }},
        {"linux.rootfsPropagation", [](json& d) { d["linux"]["rootfsPropagation"] = "shared"; }},
        {"linux.seccomp",
         [](json& d) { d["linux"]["seccomp"]["syscalls"][0]["action"] = "SCMP_ACT_NOTIFY"; }},
        {"linux.seccomp", [](json& d) { d["linux"]["seccomp"]["listenerPath"] = "/run/l.sock"; }},
        {"linux.seccomp", [](json& d) { d["linux"]["seccomp"]["defaultAction"] = "BOGUS"; }},
        {"linux.personality.domain",
         [](json& d) {
             d["linux"]["personality"] = {{"domain", "LINUX64"}};
         }},
        {"linux.personality.domain",
         [](json& d) {
             d["linux"]["personality"] = {{"flags", json::array()}};
         }},
        {"linux.personality.flags",
         [](json& d) {
             d["linux"]["personality"] = {{"domain", "LINUX32"}, {"flags", {"ADDR_NO_RANDOMIZE"}}};
         }},
        {"linux.personality.flags",
         [](json& d) {
             d["linux"]["personality"] = {{"domain", "LINUX"}, {"flags", {"READ_IMPLIES_EXEC"}}};
         }},
        {"linux.personality", [](json& d) { d["linux"]["personality"] = "LINUX32"; }},
        {"linux.resources.cpu.cpus",
         [](json& d) {
             d["linux"]["resources"]["cpu"] = {{"cpus", "0-"}};
         }},
        {"linux.resources.cpu.cpus",
         [](json& d) {
             d["linux"]["resources"]["cpu"] = {{"cpus", "a"}};
         }},
        {"linux.resources.cpu.cpus",
         [](json& d) {
             d["linux"]["resources"]["cpu"] = {{"cpus", "1-0"}};
         }},
        {"linux.resources.cpu.cpus",
         [](json& d) {
             d["linux"]["resources"]["cpu"] = {{"cpus", "0,,1"}};
         }},
        {"linux.resources.cpu.cpus",
         [](json& d) {
             d["linux"]["resources"]["cpu"] = {{"cpus", "8191"}};
         }},
        {"linux.resources.cpu.cpus",
         [](json& d) {
             d["linux"]["resources"]["cpu"] = {{"cpus", "0-99999999"}};
         }},
        {"linux.resources.cpu.cpus",
         [](json& d) {
             d["linux"]["resources"]["cpu"] = {{"cpus", 0}};
         }},
        {"linux.resources.cpu.mems",
         [](json& d) {
             d["linux"]["resources"]["cpu"] = {{"mems", "0-"}};
         }},
        {"linux.resources.cpu.mems",
         [](json& d) {
             d["linux"]["resources"]["cpu"] = {{"mems", "4000"}};
         }},
        {"linux.intelRdt",
         [](json& d) {
             d["linux"]["intelRdt"] = {{"closID", "a"}};
         }},
        {"linux.netDevices",
         [](json& d) {
             d["ociVersion"] = "1.3.0";
             d["linux"]["netDevices"] = {{"eth1", json::object()}};
         }},
        {"hooks.createContainer[0].path",
         [](json& d) {
             d["hooks"] = {{"createContainer", {{{"path", "bin/true"}}}}};
         }},
        {"hooks.startContainer[0].timeout",
         [](json& d) {
             d["hooks"] = {{"startContainer", {{{"path", "/bin/true"}, {"timeout", 0}}}}};
         }},
        {"hooks.onReboot",
         [](json& d) {
             d["hooks"] = {{"onReboot", {{{"path", "/bin/true"}}}}};
         }},
        {"hooks.prestart[0].path",
         [](json& d) {
             d["hooks"] = {{"prestart", {{{"path", "bin/true"}}}}};
         }},
        {"hooks.poststop[0].path",
         [](json& d) {
             d["hooks"] = {{"poststop", {{{"args", {"true"}}}}}};
         }},
        {"hooks.poststart[0].timeout",
         [](json& d) {
             d["hooks"] = {{"poststart", {{{"path", "/bin/true"}, {"timeout", 0}}}}};
         }},
        {"hooks.createRuntime[0].timeout",
         [](json& d) {
             d["hooks"] = {{"createRuntime", {{{"path", "/bin/true"}, {"timeout", -3}}}}};
         }},
        {"hooks.prestart[0].env",
         [](json& d) {
             d["hooks"] = {{"prestart", {{{"path", "/bin/true"}, {"env", "A=1"}}}}};
         }},
        {"hostname",
         [](json& d) {
             auto& ns = d["linux"]["namespaces"];
             for (size_t i = 0; i < ns.size(); ++i)
                 if (ns[i]["type"] == "uts") ns.erase(i);
         }},
        {"domainname",
         [](json& d) {
             d["domainname"] = "example";
             auto& ns = d["linux"]["namespaces"];
             for (size_t i = 0; i < ns.size(); ++i)
                 if (ns[i]["type"] == "uts") ns.erase(i);
             d.erase("hostname");
         }},
        {"linux", [](json& d) { d.erase("linux"); }},
    };
    for (const Case& c : cases) {
        std::string message = refusalOf(c.change);
        INFO("expected a refusal naming " << c.field << ", got: " << message);
        CHECK(message.starts_with(std::string("config.json: ") + c.field + ":"));
    }
}

TEST_CASE("oci config: the hooks run on the host are read as written", "[oci]") {
    json d = json::parse(defaultConfigJson(false));
    d["hooks"] = {{"prestart", {{{"path", "/bin/a"}, {"args", {"a0", "a1"}}, {"env", {"K=v"}}}}},
                  {"createRuntime", {{{"path", "/bin/b"}, {"timeout", 5}}}},
                  {"poststart", json::array()},
                  {"poststop", {{{"path", "/bin/c"}}, {{"path", "/bin/d"}}}}};
    auto parsed = parseConfig(d.dump());
    REQUIRE(parsed);
    const Hooks& h = parsed->hooks;
    REQUIRE(h.prestart.size() == 1);
    CHECK(h.prestart[0].path == "/bin/a");
    CHECK(h.prestart[0].args == std::vector<std::string>{"a0", "a1"});
    CHECK(h.prestart[0].env == std::vector<std::string>{"K=v"});
    CHECK_FALSE(h.prestart[0].timeout);
    REQUIRE(h.create_runtime.size() == 1);
    CHECK(h.create_runtime[0].timeout == 5);
    CHECK(h.poststart.empty());
    REQUIRE(h.poststop.size() == 2);
    CHECK(h.poststop[1].path == "/bin/d");
    // The record keeps the two run after create, and reads them back.
    auto back = hooksFromJson(hooksJson(h));
    REQUIRE(back);
    CHECK(back->prestart.empty());
    REQUIRE(back->poststop.size() == 2);
    CHECK(back->poststop[0].path == "/bin/c");
    CHECK_FALSE(hooksFromJson(R"({"poststop":[{"path":"rel","args":[],"env":[]}]})"));
}

TEST_CASE("oci config: malformed input is refused, never read in part", "[oci]") {
    for (const char* text : {"", "{", "[]", "{\"ociVersion\": 1}", "null"}) {
        auto parsed = parseConfig(text);
        INFO(text);
        REQUIRE_FALSE(parsed);
        CHECK(parsed.error().describe().starts_with("config.json: "));
    }
    CHECK_FALSE(parseConfig(std::string(kMaxConfigBytes + 1, ' ')));
}

TEST_CASE("oci config: the default spec is one this reader accepts", "[oci]") {
    for (bool rootless : {false, true}) {
        auto parsed = parseConfig(defaultConfigJson(rootless));
        REQUIRE(parsed);
        CHECK(parsed->args == std::vector<std::string>{"sh"});
        CHECK(parsed->root_readonly);
        bool devpts_gid = parsed->mounts[2].data.find("gid=5") != std::string::npos;
        CHECK(devpts_gid == !rootless);
    }
}

TEST_CASE("oci ids: mappings stockade writes, and never host root", "[oci]") {
    Config c;
    c.uid = 0;
    c.gid = 0;
    // No mappings: rootless the caller's own ids, as root the leased block.
    auto rootless = idsFor(c, false, 1000, 1001, 0, 0);
    REQUIRE(rootless);
    CHECK(rootless->host_uid == 1000);
    CHECK(rootless->host_gid == 1001);
    CHECK(rootless->count == 1);
    auto leased = idsFor(c, true, 0, 0, 0x78000000, 65536);
    REQUIRE(leased);
    CHECK(leased->host_uid == 0x78000000);
    CHECK(leased->count == 65536);
    // The bundle's block, as root.
    c.uid_mappings = {{0, 100000, 65536}};
    c.gid_mappings = {{0, 100000, 65536}};
    auto block = idsFor(c, true, 0, 0, 0, 0);
    REQUIRE(block);
    CHECK(block->host_uid == 100000);
    CHECK(block->count == 65536);
    // Rootless, only the caller's own id.
    CHECK_FALSE(idsFor(c, false, 1000, 1000, 0, 0));
    c.uid_mappings = {{0, 1000, 1}};
    c.gid_mappings = {{0, 1000, 1}};
    CHECK(idsFor(c, false, 1000, 1000, 0, 0));
    // Host root is never mapped in.
    c.uid_mappings = {{0, 0, 65536}};
    c.gid_mappings = {{0, 0, 65536}};
    auto host_root = idsFor(c, true, 0, 0, 0, 0);
    REQUIRE_FALSE(host_root);
    CHECK(host_root.error().describe().find("host root") != std::string::npos);
    // The process's own id must be mapped; uid without gid mappings refused.
    c.uid = 70000;
    c.uid_mappings = {{0, 100000, 65536}};
    c.gid_mappings = {{0, 100000, 65536}};
    CHECK_FALSE(idsFor(c, true, 0, 0, 0, 0));
    c.uid = 0;
    c.gid_mappings.clear();
    CHECK_FALSE(idsFor(c, true, 0, 0, 0, 0));
}

TEST_CASE("oci config: ambient capabilities not also inheritable are left out, as runc does",
          "[oci]") {
    // runc spec's own default: ambient as permitted, no inheritable set.
    json doc = json::parse(defaultConfigJson(false));
    for (const char* set : {"bounding", "permitted", "effective", "ambient"})
        doc["process"]["capabilities"][set] = {"CAP_KILL", "CAP_NET_RAW"};
    doc["process"]["capabilities"]["inheritable"] = {"CAP_NET_RAW"};
    auto parsed = parseConfig(doc.dump());
    REQUIRE(parsed);
    CHECK(parsed->capabilities.ambient == (1ull << 13));         // CAP_NET_RAW
    CHECK(parsed->capabilities.ambient_dropped == (1ull << 5));  // CAP_KILL
}

TEST_CASE("oci kill: signals by number or name, in range", "[oci]") {
    CHECK(*parseSignal("9") == SIGKILL);
    CHECK(*parseSignal("15") == SIGTERM);
    CHECK(*parseSignal("KILL") == SIGKILL);
    CHECK(*parseSignal("SIGTERM") == SIGTERM);
    CHECK(*parseSignal("SIGWINCH") == SIGWINCH);
    CHECK(*parseSignal("0") == 0);  // runc's "is it there"
    // As runc takes them: any case, Go's Atoi's '+', moby's names.
    CHECK(*parseSignal("usr1") == SIGUSR1);
    CHECK(*parseSignal("sigusr1") == SIGUSR1);
    CHECK(*parseSignal("Term") == SIGTERM);
    CHECK(*parseSignal("+9") == SIGKILL);
    CHECK(*parseSignal("IOT") == SIGABRT);
    CHECK(*parseSignal("CLD") == SIGCHLD);
    CHECK(*parseSignal("RTMIN") == SIGRTMIN);
    CHECK(*parseSignal("SIGRTMIN+3") == SIGRTMIN + 3);
    CHECK(*parseSignal("rtmax-2") == SIGRTMAX - 2);
    CHECK(*parseSignal("RTMAX") == SIGRTMAX);
    for (const char* bad : {"-1", "65", "99999999999", "FOO", "SIGFOO", "", "9x", "+", "++9",
                            "RTMIN+16", "RTMIN-1", "RTMAX-15", "RTMAX+1", "RTMIN+", "RTMIN+x"}) {
        INFO(bad);
        CHECK_FALSE(parseSignal(bad));
    }
}

TEST_CASE("oci state: a container id names one directory beneath the root", "[oci]") {
    CHECK(validateId("abc-123_x.y"));
    CHECK(validateId(std::string(kMaxIdLength, 'a')));
    for (const std::string& bad : {std::string(), std::string("."), std::string(".."),
                                   std::string("a/b"), std::string("../x"), std::string("a\nb"),
                                   std::string(kMaxIdLength + 1, 'a'), std::string("a\0b", 3)}) {
        INFO(bad);
        CHECK_FALSE(validateId(bad));
    }
}

TEST_CASE("oci config: a second unconditional seccomp action keeps the first, as libseccomp",
          "[oci]") {
    // podman's default profile: setns allowed by one rule, denied by a later one.
    json doc = fixture();
    doc["linux"]["seccomp"] = {
        {"defaultAction", "SCMP_ACT_ERRNO"},
        {"architectures", {"SCMP_ARCH_X86_64"}},
        {"syscalls",
         {{{"names", {"read", "write", "setns"}}, {"action", "SCMP_ACT_ALLOW"}},
          {{"names", {"setns", "bpf"}}, {"action", "SCMP_ACT_ERRNO"}, {"errnoRet", 1}}}}};
    auto parsed = parseConfig(doc.dump());
    REQUIRE(parsed);
    CHECK(parsed->seccomp_dropped == std::vector<std::string>{"setns"});
    REQUIRE(parsed->seccomp->rules.size() == 2);
    CHECK(parsed->seccomp->rules[1].names == std::vector<std::string>{"bpf"});
    // The same pair in a stockade profile's import is still refused.
    auto strict = stockade::seccomp::importOciSeccomp(doc["linux"]["seccomp"].dump());
    CHECK_FALSE(strict);
}

TEST_CASE("oci ping_group_range: the container's gids written as the host's", "[oci]") {
    // A leased block of 65536 from host id 200000, container gid 0 its first.
    stockade::ns::IdMapping block{0, 200000, 0, 200000, 65536};
    CHECK(pingGroupRangeOnHost("0 0", block) == "200000 200000");
    CHECK(pingGroupRangeOnHost("0 2147483647", block) == "200000 265535");
    CHECK(pingGroupRangeOnHost("70000 80000", block) == "1 0");
    // One id (rootless): only that gid.
    stockade::ns::IdMapping one{0, 1000, 0, 1000, 1};
    CHECK(pingGroupRangeOnHost("0 0", one) == "1000 1000");
    CHECK(pingGroupRangeOnHost("5 9", one) == "1 0");
    CHECK(pingGroupRangeOnHost("not numbers", one) == "not numbers");
    // Several ranges (podman's keep-id for uid 1001): the one holding the
    // first gid asked, as far as it goes.
    stockade::ns::IdMapping kept{1001, 0, 1001, 0, 1};
    kept.gid_ranges = {{0, 1, 1001}, {1001, 0, 1}, {1002, 1002, 64535}};
    kept.uid_ranges = kept.gid_ranges;
    CHECK(pingGroupRangeOnHost("0 0", kept) == "1 1");
    CHECK(pingGroupRangeOnHost("1001 2147483647", kept) == "0 0");
    CHECK(pingGroupRangeOnHost("70000 80000", kept) == "1 0");
}

TEST_CASE("oci ids: several ranges are taken as given, and only where they can be written",
          "[oci]") {
    stockade::ns::IdMapping kept{1001, 0, 1001, 0, 1};
    kept.uid_ranges = {{0, 1, 1001}, {1001, 0, 1}, {1002, 1002, 64535}};
    kept.gid_ranges = kept.uid_ranges;
    CHECK(stockade::ns::mapsInsideUid(kept, 0));
    CHECK(stockade::ns::mapsInsideUid(kept, 65536));
    CHECK_FALSE(stockade::ns::mapsInsideUid(kept, 65537));
    CHECK(*stockade::ns::outsideIdOf(kept.uid_ranges, 1001) == 0);
    CHECK(*stockade::ns::outsideIdOf(kept.uid_ranges, 5) == 6);
    CHECK(kept.callersIds());
    const auto extents = gidExtentsOf(kept);
    REQUIRE(extents.size() == 3);
    CHECK((extents[1].container_id == 1001 && extents[1].host_id == 0 && extents[1].size == 1));
    // As root, or from a caller whose namespace maps one id (this test's:
    // the host's own, not a namespace of several), refused by name.
    Config c;
    c.uid = 1001;
    c.gid = 1001;
    c.uid_mappings = {{0, 1, 1001}, {1001, 0, 1}, {1002, 1002, 64535}};
    c.gid_mappings = c.uid_mappings;
    auto as_root = idsFor(c, true, 0, 0, 0, 0);
    REQUIRE_FALSE(as_root);
    CHECK(as_root.error().describe().find("more than one range is not supported yet as root") !=
          std::string::npos);
    auto narrow = idsFor(c, false, 1000, 1000, 0, 0);
    REQUIRE_FALSE(narrow);
    CHECK(narrow.error().describe().find("this caller maps one") != std::string::npos);

    // From podman's namespace (its own map: the user at 0, 65536
    // subordinate ids at 1): keep-id's three ranges, as given.
    const CallerRanges podman = {{0, 1}, {1, 65536}};
    auto taken = idsFromRanges(c, podman, podman);
    REQUIRE(taken);
    CHECK(taken->host_uid == 0);
    CHECK(taken->host_gid == 0);
    CHECK(taken->uid_ranges.size() == 3);
    CHECK(taken->callersIds());
    auto refused = [&](std::vector<IdMap> uids, const std::string& said) {
        Config bad = c;
        bad.uid_mappings = std::move(uids);
        auto r = idsFromRanges(bad, podman, podman);
        INFO(said);
        REQUIRE_FALSE(r);
        CHECK(r.error().describe().find(said) != std::string::npos);
    };
    // Across the caller's two ranges (0 is the user, 1.. the block): the
    // kernel would refuse it whole.
    refused({{0, 0, 2}, {1001, 2, 1}}, "uid range 0 (0 0 2): not within one range");
    refused({{0, 1, 65537}}, "not within one range");  // one past the block
    refused({{0, 1, 1001}, {1000, 0, 1}}, "uid range 1 (1000 0 1): overlaps range 0 inside");
    refused({{0, 1, 1001}, {1001, 1001, 1}}, "overlaps range 0 in the caller's namespace");
    refused({{0, 1, 0}, {1001, 0, 1}}, "empty, or past the last id");
    refused({{0, 1, 1000}, {1002, 0, 1}}, "process.user.uid 1001 is not mapped");
    std::vector<IdMap> many;
    for (uint32_t i = 0; i < 341; ++i) many.push_back({i, i + 1, 1});
    refused(many, "more than 340 uid ranges");
}

TEST_CASE("oci config: hugepageLimits and unified are read as kubelet sends them", "[oci]") {
    // Every x86-64 kernel with huge pages has 2 MiB ones; kubelet asks a
    // limit of 0 for each size the node has.
    struct stat st {};
    REQUIRE(stat("/sys/kernel/mm/hugepages/hugepages-2048kB", &st) == 0);
    auto parsed = parseResources(
        R"({"hugepageLimits": [{"pageSize": "2MB", "limit": 0}],
            "unified": {"memory.oom.group": "1", "memory.high": "max",
                        "cgroup.max.descendants": "10"}})");
    REQUIRE(parsed);
    CHECK(parsed->any());
    REQUIRE(parsed->hugepage_limits.size() == 1);
    CHECK(parsed->hugepage_limits[0] == std::pair<std::string, uint64_t>{"2MB", 0});
    CHECK(parsed->unified == std::map<std::string, std::string>{{"cgroup.max.descendants", "10"},
                                                                {"memory.high", "max"},
                                                                {"memory.oom.group", "1"}});
    auto refused = parseResources(R"({"hugepageLimits": [{"pageSize": "3MB", "limit": 0}]})");
    REQUIRE_FALSE(refused);
    CHECK(refused.error().describe().find("linux.resources.hugepageLimits[0].pageSize") == 0);
}

TEST_CASE("oci resource names: huge page sizes as the kernel spells them, on this host", "[oci]") {
    char dir_template[] = "/tmp/stockade-hugepages-XXXXXX";
    REQUIRE(mkdtemp(dir_template));
    const std::string dir = dir_template;
    for (const char* size : {"hugepages-64kB", "hugepages-2048kB", "hugepages-1048576kB"})
        REQUIRE(mkdir((dir + "/" + size).c_str(), 0755) == 0);
    for (const char* good : {"64KB", "2MB", "1GB"}) CHECK_FALSE(hugePageSizeProblem(good, dir));
    for (const char* bad : {"2048KB", "1024MB", "02MB", "2mb", "2M", "MB", "", "0MB", "-2MB", "4MB",
                            "16GB", "2 MB", "99999999999GB", "18446744073709551617KB"}) {
        auto problem = hugePageSizeProblem(bad, dir);
        CHECK(problem);
    }
    CHECK(*hugePageSizeProblem("2048KB", dir) ==
          "\"2048KB\" is spelt 2MB in the kernel's "
          "hugetlb files");
    CHECK(hugePageSizeProblem("4MB", dir)->find("not a huge page size this host has") !=
          std::string::npos);
    for (const char* size : {"hugepages-64kB", "hugepages-2048kB", "hugepages-1048576kB"})
        rmdir((dir + "/" + size).c_str());
    rmdir(dir.c_str());
}

TEST_CASE("oci resource names: unified keys name a file of the container's directory only",
          "[oci]") {
    for (const char* good :
         {"memory.oom.group", "memory.high", "io.weight", "cpu.weight.nice", "hugetlb.2MB.max",
          "cgroup.max.depth", "cgroup.max.descendants", "misc.max", "memory.swap.max"})
        CHECK_FALSE(unifiedKeyProblem(good));
    for (const char* bad : {"", "memory", ".high", "memory.", "memory..high", "../memory.max",
                            "memory/high", "a/../../b.c", "memory.high\n", "cgroup.procs",
                            "cgroup.threads", "cgroup.subtree_control", "cgroup.kill",
                            "cgroup.freeze", "cgroup.type", "cgroup.", "memory.high "})
        CHECK(unifiedKeyProblem(bad));
    CHECK(unifiedKeyController("memory.oom.group") == "memory");
    CHECK(unifiedKeyController("cgroup.max.depth").empty());
}
