// The default profiles' worktree names (profiles/*.json, filesystem.worktree),
// as the worktree-mask tests plant canaries under them, and the helpers those
// tests share.
#pragma once

#include <string>
#include <vector>

#include "harness.h"

namespace stockade::itest {

// Files every default profile hides, by name.
inline const std::vector<std::string> kHiddenFiles = {
    ".env",         ".env.local",   ".env.production",  ".envrc",           ".npmrc",
    ".pypirc",      ".netrc",       "_netrc",           ".git-credentials", ".pgpass",
    ".vault-token", ".terraformrc", "credentials.json", "credentials.yml",  "auth.json",
    "auth.toml",    "auth.yaml",    "auth.yml",         "id_rsa",           "id_ecdsa",
    "id_ed25519",   "id_dsa"};
// Directories they hide, with a file inside each.
inline const std::vector<std::string> kHiddenDirFiles = {
    ".ssh/id_deploy",     ".aws/credentials", ".azure/accessTokens.json",
    ".gnupg/private.key", ".codex/auth.json", ".claude/settings.local.json"};
// Read-only files in held-test and dev-server, and files inside read-only
// directories.
inline const std::vector<std::string> kReadOnlyFiles = {"AGENTS.md",
                                                        "CLAUDE.md",
                                                        "GEMINI.md",
                                                        ".cursorrules",
                                                        ".gitlab-ci.yml",
                                                        ".gitmodules",
                                                        ".husky/pre-commit",
                                                        ".pre-commit-config.yaml",
                                                        "lefthook.yml",
                                                        ".mcp.json",
                                                        ".bashrc",
                                                        ".bash_profile",
                                                        ".zshrc",
                                                        ".profile",
                                                        ".github/copilot-instructions.md",
                                                        ".github/workflows/ci.yml",
                                                        ".vscode/tasks.json",
                                                        ".idea/workspace.xml"};
inline const std::vector<std::string> kDepths = {"", "pkg/", "packages/app/src/deep/"};

inline std::string joinLines(const std::vector<std::string>& paths) {
    std::string out;
    for (const std::string& p : paths) out += p + "\n";
    return out;
}

inline std::string recordText(const Sandbox& sandbox) {
    return readFileOrEmpty(sandbox.resultPath());
}

// The probe's `KEY=ERR PATH` line for a path, or "<missing>".
inline std::string answerFor(const ProbeReport& report, const std::string& key,
                             const std::string& path) {
    for (const std::string& line : report.all(key))
        if (line.size() > path.size() && line.ends_with(" " + probeEscape(path)))
            return line.substr(0, line.size() - path.size() - 1);
    return "<missing>";
}
inline std::string answerFor(const ProbeRun& run, const std::string& key, const std::string& path) {
    return answerFor(run.report, key, path);
}

}  // namespace stockade::itest
