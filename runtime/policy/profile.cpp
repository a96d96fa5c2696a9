#include "runtime/policy/profile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/units.h"
#include "runtime/policy/embedded_profiles.h"
#include "runtime/policy/mask_patterns.h"
#include "runtime/policy/sandbox_path.h"

namespace stockade {

namespace {

using nlohmann::json;

constexpr const char* kSchema = "stockade.profile/v1";

// Thrown only inside this file and caught by parseProfile: the first problem
// found ends validation, with its JSON path.
struct ProfileProblem {
    std::string message;
};

[[noreturn]] void fail(const std::string& path, const std::string& message) {
    throw ProfileProblem{(path.empty() ? "/" : path) + ": " + message};
}

std::string shown(const json& value) {
    return value.dump();
}

void rejectUnknownKeys(const json& object, const std::string& path,
                       std::initializer_list<const char*> known) {
    for (auto it = object.begin(); it != object.end(); ++it) {
        if (std::none_of(known.begin(), known.end(),
                         [&](const char* k) { return it.key() == k; })) {
            std::string list;
            for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
            fail(path + "/" + it.key(), "unknown key (expected one of: " + list + ")");
        }
    }
}

const json& objectAt(const json& parent, const std::string& path, const char* key) {
    const json& value = parent.at(key);
    if (!value.is_object()) fail(path + "/" + key, "expected an object, got " + shown(value));
    return value;
}

std::string stringAt(const json& value, const std::string& path) {
    if (!value.is_string()) fail(path, "expected a string, got " + shown(value));
    return value.get<std::string>();
}

std::vector<std::string> stringListAt(const json& value, const std::string& path) {
    if (!value.is_array()) fail(path, "expected an array of strings, got " + shown(value));
    std::vector<std::string> out;
    for (size_t i = 0; i < value.size(); ++i)
        out.push_back(stringAt(value[i], path + "/" + std::to_string(i)));
    return out;
}

template <class Enum>
Enum enumAt(const json& value, const std::string& path,
            std::initializer_list<std::pair<const char*, Enum>> choices) {
    std::string text = value.is_string() ? value.get<std::string>() : "";
    for (const auto& [word, e] : choices)
        if (text == word) return e;
    std::string list;
    for (const auto& [word, e] : choices) list += (list.empty() ? "" : " | ") + std::string(word);
    fail(path, "expected one of " + list + ", got " + shown(value));
}

uint64_t sizeAt(const json& value, const std::string& path) {
    std::string text;
    if (value.is_number_unsigned())
        text = std::to_string(value.get<uint64_t>());
    else if (value.is_string())
        text = value.get<std::string>();
    else
        fail(path, "expected a size like \"512m\", got " + shown(value));
    auto size = parseSize(text);
    if (!size) fail(path, "expected a size like \"512m\", got " + shown(value));
    return *size;
}

uint64_t secondsAt(const json& value, const std::string& path) {
    std::string text;
    if (value.is_number() && !value.is_boolean())
        text = value.dump();
    else if (value.is_string())
        text = value.get<std::string>();
    auto ms = parseSecondsAsMs(text);
    if (!ms) fail(path, "expected a number of seconds like 30 or 1.5, got " + shown(value));
    return *ms;
}

uint64_t countAt(const json& value, const std::string& path) {
    if (!value.is_number_unsigned() || value.get<uint64_t>() == 0)
        fail(path, "expected a positive integer, got " + shown(value));
    return value.get<uint64_t>();
}

// Absolute and lexically normalized ("//home/" -> "/home"), so a forbidden
// directory cannot be smuggled in by its spelling.
std::string absolutePathAt(const json& value, const std::string& path) {
    std::string text = stringAt(value, path);
    auto normal = normalizeSandboxPath(text);
    if (!normal) fail(path, "expected an absolute path without \"..\", got " + shown(value));
    return *normal;
}

// filesystem.worktree: the names inside the worktree to hide or keep
// read-only, their exemptions, and the bounds of the walk that finds them.
void parseWorktreeMasks(const json& wt, const std::string& path, WorktreeMaskRules& out) {
    rejectUnknownKeys(wt, path,
                      {"hide", "read_only", "show", "writable", "max_depth", "max_entries"});
    auto patterns = [&](const char* key, std::vector<std::string>& list) {
        if (!wt.contains(key)) return;
        list = stringListAt(wt[key], path + "/" + key);
        for (size_t i = 0; i < list.size(); ++i) {
            std::string at = path + "/" + key + "/" + std::to_string(i);
            if (auto s = checkMaskPattern("pattern", list[i]); !s) fail(at, s.error().text());
        }
    };
    patterns("hide", out.hide);
    patterns("read_only", out.read_only);
    patterns("show", out.show);
    patterns("writable", out.writable);
    if (wt.contains("max_depth")) {
        uint64_t depth = countAt(wt["max_depth"], path + "/max_depth");
        if (depth > 256) fail(path + "/max_depth", "at most 256");
        out.max_depth = static_cast<uint32_t>(depth);
    }
    if (wt.contains("max_entries")) {
        out.max_entries = countAt(wt["max_entries"], path + "/max_entries");
        // The walk runs in the supervisor, outside the sandbox's bounds.
        if (out.max_entries > 10000000) fail(path + "/max_entries", "at most 10000000");
    }
}

void parseFilesystem(const json& fs, const std::string& path, Profile& out) {
    rejectUnknownKeys(fs, path, {"system_dirs", "etc", "tmp_size", "sys", "worktree"});
    if (!fs.contains("system_dirs"))
        fail(path + "/system_dirs",
             "missing (expected an array of absolute paths like [\"/usr\"])");
    const json& dirs = fs["system_dirs"];
    if (!dirs.is_array()) fail(path + "/system_dirs", "expected an array of absolute paths");
    for (size_t i = 0; i < dirs.size(); ++i) {
        std::string p = path + "/system_dirs/" + std::to_string(i);
        std::string dir = absolutePathAt(dirs[i], p);
        // Exactly "/", or any of these or a directory beneath them.
        for (const char* forbidden : {"/", "/proc", "/dev", "/sys", "/tmp", "/repo", "/etc",
                                      "/home", "/root", "/run", "/var/tmp"})
            if (dir == forbidden ||
                (std::string(forbidden) != "/" && dir.starts_with(std::string(forbidden) + "/")))
                fail(p, "\"" + dir +
                            "\" cannot be a system directory (it is built by stockade "
                            "or must stay absent)");
        out.system_dirs.push_back(dir);
    }
    if (fs.contains("etc")) {
        out.etc_entries = stringListAt(fs["etc"], path + "/etc");
        for (size_t i = 0; i < out.etc_entries.size(); ++i) {
            const std::string& e = out.etc_entries[i];
            if (e.empty() || e.find('/') != std::string::npos || e == "." || e == "..")
                fail(path + "/etc/" + std::to_string(i),
                     "expected a name directly under /etc, got \"" + e + "\"");
            for (const char* synthesized : {"passwd", "group", "hosts", "hostname"})
                if (e == synthesized)
                    fail(path + "/etc/" + std::to_string(i),
                         "/etc/" + e + " is synthesized by stockade and cannot be exposed");
        }
    }
    if (fs.contains("tmp_size")) out.tmp_bytes = sizeAt(fs["tmp_size"], path + "/tmp_size");
    if (fs.contains("sys")) {
        if (!fs["sys"].is_boolean()) fail(path + "/sys", "expected true or false");
        out.sys = fs["sys"].get<bool>();
    }
    if (fs.contains("worktree"))
        parseWorktreeMasks(objectAt(fs, path, "worktree"), path + "/worktree", out.worktree_masks);
}

bool isEnvName(const std::string& name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
}

void parseEnvironment(const json& env, const std::string& path, Profile& out) {
    rejectUnknownKeys(env, path, {"pass", "pass_interactive", "set"});
    auto names = [&](const char* key) {
        std::vector<std::string> list;
        if (!env.contains(key)) return list;
        list = stringListAt(env[key], path + "/" + key);
        for (size_t i = 0; i < list.size(); ++i)
            if (!isEnvName(list[i]))
                fail(path + "/" + key + "/" + std::to_string(i),
                     "expected an environment variable name, got \"" + list[i] + "\"");
        return list;
    };
    out.env_pass = names("pass");
    out.env_pass_interactive = names("pass_interactive");
    if (env.contains("set")) {
        const json& set = objectAt(env, path, "set");
        for (auto it = set.begin(); it != set.end(); ++it) {
            if (!isEnvName(it.key()))
                fail(path + "/set/" + it.key(), "expected an environment variable name");
            out.env_set[it.key()] = stringAt(it.value(), path + "/set/" + it.key());
        }
    }
}

void parseLimits(const json& limits, const std::string& path, Limits& out) {
    rejectUnknownKeys(
        limits, path,
        {"memory", "pids", "cpu_time", "timeout", "output", "file_size", "open_files",
         "pending_signals", "message_queues", "inotify_instances", "inotify_watches"});
    auto p = [&](const char* key) { return path + "/" + key; };
    // null says "no limit", as `stockade profile show` prints an unset one.
    json present = json::object();
    for (auto it = limits.begin(); it != limits.end(); ++it)
        if (!it.value().is_null()) present[it.key()] = it.value();
    if (present.contains("memory")) out.memory_bytes = sizeAt(present["memory"], p("memory"));
    if (present.contains("pids")) out.pids = countAt(present["pids"], p("pids"));
    if (present.contains("cpu_time"))
        out.cpu_time_ms = secondsAt(present["cpu_time"], p("cpu_time"));
    if (present.contains("timeout")) out.timeout_ms = secondsAt(present["timeout"], p("timeout"));
    if (present.contains("output")) out.output_bytes = sizeAt(present["output"], p("output"));
    if (present.contains("file_size"))
        out.file_size_bytes = sizeAt(present["file_size"], p("file_size"));
    if (present.contains("open_files"))
        out.open_files = countAt(present["open_files"], p("open_files"));
    if (present.contains("pending_signals"))
        out.pending_signals = countAt(present["pending_signals"], p("pending_signals"));
    if (present.contains("message_queues"))
        out.message_queue_bytes = sizeAt(present["message_queues"], p("message_queues"));
    if (present.contains("inotify_instances"))
        out.inotify_instances = countAt(present["inotify_instances"], p("inotify_instances"));
    if (present.contains("inotify_watches"))
        out.inotify_watches = countAt(present["inotify_watches"], p("inotify_watches"));
}

std::string knownList() {
    std::string list;
    for (const std::string& k : knownRequirements()) list += (list.empty() ? "" : ", ") + k;
    return list;
}

Profile parseDocument(const std::string& name, const json& doc) {
    if (!doc.is_object()) fail("", "expected a JSON object");
    rejectUnknownKeys(
        doc, "",
        {"schema", "description", "filesystem", "environment", "network", "limits", "require",
         "seccomp", "landlock", "lifetime", "output", "map_subids", "min_tier"});
    if (!doc.contains("schema") || doc["schema"] != kSchema)
        fail("/schema", std::string("expected \"") + kSchema + "\", got " +
                            (doc.contains("schema") ? shown(doc["schema"]) : "nothing"));
    Profile out;
    out.name = name;
    if (doc.contains("description")) out.description = stringAt(doc["description"], "/description");
    if (!doc.contains("filesystem"))
        fail("/filesystem", "missing (expected an object with at least \"system_dirs\")");
    parseFilesystem(objectAt(doc, "", "filesystem"), "/filesystem", out);
    if (doc.contains("environment"))
        parseEnvironment(objectAt(doc, "", "environment"), "/environment", out);
    if (doc.contains("network"))
        out.network = enumAt<NetworkMode>(
            doc["network"], "/network",
            {{"none", NetworkMode::None}, {"loopback-publish", NetworkMode::Loopback}});
    if (doc.contains("limits")) parseLimits(objectAt(doc, "", "limits"), "/limits", out.limits);
    out.limits.tmp_bytes = out.tmp_bytes ? out.tmp_bytes : out.limits.tmp_bytes;
    out.tmp_bytes = out.limits.tmp_bytes;
    if (doc.contains("require")) {
        out.require = stringListAt(doc["require"], "/require");
        const auto& known = knownRequirements();
        for (size_t i = 0; i < out.require.size(); ++i)
            if (std::find(known.begin(), known.end(), out.require[i]) == known.end())
                fail("/require/" + std::to_string(i), "unknown guarantee \"" + out.require[i] +
                                                          "\" (expected one of: " + knownList() +
                                                          ")");
    }
    if (doc.contains("map_subids")) {
        if (!doc["map_subids"].is_boolean()) fail("/map_subids", "expected true or false");
        out.map_subids = doc["map_subids"].get<bool>();
    }
    out.seccomp = "default";
    if (doc.contains("seccomp")) {
        out.seccomp = stringAt(doc["seccomp"], "/seccomp");
        if (out.seccomp.empty()) fail("/seccomp", "expected \"default\", \"none\" or a file path");
    }
    if (doc.contains("landlock"))
        out.landlock = enumAt<LandlockMode>(doc["landlock"], "/landlock",
                                            {{"off", LandlockMode::Off},
                                             {"best-effort", LandlockMode::BestEffort},
                                             {"required", LandlockMode::Required}});
    if (doc.contains("min_tier")) {
        auto tier = parseTier(stringAt(doc["min_tier"], "/min_tier"));
        if (!tier) fail("/min_tier", tier.error().text());
        out.min_tier = *tier;
        auto beyond = requirementsBeyondTier(out.min_tier, out.require);
        if (!beyond.empty())
            fail("/min_tier", std::string("\"min_tier\": \"") + tierName(out.min_tier) +
                                  "\" cannot give the required " + beyond.front() +
                                  " (no namespace is made in that tier)");
    }
    if (doc.contains("lifetime"))
        out.lifetime =
            enumAt<Lifetime>(doc["lifetime"], "/lifetime",
                             {{"oneshot", Lifetime::Oneshot}, {"service", Lifetime::Service}});
    if (doc.contains("output"))
        out.output = enumAt<OutputMode>(
            doc["output"], "/output", {{"capture", OutputMode::Capture}, {"log", OutputMode::Log}});
    return out;
}

Result<std::string> readSmallFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error::fromErrno("open(\"" + path + "\")");
    std::ostringstream text;
    text << in.rdbuf();
    if (text.str().size() > (1 << 20)) return Error::message(path + ": larger than 1 MiB");
    return text.str();
}

// Where installed profiles live: beside the binary's prefix (…/bin/stockade ->
// …/share/stockade/profiles), so a relocated install still finds its own.
std::vector<std::string> installedProfileDirs() {
    std::vector<std::string> dirs;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        std::string path(exe, static_cast<size_t>(n));
        auto slash = path.rfind('/');
        if (slash != std::string::npos) {
            std::string bin = path.substr(0, slash);
            auto up = bin.rfind('/');
            if (up != std::string::npos)
                dirs.push_back(bin.substr(0, up) + "/share/stockade/profiles");
        }
    }
    return dirs;
}

}  // namespace

