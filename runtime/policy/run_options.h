// What the user asked for on the command line, unvalidated and free of any
// parsing library's types. runtime/policy/policy_builder.cpp turns it and a profile
// into a Policy.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace stockade {

struct RunOptions {
    std::string profile = "held-test";
    std::optional<std::string> worktree;
    std::vector<std::string> mounts;  // SRC:DST[:rw]
    std::optional<std::string> rootfs;
    bool follow_symlinks = false;  // host paths may go through symlinks (resolved once)
    std::vector<std::string> env;  // KEY=VALUE or KEY
    std::vector<std::string> allow_secret;
    std::optional<std::string> workdir;
    std::optional<std::string> user;  // UID[:GID]
    bool map_subids = false;
    std::optional<std::string> name;
    std::string stdin_mode = "null";
    bool quiet = false;
    std::optional<std::string> result;
    std::optional<std::string> memory, pids, cpu_time, timeout, output_limit, tmp_size;
    std::vector<std::string> require;     // comma-separated lists, as given
    std::optional<std::string> min_tier;  // --min-tier full|landlock
    std::vector<std::string> show;        // worktree names exempt from hiding
    std::vector<std::string> writable;    // worktree names exempt from read-only
    std::vector<std::string> command;
};

}  // namespace stockade
