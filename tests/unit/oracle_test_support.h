// Helpers shared by the oracle's unit tests: a temporary directory, running
// the real git (with no user or system config, so the answers are git's
// defaults), and the committed report fixtures.
#pragma once

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace oracle_test {

inline bool ciMode() {
    const char* ci = std::getenv("CI");
    return ci != nullptr && std::string(ci) == "true";
}

// A test that cannot run here says so loudly; under CI=true it fails.
inline void skipLoudly(const std::string& why) {
    std::string text = "SKIPPED, NOT TESTED: " + why;
    if (ciMode()) FAIL(text + " (CI=true turns this skip into a failure)");
    WARN(text);
}

class TempDir {
  public:
    TempDir() {
        std::string tmpl = std::filesystem::temp_directory_path() / "oracle-test-XXXXXX";
        REQUIRE(mkdtemp(tmpl.data()) != nullptr);
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ignored;
        // Directories a test made unreadable must be opened up to be removed.
        std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                     std::filesystem::perm_options::add, ignored);
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    std::string operator/(const std::string& relative) const { return path_ + "/" + relative; }

  private:
    std::string path_;
};

inline void writeFile(const std::string& path, const std::string& content, mode_t mode = 0644) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    REQUIRE(out.good());
    out << content;
    out.close();
    REQUIRE(::chmod(path.c_str(), mode) == 0);
}

inline std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    INFO("reading " << path);
    REQUIRE(in.good());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// Runs `command` with /bin/sh; returns its stdout and its exit status.
inline std::pair<std::string, int> runShell(const std::string& command) {
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string out;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
    int status = ::pclose(pipe);
    return {out, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
}

// Runs `command` and REQUIREs it to succeed; returns stdout.
inline std::string shell(const std::string& command) {
    auto [out, status] = runShell(command);
    INFO("command: " << command << "\noutput: " << out);
    REQUIRE(status == 0);
    return out;
}

inline std::string trimNewline(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    return text;
}

// git with no config but its defaults, and a fixed identity for commits.
inline std::string gitEnv() {
    return "env GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t "
           "GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t "
           "GIT_AUTHOR_DATE=@1700000000+0000 GIT_COMMITTER_DATE=@1700000000+0000 ";
}

// `git -C dir ARGS`, REQUIREd to succeed; stdout without the final newline.
inline std::string git(const std::string& dir, const std::string& args) {
    return trimNewline(shell(gitEnv() + "git -C '" + dir + "' " + args + " 2>/dev/null"));
}

inline bool haveGit() {
    return runShell("git --version >/dev/null 2>&1").second == 0;
}

inline std::filesystem::path sourceDir() {
    if (const char* dir = std::getenv("STOCKADE_SOURCE_DIR")) return dir;
    return std::filesystem::path(STOCKADE_SOURCE_DIR);
}

inline std::string fixture(const std::string& relative) {
    return readFile((sourceDir() / "tests/fixtures/oracle" / relative).string());
}

}  // namespace oracle_test
