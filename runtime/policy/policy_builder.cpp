#include "runtime/policy/policy_builder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <tuple>

#include "base/units.h"
#include "runtime/policy/environment.h"
#include "runtime/policy/mask_patterns.h"
#include "runtime/policy/sandbox_path.h"
#include "runtime/policy/writable_trees.h"

namespace stockade {

namespace {

// Opened once, here; everything later uses the fd (host_path.h).
Result<HeldPath> resolveHostDir(const std::string& option, const std::string& path,
                                bool follow_symlinks) {
    auto held = holdHostPath(option, path, follow_symlinks);
    if (!held) return held.error();
    if (!S_ISDIR(held->st.st_mode))
        return Error::message(option + " " + path + ": not a directory");
    return held;
}

Result<uint32_t> parseId(const std::string& text, const std::string& what) {
    char* end = nullptr;
    errno = 0;
    unsigned long value = std::strtoul(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || value >= 0xffffffffUL || text[0] == '-')
        return Error::message("--user: expected a numeric " + what + ", got \"" + text + "\"");
    return static_cast<uint32_t>(value);
}

Status applyLimit(const std::optional<std::string>& value, const char* flag,
                  Result<uint64_t> (*parse)(std::string_view), std::optional<uint64_t>& out) {
    if (!value) return okStatus();
    auto parsed = parse(*value);
    if (!parsed) return parsed.error().withContext(flag);
    out = *parsed;
    return okStatus();
}

uint64_t readNumber(const char* path) {
    FILE* f = fopen(path, "re");
    if (!f) return 0;
    unsigned long long value = 0;
    if (fscanf(f, "%llu", &value) != 1) value = 0;
    fclose(f);
    return value;
}

// A bound the host cannot honour is refused, not silently clipped: more
// memory than the machine has, more processes than pid_max allows.
Status checkBoundsFitHost(const Limits& limits) {
    uint64_t ram = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                   static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    if (limits.memory_bytes && ram && *limits.memory_bytes > ram)
        return Error::message("--memory: " + std::to_string(*limits.memory_bytes) +
                              " bytes is more than this host has (" + std::to_string(ram) + ")");
    uint64_t pid_max = readNumber("/proc/sys/kernel/pid_max");
    if (limits.pids && pid_max && *limits.pids > pid_max)
        return Error::message("--pids: " + std::to_string(*limits.pids) +
                              " is more than this host's pid_max (" + std::to_string(pid_max) +
                              ")");
    if (limits.tmp_bytes > ram && ram)
        return Error::message("--tmp-size: " + std::to_string(limits.tmp_bytes) +
                              " bytes is more than this host's memory (" + std::to_string(ram) +
                              ")");
    return okStatus();
}

// The host trees the sandbox sees besides /repo, bound from the host whole:
// the --rootfs, or else each system directory that is a directory (a link
// is a link inside). The /etc entries bound are left out: a worktree in
// /etc/ssl is not a layout anyone has, and each would cost a run an lstat.
std::vector<std::string> treesSeenBesideWorktree(const FilesystemView& fs) {
    if (fs.rootfs != "/") return {fs.rootfs};
    std::vector<std::string> trees;
    for (const std::string& dir : fs.system_dirs) {
        struct stat st;
        char real[PATH_MAX];
        if (lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && realpath(dir.c_str(), real))
            trees.emplace_back(real);
    }
    return trees;
}

// The covers over the worktree's hidden and read-only names are mounted on
// /repo alone. A worktree the sandbox also sees through another tree bound
// from the host (one inside /usr: /usr/local/src/app; a --rootfs unpacked
// in the worktree, whose /usr a sandbox could move a hidden name into; the
// same reached through a bind mount) would show them there uncovered: refused
// before anything is made, naming both.
Status refuseWorktreeSeenTwice(const FilesystemView& fs) {
    if (!fs.worktree) return okStatus();
    // A --mount's source likewise: a parent of the worktree given for
    // context (--mount ~/mono:/mono beside --worktree ~/mono/pkg) or a part
    // of it given elsewhere shows the names at its target uncovered.
    std::vector<std::string> trees = treesSeenBesideWorktree(fs);
    for (const ExtraMount& m : fs.mounts) trees.push_back(m.source);
    const auto overlap = overlapOf(*fs.worktree, trees);
    if (!overlap) return okStatus();
    for (const ExtraMount& m : fs.mounts)
        if (m.source == overlap->tree) {
            const std::string where = ": the sandbox would see the worktree's files at " +
                                      m.target +
                                      " as well as at /repo, where the names its rules hide are "
                                      "not covered; mount a tree beside the worktree, not one "
                                      "holding it or held by it";
            return Error::message(
                overlap->dir_inside
                    ? "--worktree " + *fs.worktree + " lies inside --mount " + m.source + where
                    : "--mount " + m.source + " lies inside --worktree " + *fs.worktree + where);
        }
    const std::string why =
        ": the sandbox would see the worktree's files there as well as at /repo, where the "
        "names its rules hide are not covered; keep the worktree and the sandbox's root apart";
    const std::string what = fs.rootfs != "/" ? "--rootfs " : "";
    if (overlap->dir_inside)
        return Error::message(
            "--worktree " + *fs.worktree + " lies inside " + what + overlap->tree +
            (fs.rootfs != "/" ? "" : ", which the sandbox is given read-only") + why);
    return Error::message(what + overlap->tree + " lies inside --worktree " + *fs.worktree + why);
}

}  // namespace

std::vector<std::string> writableHostDirs(const FilesystemView& fs) {
    std::vector<std::string> dirs;
    if (fs.worktree) dirs.push_back(*fs.worktree);
    for (const ExtraMount& m : fs.mounts)
        if (m.writable) dirs.push_back(m.source);
    return dirs;
}

Result<ExtraMount> parseMountSpec(const std::string& spec, bool follow_symlinks) {
    ExtraMount m;
    std::string rest = spec;
    if (rest.ends_with(":rw")) {
        m.writable = true;
        rest.resize(rest.size() - 3);
    } else if (rest.ends_with(":ro")) {
        rest.resize(rest.size() - 3);
    }
    auto colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size())
        return Error::message("--mount " + spec + ": expected SRC:DST[:rw]");
    const std::string last = rest.substr(colon + 1);
    if (last[0] != '/' && last != "rw" && last != "ro" && rest.find(':') < colon)
        return Error::message("--mount " + spec + ": unknown mount option \"" + last +
                              "\" (expected :rw, or :ro, the default)");
    std::string source = rest.substr(0, colon);
    auto target = normalizeSandboxPath(rest.substr(colon + 1));
    if (!target) return target.error().withContext("--mount " + spec + ": target");
    m.target = *target;
    for (const char* hole : {"/proc", "/dev", "/sys"})
        if (isUnder(m.target, hole))
            return Error::message("--mount " + spec + ": refusing to mount over " + hole);
    if (m.target == "/") return Error::message("--mount " + spec + ": refusing to mount over /");
    if (isUnder(m.target, "/repo/.git"))
        return Error::message("--mount " + spec + ": refusing to mount inside /repo/.git");
    auto held = holdHostPath("--mount " + spec + ": source", source, follow_symlinks);
    if (!held) return held.error();
    m.source = held->path;
    m.held = std::move(*held);
    return m;
}