const std::vector<std::string>& knownRequirements() {
    static const std::vector<std::string> known = {
        "user_ns", "mount_ns",     "pid_ns",       "net_ns", "ipc_ns", "uts_ns",   "cgroup_ns",
        "seccomp", "no_new_privs", "capabilities", "memory", "pids",   "cpu_time", "landlock"};
    return known;
}

const char* tierName(Tier tier) {
    return tier == Tier::Landlock ? "landlock" : "full";
}

Result<Tier> parseTier(const std::string& text) {
    if (text == "full") return Tier::Full;
    if (text == "landlock") return Tier::Landlock;
    return Error::message("unknown tier \"" + text + "\" (expected full or landlock)");
}

std::vector<std::string> requirementsBeyondTier(Tier tier,
                                                const std::vector<std::string>& require) {
    std::vector<std::string> beyond;
    if (tier == Tier::Full) return beyond;
    for (const std::string& r : require)
        if (r.ends_with("_ns")) beyond.push_back(r);
    return beyond;
}

Result<Profile> parseProfile(const std::string& name, const std::string& json_text) {
    json doc;
    try {
        doc = json::parse(json_text, nullptr, /*allow_exceptions=*/true, /*comments=*/false);
    } catch (const json::parse_error& e) {
        // e.byte is 1-based, at the character the parser stopped on.
        size_t at = e.byte == 0 ? 0 : std::min<size_t>(e.byte - 1, json_text.size());
        size_t line = 1 + std::count(json_text.begin(), json_text.begin() + at, '\n');
        size_t line_start = json_text.rfind('\n', at == 0 ? 0 : at - 1);
        size_t column = line_start == std::string::npos || at == 0 ? at + 1 : at - line_start;
        // nlohmann's own text ends in the cause: "... - invalid literal; last read: '...'".
        const std::string what = e.what();
        const size_t dash = what.find(" - ");
        const std::string cause =
            dash == std::string::npos ? "" : " (" + what.substr(dash + 3) + ")";
        return Error::message("profile " + name + ": not valid JSON at line " +
                              std::to_string(line) + ", column " + std::to_string(column) + cause);
    } catch (const json::exception& e) {
        // The parser reports a number too large for a double ("1e400") as
        // out_of_range, not parse_error, and with no position.
        return Error::message("profile " + name + ": not valid JSON (" + e.what() + ")");
    }
    try {
        return parseDocument(name, doc);
    } catch (const ProfileProblem& problem) {
        return Error::message("profile " + name + ": " + problem.message);
    } catch (const json::exception& e) {
        return Error::message("profile " + name + ": " + e.what());
    }
}

