// runtime/profile and the user-input checks of runtime/policy_builder: every
// way a profile can be wrong is refused with the JSON path of the fault and
// the form that was expected; the shipped profiles parse, are found by name,
// and survive `profile show` | `profile check`; --mount refuses its holes.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/policy/embedded_profiles.h"
#include "runtime/policy/policy_builder.h"
#include "runtime/policy/profile.h"

using namespace stockade;

namespace {

std::filesystem::path sourceDir() {
    if (const char* dir = std::getenv("STOCKADE_SOURCE_DIR")) return dir;
    return std::filesystem::path(STOCKADE_SOURCE_DIR);
}

std::filesystem::path profileFixtures() {
    return sourceDir() / "tests/fixtures/profiles";
}

std::string readText(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    INFO("reading " << path.string());
    REQUIRE(in.good());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

Profile mustParse(const std::string& name, const std::string& text) {
    Result<Profile> profile = parseProfile(name, text);
    INFO("profile text:\n" << text);
    INFO((profile ? "" : profile.error().describe()));
    REQUIRE(profile.ok());
    return std::move(profile.value());
}

// The whole error text of a profile that must be refused.
std::string refusal(const std::string& name, const std::string& text) {
    Result<Profile> profile = parseProfile(name, text);
    INFO("profile text:\n" << text);
    REQUIRE_FALSE(profile.ok());
    return profile.error().describe();
}

// A valid document with `extra` spliced in as more top-level members.
std::string minimalWith(const std::string& filesystem, const std::string& extra = "") {
    return R"({"schema": "stockade.profile/v1", "filesystem": )" + filesystem +
           (extra.empty() ? "" : ", " + extra) + "}";
}

void checkSameProfile(const Profile& a, const Profile& b) {
    CHECK(a.description == b.description);
    CHECK(a.system_dirs == b.system_dirs);
    CHECK(a.etc_entries == b.etc_entries);
    CHECK(a.tmp_bytes == b.tmp_bytes);
    CHECK(a.sys == b.sys);
    CHECK(a.worktree_masks.hide == b.worktree_masks.hide);
    CHECK(a.worktree_masks.read_only == b.worktree_masks.read_only);
    CHECK(a.worktree_masks.show == b.worktree_masks.show);
    CHECK(a.worktree_masks.writable == b.worktree_masks.writable);
    CHECK(a.worktree_masks.max_depth == b.worktree_masks.max_depth);
    CHECK(a.worktree_masks.max_entries == b.worktree_masks.max_entries);
    CHECK(a.env_pass == b.env_pass);
    CHECK(a.env_pass_interactive == b.env_pass_interactive);
    CHECK(a.env_set == b.env_set);
    CHECK(a.network == b.network);
    CHECK(a.limits.memory_bytes == b.limits.memory_bytes);
    CHECK(a.limits.pids == b.limits.pids);
    CHECK(a.limits.cpu_time_ms == b.limits.cpu_time_ms);
    CHECK(a.limits.timeout_ms == b.limits.timeout_ms);
    CHECK(a.limits.output_bytes == b.limits.output_bytes);
    CHECK(a.limits.tmp_bytes == b.limits.tmp_bytes);
    CHECK(a.limits.file_size_bytes == b.limits.file_size_bytes);
    CHECK(a.limits.open_files == b.limits.open_files);
    CHECK(a.limits.pending_signals == b.limits.pending_signals);
    CHECK(a.limits.message_queue_bytes == b.limits.message_queue_bytes);
    CHECK(a.limits.inotify_instances == b.limits.inotify_instances);
    CHECK(a.limits.inotify_watches == b.limits.inotify_watches);
    CHECK(a.require == b.require);
    CHECK(a.seccomp == b.seccomp);
    CHECK(a.landlock == b.landlock);
    CHECK(a.lifetime == b.lifetime);
    CHECK(a.output == b.output);
}

const std::vector<std::string> kShippedProfiles = {"build", "dev-server", "held-test"};

// Each malformed fixture and the exact error it must give, after
// "profile NAME: ". One fixture per validation rule of runtime/policy/profile.cpp.
const std::map<std::string, std::string> kMalformed = {
    {"not_json", "not valid JSON at line 2, column 1 (unexpected end of input; expected '}')"},
    {"top_level_array", "/: expected a JSON object"},
    {"unknown_top_key",
     "/networks: unknown key (expected one of: schema, description, filesystem, environment, "
     "network, limits, require, seccomp, landlock, lifetime, output, map_subids, min_tier)"},
    {"unknown_filesystem_key",
     "/filesystem/tmpfs_size: unknown key (expected one of: system_dirs, etc, tmp_size, sys, "
     "worktree)"},
    {"unknown_environment_key",
     "/environment/unset: unknown key (expected one of: pass, pass_interactive, set)"},
    {"unknown_limits_key",
     "/limits/mem: unknown key (expected one of: memory, pids, cpu_time, timeout, output, "
     "file_size, open_files, pending_signals, message_queues, inotify_instances, "
     "inotify_watches)"},
    {"schema_wrong", R"(/schema: expected "stockade.profile/v1", got "stockade.profile/v2")"},
    {"schema_missing", R"(/schema: expected "stockade.profile/v1", got nothing)"},
    {"schema_not_string", R"(/schema: expected "stockade.profile/v1", got 1)"},
    {"description_not_string", "/description: expected a string, got 5"},
    {"filesystem_missing",
     R"(/filesystem: missing (expected an object with at least "system_dirs"))"},
    {"filesystem_not_object", R"(/filesystem: expected an object, got ["/usr"])"},
    {"system_dirs_missing",
     R"(/filesystem/system_dirs: missing (expected an array of absolute paths like ["/usr"]))"},
    {"system_dirs_not_array", "/filesystem/system_dirs: expected an array of absolute paths"},
    {"system_dir_relative",
     R"(/filesystem/system_dirs/1: expected an absolute path without "..", got "lib")"},
    {"system_dir_dotdot",
     R"(/filesystem/system_dirs/0: expected an absolute path without "..", got "/usr/../etc")"},
    {"system_dir_trailing_dotdot",
     R"(/filesystem/system_dirs/0: expected an absolute path without "..", got "/usr/lib/..")"},
    {"system_dir_empty",
     R"(/filesystem/system_dirs/0: expected an absolute path without "..", got "")"},
    {"system_dir_not_string", "/filesystem/system_dirs/0: expected a string, got 7"},
    {"system_dir_proc",
     R"(/filesystem/system_dirs/1: "/proc" cannot be a system directory (it is built by )"
     "stockade or must stay absent)"},
    {"etc_not_array", R"(/filesystem/etc: expected an array of strings, got "ssl")"},
    {"etc_slash", R"(/filesystem/etc/0: expected a name directly under /etc, got "ssl/certs")"},
    {"etc_dotdot", R"(/filesystem/etc/1: expected a name directly under /etc, got "..")"},
    {"etc_passwd",
     "/filesystem/etc/1: /etc/passwd is synthesized by stockade and cannot be exposed"},
    {"tmp_size_word", R"(/filesystem/tmp_size: expected a size like "512m", got "lots")"},
    {"tmp_size_zero", R"(/filesystem/tmp_size: expected a size like "512m", got 0)"},
    {"sys_not_bool", "/filesystem/sys: expected true or false"},
    {"environment_not_object", R"(/environment: expected an object, got "PATH")"},
    {"env_pass_not_array", R"(/environment/pass: expected an array of strings, got "LANG")"},
    {"env_pass_bad_name",
     R"(/environment/pass/1: expected an environment variable name, got "1LANG")"},
    {"env_pass_interactive_bad_name",
     R"(/environment/pass_interactive/0: expected an environment variable name, got "TERM-X")"},
    {"env_set_not_object", R"(/environment/set: expected an object, got ["PATH=/bin"])"},
    {"env_set_bad_name", "/environment/set/A=B: expected an environment variable name"},
    {"env_set_value_not_string", "/environment/set/N: expected a string, got 3"},
    {"network_bad", R"(/network: expected one of none | loopback-publish, got "host")"},
    {"landlock_bad", R"(/landlock: expected one of off | best-effort | required, got "on")"},
    {"lifetime_bad", R"(/lifetime: expected one of oneshot | service, got "forever")"},
    {"min_tier_bad", R"(/min_tier: unknown tier "partial" (expected full or landlock))"},
    {"min_tier_beyond_require",
     R"(/min_tier: "min_tier": "landlock" cannot give the required pid_ns (no namespace is made in that tier))"},
    {"output_bad", R"(/output: expected one of capture | log, got "file")"},
    {"limits_not_object", R"(/limits: expected an object, got "2g")"},
    {"limits_memory_negative", R"(/limits/memory: expected a size like "512m", got -1)"},
    {"limits_memory_bad_suffix", R"(/limits/memory: expected a size like "512m", got "12x")"},
    {"limits_memory_zero", R"(/limits/memory: expected a size like "512m", got 0)"},
    {"limits_pids_zero", "/limits/pids: expected a positive integer, got 0"},
    {"limits_pids_negative", "/limits/pids: expected a positive integer, got -3"},
    {"limits_pids_string", R"(/limits/pids: expected a positive integer, got "5")"},
    {"limits_cpu_time_zero",
     "/limits/cpu_time: expected a number of seconds like 30 or 1.5, got 0"},
    {"limits_cpu_time_word",
     R"(/limits/cpu_time: expected a number of seconds like 30 or 1.5, got "abc")"},
    {"limits_timeout_zero", "/limits/timeout: expected a number of seconds like 30 or 1.5, got 0"},
    {"limits_timeout_word",
     R"(/limits/timeout: expected a number of seconds like 30 or 1.5, got "abc")"},
    {"limits_output_zero", R"(/limits/output: expected a size like "512m", got "0")"},
    {"limits_file_size_fraction", R"(/limits/file_size: expected a size like "512m", got 1.5)"},
    {"limits_open_files_zero", "/limits/open_files: expected a positive integer, got 0"},
    {"require_not_array", R"(/require: expected an array of strings, got "memory")"},
    {"require_unknown",
     R"(/require/1: unknown guarantee "gpu" (expected one of: user_ns, mount_ns, pid_ns, net_ns, ipc_ns, uts_ns, cgroup_ns, seccomp, no_new_privs, capabilities, memory, pids, cpu_time, landlock))"},
    {"seccomp_empty", R"(/seccomp: expected "default", "none" or a file path)"},
    {"seccomp_not_string", "/seccomp: expected a string, got {}"},
};

}  // namespace

// --- malformed profiles ----------------------------------------------------------

TEST_CASE("each malformed profile is refused with its JSON path and the expected form",
          "[profile][validation]") {
    for (const auto& [stem, expected] : kMalformed) {
        const std::filesystem::path path = profileFixtures() / (stem + ".json");
        INFO("fixture " << path.string());
        CHECK(refusal(stem, readText(path)) == "profile " + stem + ": " + expected);
    }
}

TEST_CASE("every malformed fixture has its expected error, and nothing else is there",
          "[profile][validation]") {
    std::set<std::string> onDisk;
    for (const auto& entry : std::filesystem::directory_iterator(profileFixtures())) {
        if (entry.path().extension() != ".json") continue;
        const std::string stem = entry.path().stem().string();
        if (stem.starts_with("valid_")) continue;
        onDisk.insert(stem);
        INFO(entry.path().string() << " has no expected error in kMalformed");
        CHECK(kMalformed.count(stem) == 1);
    }
    for (const auto& [stem, expected] : kMalformed) {
        INFO("kMalformed names " << stem << ".json, which is missing");
        CHECK(onDisk.count(stem) == 1);
    }
}

TEST_CASE("loading a malformed profile file names the file in the error", "[profile][validation]") {
    const std::string path = (profileFixtures() / "limits_memory_negative.json").string();
    Result<Profile> profile = loadProfile(path);
    REQUIRE_FALSE(profile.ok());
    CHECK(profile.error().describe() ==
          "profile " + path + R"(: /limits/memory: expected a size like "512m", got -1)");
}

TEST_CASE("a missing profile file names the path and the errno", "[profile]") {
    Result<Profile> profile = loadProfile("/nonexistent/stockade-profile.json");
    REQUIRE_FALSE(profile.ok());
    CHECK(profile.error().errnum() == ENOENT);
    CHECK_THAT(profile.error().describe(),
               Catch::StartsWith("profile /nonexistent/stockade-profile.json: "));
}

TEST_CASE("every directory stockade builds or keeps absent is refused as a system dir",
          "[profile][validation]") {
    for (const char* dir : {"/", "/proc", "/dev", "/sys", "/tmp", "/repo", "/etc", "/home", "/root",
                            "/run", "/var/tmp"}) {
        INFO(dir);
        CHECK(refusal("p", minimalWith(std::string(R"({"system_dirs": [")") + dir + "\"]}")) ==
              std::string("profile p: /filesystem/system_dirs/0: \"") + dir +
                  "\" cannot be a system directory (it is built by stockade or must stay absent)");
    }
}

// The forbidden list must hold for every spelling of a forbidden directory and
// for what lies beneath it: "/run/" or "//home" bind the host's /run or /home
// (its docker socket, its users' files) into the sandbox, against SPEC G2.
TEST_CASE("a forbidden system dir cannot be smuggled in by spelling or by a subdirectory",
          "[profile][validation][G2]") {
    for (const char* dir :
         {"/run/", "//home", "/./root", "/proc/.", "/dev//", "/run/user", "/home/someone",
          "/root/.ssh", "/sys/fs/cgroup", "/repo/.git", "/var//tmp/x"}) {
        INFO("system dir " << dir);
        Result<Profile> profile =
            parseProfile("p", minimalWith(std::string(R"({"system_dirs": [")") + dir + "\"]}"));
        CHECK_FALSE(profile.ok());
        if (!profile.ok())
            CHECK_THAT(profile.error().describe(),
                       Catch::StartsWith("profile p: /filesystem/system_dirs/0: "));
    }
}

TEST_CASE("system dirs are kept in their normal spelling", "[profile]") {
    const Profile p =
        mustParse("p", minimalWith(R"({"system_dirs": ["//usr/", "/./bin", "/opt//tools/."]})"));
    CHECK(p.system_dirs == std::vector<std::string>{"/usr", "/bin", "/opt/tools"});
}

TEST_CASE("every synthesized /etc file is refused as an /etc entry", "[profile][validation]") {
    for (const char* name : {"passwd", "group", "hosts", "hostname"}) {
        INFO(name);
        CHECK(refusal("p", minimalWith(std::string(R"({"system_dirs": ["/usr"], "etc": [")") +
                                       name + "\"]}")) ==
              std::string("profile p: /filesystem/etc/0: /etc/") + name +
                  " is synthesized by stockade and cannot be exposed");
    }
    for (const char* bad : {"", ".", "..", "/ssl", "ssl/", "ssl/certs"}) {
        INFO("etc entry \"" << bad << "\"");
        CHECK(refusal("p", minimalWith(std::string(R"({"system_dirs": ["/usr"], "etc": [")") + bad +
                                       "\"]}")) ==
              std::string("profile p: /filesystem/etc/0: expected a name directly under /etc, "
                          "got \"") +
                  bad + "\"");
    }
}

TEST_CASE("environment names are refused in every list they appear", "[profile][validation]") {
    for (const char* bad : {"", "1A", "A-B", "A B", "A=B", "Ä"}) {
        INFO("name \"" << bad << "\"");
        for (const char* list : {"pass", "pass_interactive"}) {
            const std::string doc =
                minimalWith(R"({"system_dirs": ["/usr"]})",
                            std::string(R"("environment": {")") + list + R"(": [")" + bad + "\"]}");
            CHECK(refusal("p", doc) == std::string("profile p: /environment/") + list +
                                           "/0: expected an environment variable name, got \"" +
                                           bad + "\"");
        }
        const std::string doc =
            minimalWith(R"({"system_dirs": ["/usr"]})",
                        std::string(R"("environment": {"set": {")") + bad + R"(": "x"}})");
        CHECK(refusal("p", doc) == std::string("profile p: /environment/set/") + bad +
                                       ": expected an environment variable name");
    }
}

TEST_CASE("every limit refuses each malformed value with its path", "[profile][validation]") {
    struct Case {
        const char* key;
        const char* value;  // JSON text
        const char* form;
    };
    const char* size = R"(a size like "512m")";
    const char* seconds = "a number of seconds like 30 or 1.5";
    const char* count = "a positive integer";
    const std::vector<Case> cases = {
        {"memory", "-1", size},
        {"memory", R"("12x")", size},
        {"memory", "0", size},
        {"memory", R"("")", size},
        {"memory", "1.5", size},
        {"memory", R"("-1")", size},
        {"memory", "true", size},
        {"output", "0", size},
        {"file_size", R"("1.5g")", size},
        {"pids", "0", count},
        {"pids", "-3", count},
        {"pids", R"("5")", count},
        {"pids", "2.5", count},
        {"open_files", "0", count},
        {"open_files", "-1", count},
        {"pending_signals", "0", count},
        {"message_queues", R"("1q")", size},
        {"inotify_instances", "-2", count},
        {"inotify_watches", "1.5", count},
        {"cpu_time", "0", seconds},
        {"cpu_time", R"("abc")", seconds},
        {"cpu_time", "-1", seconds},
        {"cpu_time", "true", seconds},
        {"cpu_time", R"("1s")", seconds},
        {"timeout", "0", seconds},
        {"timeout", R"("abc")", seconds},
        {"timeout", "-0.5", seconds},
    };
    for (const Case& c : cases) {
        INFO(c.key << " = " << c.value);
        const std::string doc =
            minimalWith(R"({"system_dirs": ["/usr"]})",
                        std::string(R"("limits": {")") + c.key + "\": " + c.value + "}");
        CHECK(refusal("p", doc) == std::string("profile p: /limits/") + c.key + ": expected " +
                                       c.form + ", got " + c.value);
    }
}

// `stockade profile show` prints an unset limit as null; reading it back must
// leave the limit unset.
TEST_CASE("a null limit is no limit", "[profile]") {
    const Profile p =
        mustParse("p", minimalWith(R"({"system_dirs": ["/usr"]})",
                                   R"("limits": {"memory": null, "pids": null, "cpu_time": null, )"
                                   R"("timeout": null, "output": null, "file_size": null, )"
                                   R"("open_files": null})"));
    CHECK_FALSE(p.limits.memory_bytes);
    CHECK_FALSE(p.limits.pids);
    CHECK_FALSE(p.limits.cpu_time_ms);
    CHECK_FALSE(p.limits.timeout_ms);
    CHECK_FALSE(p.limits.output_bytes);
    CHECK_FALSE(p.limits.file_size_bytes);
    CHECK_FALSE(p.limits.open_files);
    // Still an unknown key, null or not.
    CHECK(refusal("p", minimalWith(R"({"system_dirs": ["/usr"]})", R"("limits": {"mem": null})")) ==
          "profile p: /limits/mem: unknown key (expected one of: memory, pids, cpu_time, timeout, "
          "output, file_size, open_files, pending_signals, message_queues, inotify_instances, "
          "inotify_watches)");
}

TEST_CASE("every enum refuses a value outside its choices, and a non-string",
          "[profile][validation]") {
    const std::vector<std::pair<const char*, const char*>> enums = {
        {"network", "none | loopback-publish"},
        {"landlock", "off | best-effort | required"},
        {"lifetime", "oneshot | service"},
        {"output", "capture | log"},
    };
    for (const auto& [key, choices] : enums) {
        for (const char* value : {R"("NONE")", R"("")", "1", "null", "[]"}) {
            INFO(key << " = " << value);
            const std::string doc = minimalWith(R"({"system_dirs": ["/usr"]})",
                                                std::string("\"") + key + "\": " + value);
            CHECK(refusal("p", doc) == std::string("profile p: /") + key + ": expected one of " +
                                           choices + ", got " + value);
        }
    }
}

TEST_CASE("require accepts every known guarantee and refuses anything else",
          "[profile][validation]") {
    for (const std::string& known : knownRequirements()) {
        INFO(known);
        const Profile p = mustParse(
            "p", minimalWith(R"({"system_dirs": ["/usr"]})", R"("require": [")" + known + "\"]"));
        CHECK(p.require == std::vector<std::string>{known});
    }
    for (const char* bad : {"gpu", "Memory", "", "landlock "}) {
        INFO("require \"" << bad << "\"");
        CHECK(refusal("p", minimalWith(R"({"system_dirs": ["/usr"]})",
                                       std::string(R"("require": [")") + bad + "\"]")) ==
              std::string("profile p: /require/0: unknown guarantee \"") + bad +
                  "\" (expected one of: user_ns, mount_ns, pid_ns, net_ns, ipc_ns, uts_ns, "
                  "cgroup_ns, seccomp, no_new_privs, capabilities, memory, pids, cpu_time, "
                  "landlock)");
    }
}

TEST_CASE("the first problem found is reported, one path at a time", "[profile][validation]") {
    // An unknown key anywhere at the top wins over everything inside.
    CHECK(refusal("p", R"({"schema": "x", "bogus": 1})") ==
          "profile p: /bogus: unknown key (expected one of: schema, description, filesystem, "
          "environment, network, limits, require, seccomp, landlock, lifetime, output, map_subids, "
          "min_tier)");
    // Where the parser stopped, as line and column, and why.
    CHECK(refusal("p", "") ==
          "profile p: not valid JSON at line 1, column 1 (unexpected end of input; expected '[', "
          "'{', or a literal)");
    CHECK(refusal("p", "{} {}") ==
          "profile p: not valid JSON at line 1, column 4 (unexpected '{'; expected end of input)");
    CHECK(refusal("p", "{\n  \"schema\": x\n}") ==
          "profile p: not valid JSON at line 2, column 13 (invalid literal; last read: "
          "'\"schema\": x')");
    // Comments are not JSON.
    CHECK(refusal("p", "// c\n" + minimalWith(R"({"system_dirs": ["/usr"]})")) ==
          "profile p: not valid JSON at line 1, column 1 (invalid literal; last read: '/')");
    CHECK(refusal("p", "42") == "profile p: /: expected a JSON object");
    // A number no double holds is refused, not thrown past the caller (found by the fuzzer).
    CHECK(refusal("p", R"({"schema": "stockade.profile/v1", "limits": {"memory": 1e400}})")
              .starts_with("profile p: not valid JSON ("));
}

// --- valid profiles ----------------------------------------------------------------

TEST_CASE("a minimal profile gets stockade's defaults", "[profile]") {
    const Profile p = mustParse("minimal", readText(profileFixtures() / "valid_minimal.json"));
    CHECK(p.name == "minimal");
    CHECK(p.description.empty());
    CHECK(p.system_dirs == std::vector<std::string>{"/usr", "/bin"});
    CHECK(p.etc_entries.empty());
    CHECK(p.tmp_bytes == 256ull << 20);
    CHECK(p.limits.tmp_bytes == 256ull << 20);
    CHECK_FALSE(p.sys);
    CHECK(p.env_pass.empty());
    CHECK(p.env_set.empty());
    CHECK(p.network == NetworkMode::None);
    CHECK_FALSE(p.limits.memory_bytes);
    CHECK_FALSE(p.limits.pids);
    CHECK_FALSE(p.limits.cpu_time_ms);
    CHECK_FALSE(p.limits.timeout_ms);
    CHECK_FALSE(p.limits.output_bytes);
    CHECK_FALSE(p.limits.file_size_bytes);
    CHECK_FALSE(p.limits.open_files);
    CHECK(p.require.empty());
    CHECK(p.seccomp == "default");
    CHECK(p.landlock == LandlockMode::BestEffort);
    CHECK(p.lifetime == Lifetime::Oneshot);
    CHECK(p.output == OutputMode::Capture);
}

TEST_CASE("every field is read, in each spelling of its unit", "[profile]") {
    const Profile p = mustParse("every", readText(profileFixtures() / "valid_every_field.json"));
    CHECK(p.system_dirs == std::vector<std::string>{"/usr", "/bin", "/opt/toolchain"});
    CHECK(p.etc_entries == std::vector<std::string>{"ssl", "ld.so.cache", "resolv.conf"});
    CHECK(p.tmp_bytes == 1ull << 30);
    CHECK(p.limits.tmp_bytes == 1ull << 30);
    CHECK(p.sys);
    CHECK(p.env_pass == std::vector<std::string>{"LANG", "LC_ALL"});
    CHECK(p.env_pass_interactive == std::vector<std::string>{"TERM", "COLORTERM"});
    CHECK(p.env_set == std::map<std::string, std::string>{
                           {"PATH", "/usr/bin:/bin"}, {"HOME", "/tmp"}, {"_UNDERSCORE_1", ""}});
    CHECK(p.network == NetworkMode::Loopback);
    CHECK(p.limits.memory_bytes.value_or(0) == 512ull << 20);
    CHECK(p.limits.pids.value_or(0) == 64u);
    CHECK(p.limits.cpu_time_ms.value_or(0) == 1500u);
    CHECK(p.limits.timeout_ms.value_or(0) == 2250u);
    CHECK(p.limits.output_bytes.value_or(0) == 1048576u);
    CHECK(p.limits.file_size_bytes.value_or(0) == 2ull << 30);
    CHECK(p.limits.open_files.value_or(0) == 256u);
    CHECK(p.limits.pending_signals.value_or(0) == 100000u);
    CHECK(p.limits.message_queue_bytes.value_or(0) == 1ull << 20);
    CHECK(p.limits.inotify_instances.value_or(0) == 256u);
    CHECK(p.limits.inotify_watches.value_or(0) == 1000000u);
    CHECK(p.require == knownRequirements());
    CHECK(p.seccomp == "/etc/stockade/seccomp.json");
    CHECK(p.landlock == LandlockMode::Required);
    CHECK(p.lifetime == Lifetime::Service);
    CHECK(p.output == OutputMode::Log);
}

// 2.007 * 1000 is 2007.0000000000002 in binary floating point: rounding that
// up turns a 2.007 s timeout into 2008 ms, and makes `profile show` of a
// 2007 ms limit read back as 2008.
TEST_CASE("fractional seconds are read exactly to the millisecond", "[profile]") {
    const std::vector<std::pair<std::string, uint64_t>> cases = {
        {"2.007", 2007},  {"2.011", 2011}, {"1.1", 1100}, {"0.007", 7},  {"2.3", 2300},
        {"\"0.1\"", 100}, {"0.001", 1},    {"1e-3", 1},   {"30", 30000}, {"\"4.35\"", 4350},
    };
    for (const auto& [value, ms] : cases) {
        INFO("timeout " << value);
        const Profile p = mustParse("p", minimalWith(R"({"system_dirs": ["/usr"]})",
                                                     R"("limits": {"timeout": )" + value + "}"));
        CHECK(p.limits.timeout_ms.value_or(0) == ms);
    }
}

// --- shipped profiles ----------------------------------------------------------------

TEST_CASE("every shipped profile parses, and what is embedded is what is shipped", "[profile]") {
    std::set<std::string> shipped;
    for (const auto& entry : std::filesystem::directory_iterator(sourceDir() / "profiles")) {
        if (entry.path().extension() != ".json") continue;
        const std::string name = entry.path().stem().string();
        shipped.insert(name);
        INFO("profiles/" << name << ".json");
        const Profile p = mustParse(name, readText(entry.path()));
        CHECK_FALSE(p.description.empty());
        CHECK_FALSE(p.system_dirs.empty());
    }
    for (const std::string& name : kShippedProfiles) {
        INFO("SPEC and issue 3 ship " << name);
        CHECK(shipped.count(name) == 1);
    }
    std::set<std::string> embedded;
    for (const EmbeddedProfile& e : embeddedProfiles()) {
        embedded.insert(std::string(e.name));
        INFO("embedded " << e.name);
        CHECK(std::string(e.json) ==
              readText(sourceDir() / "profiles" / (std::string(e.name) + ".json")));
    }
    CHECK(embedded == shipped);
}

TEST_CASE("embedded profiles: the prebuilt one is the parsed one", "[profile]") {
    // `run` builds an embedded profile from code generated at build time
    // (runtime/policy/tools/prebuild_profiles.cpp); it must be, field by
    // field, what the profile's JSON parses to, and what loadProfile gives.
    for (const EmbeddedProfile& e : embeddedProfiles()) {
        const std::string name(e.name);
        INFO("embedded " << name);
        auto prebuilt = prebuiltProfile(name);
        REQUIRE(prebuilt);
        const Profile parsed = mustParse(name, std::string(e.json));
        CHECK(*prebuilt == parsed);
        CHECK(profileToJson(*prebuilt) == profileToJson(parsed));
        // The comparison sees a field that differs.
        Profile other = parsed;
        other.limits.inotify_watches = other.limits.inotify_watches.value_or(7) + 1;
        CHECK_FALSE(*prebuilt == other);
        auto loaded = loadProfile(name);
        REQUIRE(loaded);
        CHECK(*loaded == parsed);
    }
    CHECK_FALSE(prebuiltProfile("no-such-profile"));
    CHECK_FALSE(prebuiltProfile(""));
}

TEST_CASE("the shipped profiles say what SPEC says of them", "[profile]") {
    const Profile held = mustParse("held-test", readText(sourceDir() / "profiles/held-test.json"));
    CHECK(held.network == NetworkMode::None);
    CHECK(held.lifetime == Lifetime::Oneshot);
    CHECK(held.output == OutputMode::Capture);
    CHECK(held.seccomp == "default");
    CHECK(held.limits.memory_bytes);
    CHECK(held.limits.pids);
    CHECK(held.limits.timeout_ms);
    CHECK(held.env_set.at("HOME") == "/tmp");
    CHECK(held.env_pass_interactive == std::vector<std::string>{"TERM"});

    const Profile build = mustParse("build", readText(sourceDir() / "profiles/build.json"));
    CHECK(build.network == NetworkMode::None);
    CHECK(*build.limits.memory_bytes >= *held.limits.memory_bytes);
    CHECK(*build.limits.pids >= *held.limits.pids);

    const Profile dev = mustParse("dev-server", readText(sourceDir() / "profiles/dev-server.json"));
    CHECK(dev.network == NetworkMode::Loopback);
    CHECK(dev.lifetime == Lifetime::Service);
    CHECK(dev.output == OutputMode::Log);
    CHECK_FALSE(dev.limits.timeout_ms);  // SPEC §7: no wall-clock timeout
}

TEST_CASE("a shipped profile is found by name without any installed file", "[profile]") {
    for (const std::string& name : kShippedProfiles) {
        INFO(name);
        Result<Profile> loaded = loadProfile(name);
        INFO((loaded ? "" : loaded.error().describe()));
        REQUIRE(loaded.ok());
        CHECK(loaded->name == name);
        checkSameProfile(*loaded,
                         mustParse(name, readText(sourceDir() / "profiles" / (name + ".json"))));
    }
}

TEST_CASE("an unknown profile name lists the known ones", "[profile]") {
    Result<Profile> profile = loadProfile("nope");
    REQUIRE_FALSE(profile.ok());
    const std::string message = profile.error().describe();
    CHECK_THAT(message, Catch::StartsWith("no profile named \"nope\" (known: "));
    for (const std::string& name : kShippedProfiles) CHECK_THAT(message, Catch::Contains(name));
    CHECK_THAT(message, Catch::Contains("a file path must contain '/' or end in .json"));
}

TEST_CASE("a value with a slash or ending in .json is read as a file", "[profile]") {
    const std::string path = (profileFixtures() / "valid_minimal.json").string();
    Result<Profile> profile = loadProfile(path);
    INFO((profile ? "" : profile.error().describe()));
    REQUIRE(profile.ok());
    CHECK(profile->name == path);
    // "held-test.json" is a file in the working directory, not the shipped profile.
    Result<Profile> relative = loadProfile("held-test.json");
    if (!std::filesystem::exists("held-test.json")) {
        REQUIRE_FALSE(relative.ok());
        CHECK(relative.error().errnum() == ENOENT);
    }
}

// `stockade profile show X > f; stockade profile check f` must succeed, and
// give back the same profile.
TEST_CASE("profileToJson of each shipped profile parses back to the same profile", "[profile]") {
    for (const std::string& name : kShippedProfiles) {
        INFO("profile show " << name);
        const Profile original =
            mustParse(name, readText(sourceDir() / "profiles" / (name + ".json")));
        const std::string shown = profileToJson(original);
        INFO(shown);
        Result<Profile> reparsed = parseProfile(name, shown);
        INFO((reparsed ? "" : reparsed.error().describe()));
        REQUIRE(reparsed.ok());
        checkSameProfile(original, *reparsed);
    }
}

TEST_CASE("profileToJson round-trips unset limits and every field", "[profile]") {
    for (const char* fixture : {"valid_minimal.json", "valid_every_field.json"}) {
        INFO(fixture);
        const Profile original = mustParse("p", readText(profileFixtures() / fixture));
        const std::string shown = profileToJson(original);
        INFO(shown);
        Result<Profile> reparsed = parseProfile("p", shown);
        INFO((reparsed ? "" : reparsed.error().describe()));
        REQUIRE(reparsed.ok());
        checkSameProfile(original, *reparsed);
    }
}

TEST_CASE(
    "min_tier: the default profiles require the full tier; a profile may accept the "
    "lower one, and it round-trips",
    "[profile][tier]") {
    for (const char* name : {"held-test", "dev-server", "build"}) {
        INFO(name);
        Result<Profile> profile = loadProfile(name);
        REQUIRE(profile.ok());
        CHECK(profile->min_tier == Tier::Full);
    }
    const std::string text =
        R"({"schema": "stockade.profile/v1", "filesystem": {"system_dirs": ["/usr"]},
            "require": ["memory", "landlock"], "min_tier": "landlock"})";
    const Profile lower = mustParse("p", text);
    CHECK(lower.min_tier == Tier::Landlock);
    const Profile again = mustParse("p", profileToJson(lower));
    CHECK(again.min_tier == Tier::Landlock);
    CHECK(requirementsBeyondTier(Tier::Landlock, {"memory", "net_ns", "user_ns"}) ==
          std::vector<std::string>{"net_ns", "user_ns"});
    CHECK(requirementsBeyondTier(Tier::Full, {"net_ns"}).empty());
}

// --- --mount and sandbox paths ---------------------------------------------------------

TEST_CASE("sandbox paths are normalized lexically and \"..\" is refused", "[policy][mount]") {
    const std::vector<std::pair<std::string, std::string>> good = {
        {"/", "/"},
        {"//", "/"},
        {"/.", "/"},
        {"/a", "/a"},
        {"/a/", "/a"},
        {"/a/./b//c/", "/a/b/c"},
        {"///a///b", "/a/b"},
        {"/a/...", "/a/..."},
        {"/a/..b", "/a/..b"},
        {"/a/b..", "/a/b.."},
        {"/repo/.git", "/repo/.git"},
    };
    for (const auto& [in, out] : good) {
        INFO(in);
        Result<std::string> normalized = normalizeSandboxPath(in);
        INFO((normalized ? "" : normalized.error().describe()));
        REQUIRE(normalized.ok());
        CHECK(*normalized == out);
    }
    for (const char* relative : {"", "a", "a/b", "./a", "../a", "~/a"}) {
        INFO(relative);
        Result<std::string> normalized = normalizeSandboxPath(relative);
        REQUIRE_FALSE(normalized.ok());
        CHECK(normalized.error().describe() ==
              std::string("\"") + relative + "\" is not an absolute path");
    }
    for (const char* dotdot : {"/..", "/a/..", "/a/../b", "/a/b/../../..", "/./../etc"}) {
        INFO(dotdot);
        Result<std::string> normalized = normalizeSandboxPath(dotdot);
        REQUIRE_FALSE(normalized.ok());
        CHECK(normalized.error().describe() == std::string("\"") + dotdot + "\" contains \"..\"");
    }
}

TEST_CASE("mount spec SRC:DST reads the mode suffix and resolves the source", "[policy][mount]") {
    char cwd[4096];
    REQUIRE(::getcwd(cwd, sizeof cwd) != nullptr);
    struct Case {
        std::string spec;
        std::string source;
        std::string target;
        bool writable;
    };
    const std::vector<Case> cases = {
        {"/usr/share:/data", "/usr/share", "/data", false},
        {"/usr/share:/data:ro", "/usr/share", "/data", false},
        {"/usr/share:/data:rw", "/usr/share", "/data", true},
        {"/usr/share/:/data/./x//", "/usr/share", "/data/x", false},
        {"/usr/share:/repo/.github", "/usr/share", "/repo/.github", false},
        {"/usr/share:/repo/.gitx:rw", "/usr/share", "/repo/.gitx", true},
        {"/usr/share:/procfs", "/usr/share", "/procfs", false},
        {"/usr/share:/device", "/usr/share", "/device", false},
        {"/usr/share:/system", "/usr/share", "/system", false},
        {"/usr/share/../share:/d", "/usr/share", "/d", false},
        {".:/here", cwd, "/here", false},
    };
    for (const Case& c : cases) {
        INFO("--mount " << c.spec);
        Result<ExtraMount> m = parseMountSpec(c.spec);
        INFO((m ? "" : m.error().describe()));
        REQUIRE(m.ok());
        CHECK(m->source == std::filesystem::canonical(c.source).string());
        CHECK(m->target == c.target);
        CHECK(m->writable == c.writable);
    }
}

TEST_CASE("mount spec refuses holes over /, /proc, /dev, /sys and inside /repo/.git",
          "[policy][mount]") {
    const std::vector<std::pair<std::string, std::string>> holes = {
        {"/usr:/", "refusing to mount over /"},
        {"/usr://", "refusing to mount over /"},
        {"/usr:/.:rw", "refusing to mount over /"},
        {"/usr:/proc", "refusing to mount over /proc"},
        {"/usr:/proc/", "refusing to mount over /proc"},
        {"/usr:/proc/sys/kernel:rw", "refusing to mount over /proc"},
        {"/usr:/proc/self/fd", "refusing to mount over /proc"},
        {"/usr:/dev", "refusing to mount over /dev"},
        {"/usr:/dev/shm:rw", "refusing to mount over /dev"},
        {"/usr://dev/null", "refusing to mount over /dev"},
        {"/usr:/sys", "refusing to mount over /sys"},
        {"/usr:/sys/fs/cgroup:rw", "refusing to mount over /sys"},
        {"/usr:/repo/.git", "refusing to mount inside /repo/.git"},
        {"/usr:/repo/.git:rw", "refusing to mount inside /repo/.git"},
        {"/usr:/repo/.git/hooks:rw", "refusing to mount inside /repo/.git"},
        {"/usr:/repo/./.git/refs", "refusing to mount inside /repo/.git"},
        {"/usr:/repo//.git/", "refusing to mount inside /repo/.git"},
    };
    for (const auto& [spec, why] : holes) {
        INFO("--mount " << spec);
        Result<ExtraMount> m = parseMountSpec(spec);
        REQUIRE_FALSE(m.ok());
        CHECK(m.error().describe() == "--mount " + spec + ": " + why);
    }
}

TEST_CASE("mount spec refuses a malformed spec, naming the whole value", "[policy][mount]") {
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"/usr", "expected SRC:DST[:rw]"},
        {"/usr:", "expected SRC:DST[:rw]"},
        {":/data", "expected SRC:DST[:rw]"},
        {"/usr:rw", "expected SRC:DST[:rw]"},
        {"/usr:/data:rw:rw", "target: \"rw\" is not an absolute path"},
        {"/usr:/data:rx", "unknown mount option \"rx\" (expected :rw, or :ro, the default)"},
        {"/usr:data", "target: \"data\" is not an absolute path"},
        {"/usr:/data/../proc", "target: \"/data/../proc\" contains \"..\""},
        {"/usr:/..:rw", "target: \"/..\" contains \"..\""},
        {"/usr:/repo/../etc", "target: \"/repo/../etc\" contains \"..\""},
    };
    for (const auto& [spec, why] : bad) {
        INFO("--mount " << spec);
        Result<ExtraMount> m = parseMountSpec(spec);
        REQUIRE_FALSE(m.ok());
        CHECK(m.error().describe() == "--mount " + spec + ": " + why);
    }
    Result<ExtraMount> missing = parseMountSpec("/nonexistent/stockade-src:/data");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().errnum() == ENOENT);
    CHECK_THAT(missing.error().describe(),
               Catch::StartsWith("--mount /nonexistent/stockade-src:/data: source "
                                 "/nonexistent/stockade-src"));
}