Result<Policy> buildPolicy(const Profile& profile, const RunOptions& options) {
    Policy p;
    p.profile_name = profile.name;
    p.name = options.name.value_or("");
    if (options.command.empty()) return Error::message("no command given after --");
    p.command = options.command;
    if (p.command[0].empty()) return Error::message("the command is an empty string");

    p.fs.system_dirs = profile.system_dirs;
    p.fs.etc_entries = profile.etc_entries;
    p.fs.mount_sys = profile.sys;
    p.map_subids = profile.map_subids || options.map_subids;
    if (options.rootfs) {
        auto root = resolveHostDir("--rootfs", *options.rootfs, options.follow_symlinks);
        if (!root) return root.error();
        p.fs.rootfs = root->path;
        p.fs.rootfs_held = std::move(*root);
    }
    if (options.worktree) {
        auto wt = resolveHostDir("--worktree", *options.worktree, options.follow_symlinks);
        if (!wt) return wt.error();
        if (wt->path == "/")
            return Error::message("--worktree /: refusing to expose the whole host");
        p.fs.worktree = wt->path;
        p.fs.worktree_held = std::move(*wt);
    }
    for (const std::string& spec : options.mounts) {
        auto m = parseMountSpec(spec, options.follow_symlinks);
        if (!m) return m.error();
        if (isUnder(m->target, "/repo") && !p.fs.worktree)
            return Error::message("--mount " + spec + ": a target under /repo needs --worktree");
        if (m->target == "/repo" && p.fs.worktree)
            return Error::message("--mount " + spec + ": /repo is the worktree");
        for (const char* built :
             {"/tmp", "/var/tmp", "/etc/passwd", "/etc/group", "/etc/hosts", "/etc/hostname"})
            if (m->target == built)
                return Error::message("--mount " + spec + ": " + built +
                                      " is provided by stockade");
        p.fs.mounts.push_back(*m);
    }

    if (options.workdir) {
        auto wd = normalizeSandboxPath(*options.workdir);
        if (!wd) return wd.error().withContext("--workdir");
        p.workdir = *wd;
    } else {
        p.workdir = p.fs.worktree ? "/repo" : "/tmp";
    }
    p.fs.worktree_masks = profile.worktree_masks;
    for (const auto& [flag, given, list] :
         {std::tuple{"--show", &options.show, &p.fs.worktree_masks.show},
          std::tuple{"--writable", &options.writable, &p.fs.worktree_masks.writable}})
        for (const std::string& pattern : *given) {
            if (auto s = checkMaskPattern(flag, pattern); !s) return s.error();
            list->push_back(pattern);
        }
    if (p.fs.worktree)
        if (auto s = checkMaskRules(p.fs.worktree_masks, p.workdir); !s) return s.error();
    if (auto s = refuseWorktreeSeenTwice(p.fs); !s) return s.error();
    if (options.user) {
        auto colon = options.user->find(':');
        auto uid = parseId(options.user->substr(0, colon), "uid");
        if (!uid) return uid.error();
        p.uid = *uid;
        if (colon != std::string::npos) {
            auto gid = parseId(options.user->substr(colon + 1), "gid");
            if (!gid) return gid.error();
            p.gid = *gid;
        }
    }

    if (options.stdin_mode == "null")
        p.stdin_mode = StdinMode::Null;
    else if (options.stdin_mode == "inherit")
        p.stdin_mode = StdinMode::Inherit;
    else
        return Error::message("--stdin: expected null or inherit, got \"" + options.stdin_mode +
                              "\"");
    p.quiet = options.quiet;

    EnvironmentRequest env;
    env.pass = profile.env_pass;
    env.pass_interactive = profile.env_pass_interactive;
    env.set = profile.env_set;
    env.cli_env = options.env;
    env.allow_secret = options.allow_secret;
    env.interactive = p.stdin_mode == StdinMode::Inherit && isatty(0);
    auto environment = buildEnvironment(env, callerEnvironment());
    if (!environment) return environment.error();
    p.environment = *environment;

    p.network = profile.network;
    p.limits = profile.limits;
    if (auto s = applyLimit(options.memory, "--memory", parseSize, p.limits.memory_bytes); !s)
        return s.error();
    if (auto s = applyLimit(options.pids, "--pids", parseCount, p.limits.pids); !s)
        return s.error();
    if (auto s = applyLimit(options.cpu_time, "--cpu-time", parseSecondsAsMs, p.limits.cpu_time_ms);
        !s)
        return s.error();
    if (auto s = applyLimit(options.timeout, "--timeout", parseSecondsAsMs, p.limits.timeout_ms);
        !s)
        return s.error();
    if (auto s =
            applyLimit(options.output_limit, "--output-limit", parseSize, p.limits.output_bytes);
        !s)
        return s.error();
    if (options.tmp_size) {
        auto size = parseSize(*options.tmp_size);
        if (!size) return size.error().withContext("--tmp-size");
        p.limits.tmp_bytes = *size;
    }
    if (auto s = checkBoundsFitHost(p.limits); !s) return s.error();
    pauseAfterOpenForTests();
    p.require = profile.require;
    const auto& known = knownRequirements();
    for (const std::string& list : options.require) {
        std::istringstream items(list);
        std::string item;
        while (std::getline(items, item, ',')) {
            if (item.empty()) continue;
            if (std::find(known.begin(), known.end(), item) == known.end())
                return Error::message("--require: unknown guarantee \"" + item + "\"");
            p.require.push_back(item);
        }
    }
    p.seccomp = profile.seccomp;
    p.landlock = profile.landlock;
    if (p.landlock == LandlockMode::Required) p.require.push_back("landlock");
    p.min_tier = profile.min_tier;
    if (options.min_tier) {
        auto tier = parseTier(*options.min_tier);
        if (!tier) return tier.error().withContext("--min-tier");
        p.min_tier = *tier;
    }
    // Never a weaker run than the caller asked for: a tier that cannot give
    // a required guarantee is a contradiction, refused before anything runs.
    if (auto beyond = requirementsBeyondTier(p.min_tier, p.require); !beyond.empty()) {
        std::string names;
        for (const std::string& b : beyond) names += (names.empty() ? "" : ",") + b;
        return Error::message(std::string("--min-tier ") + tierName(p.min_tier) +
                              " and --require " + names +
                              " contradict: that tier makes no namespace (see `stockade check`)");
    }
    return p;
}

}  // namespace stockade