Result<Profile> loadProfile(const std::string& name_or_file) {
    bool is_file = name_or_file.find('/') != std::string::npos || name_or_file.ends_with(".json");
    if (is_file) {
        auto text = readSmallFile(name_or_file);
        if (!text) return text.error().withContext("profile " + name_or_file);
        return parseProfile(name_or_file, *text);
    }
    for (const std::string& dir : installedProfileDirs()) {
        std::string path = dir + "/" + name_or_file + ".json";
        struct stat st;
        if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
            auto text = readSmallFile(path);
            if (!text) return text.error().withContext("profile " + name_or_file);
            return parseProfile(name_or_file, *text);
        }
    }
    if (auto prebuilt = prebuiltProfile(name_or_file)) return std::move(*prebuilt);
    std::string names;
    for (const auto& embedded : embeddedProfiles())
        names += (names.empty() ? "" : ", ") + std::string(embedded.name);
    return Error::message("no profile named \"" + name_or_file + "\" (known: " + names +
                          "; a file path must contain '/' or end in .json)");
}

std::string profileToJson(const Profile& p) {
    json doc;
    doc["schema"] = kSchema;
    doc["description"] = p.description;
    doc["filesystem"] = {{"system_dirs", p.system_dirs},
                         {"etc", p.etc_entries},
                         {"tmp_size", p.limits.tmp_bytes},
                         {"sys", p.sys},
                         {"worktree",
                          {{"hide", p.worktree_masks.hide},
                           {"read_only", p.worktree_masks.read_only},
                           {"show", p.worktree_masks.show},
                           {"writable", p.worktree_masks.writable},
                           {"max_depth", p.worktree_masks.max_depth},
                           {"max_entries", p.worktree_masks.max_entries}}}};
    doc["environment"] = {
        {"pass", p.env_pass}, {"pass_interactive", p.env_pass_interactive}, {"set", p.env_set}};
    doc["network"] = p.network == NetworkMode::None ? "none" : "loopback-publish";
    json limits = json::object();
    auto put = [&](const char* key, const std::optional<uint64_t>& v, bool seconds = false) {
        if (!v)
            limits[key] = nullptr;
        else if (seconds)
            limits[key] = static_cast<double>(*v) / 1000.0;
        else
            limits[key] = *v;
    };
    put("memory", p.limits.memory_bytes);
    put("pids", p.limits.pids);
    put("cpu_time", p.limits.cpu_time_ms, true);
    put("timeout", p.limits.timeout_ms, true);
    put("output", p.limits.output_bytes);
    put("file_size", p.limits.file_size_bytes);
    put("open_files", p.limits.open_files);
    put("pending_signals", p.limits.pending_signals);
    put("message_queues", p.limits.message_queue_bytes);
    put("inotify_instances", p.limits.inotify_instances);
    put("inotify_watches", p.limits.inotify_watches);
    doc["limits"] = limits;
    doc["require"] = p.require;
    doc["seccomp"] = p.seccomp;
    doc["map_subids"] = p.map_subids;
    doc["landlock"] = p.landlock == LandlockMode::Off        ? "off"
                      : p.landlock == LandlockMode::Required ? "required"
                                                             : "best-effort";
    doc["min_tier"] = tierName(p.min_tier);
    doc["lifetime"] = p.lifetime == Lifetime::Oneshot ? "oneshot" : "service";
    doc["output"] = p.output == OutputMode::Capture ? "capture" : "log";
    return doc.dump(2) + "\n";
}

}  // namespace stockade
