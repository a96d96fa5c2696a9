// Side by side, interleaved: `stockade run -- /bin/true` on the full default
// profile against bubblewrap with --unshare-all --die-with-parent
// --new-session --cap-drop ALL and the same binds (SPEC §9). Interleaving
// makes machine drift hit both alike. Prints medians, p95, p99 and the ratio.
//
//   stockade_compare_bwrap STOCKADE WORKTREE [RUNS]
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace {

double runOnce(const std::vector<std::string>& argv) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    auto start = std::chrono::steady_clock::now();
    pid_t pid;
    if (posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ) != 0) {
        std::perror(args[0]);
        std::exit(2);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    posix_spawn_file_actions_destroy(&actions);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "%s failed (status %d)\n", args[0], status);
        std::exit(2);
    }
    return ms;
}

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s STOCKADE WORKTREE [RUNS]\n", argv[0]);
        return 2;
    }
    std::string stockade = argv[1], worktree = argv[2];
    int runs = argc > 3 ? std::atoi(argv[3]) : 300;
    std::vector<std::string> ours = {stockade, "run", "--quiet",  "--worktree",
                                     worktree, "--",  "/bin/true"};
    std::vector<std::string> bwrap = {"bwrap",
                                      "--unshare-all",
                                      "--die-with-parent",
                                      "--new-session",
                                      "--cap-drop",
                                      "ALL",
                                      "--ro-bind",
                                      "/usr",
                                      "/usr",
                                      "--symlink",
                                      "usr/bin",
                                      "/bin",
                                      "--symlink",
                                      "usr/sbin",
                                      "/sbin",
                                      "--symlink",
                                      "usr/lib",
                                      "/lib",
                                      "--symlink",
                                      "usr/lib64",
                                      "/lib64",
                                      "--ro-bind",
                                      "/etc",
                                      "/etc",
                                      "--proc",
                                      "/proc",
                                      "--dev",
                                      "/dev",
                                      "--tmpfs",
                                      "/tmp",
                                      "--tmpfs",
                                      "/var/tmp",
                                      "--bind",
                                      worktree,
                                      "/repo",
                                      "--chdir",
                                      "/repo",
                                      "--",
                                      "/bin/true"};
    if (access("/usr/bin/bwrap", X_OK) != 0) {
        std::printf("bubblewrap is not installed (apt-get install bubblewrap): no comparison\n");
        return 1;
    }
    for (int i = 0; i < 20; ++i) runOnce(ours), runOnce(bwrap);  // warm-up
    std::vector<double> a, b;
    for (int i = 0; i < runs; ++i) {
        if (i % 2 == 0) {
            a.push_back(runOnce(ours));
            b.push_back(runOnce(bwrap));
        } else {
            b.push_back(runOnce(bwrap));
            a.push_back(runOnce(ours));
        }
    }
    std::printf("%-10s %8s %8s %8s   (ms, %d interleaved runs each)\n", "", "median", "p95", "p99",
                runs);
    std::printf("%-10s %8.3f %8.3f %8.3f\n", "stockade", percentile(a, 0.5), percentile(a, 0.95),
                percentile(a, 0.99));
    std::printf("%-10s %8.3f %8.3f %8.3f\n", "bwrap", percentile(b, 0.5), percentile(b, 0.95),
                percentile(b, 0.99));
    std::printf("ratio of medians (stockade / bwrap): %.2f\n",
                percentile(a, 0.5) / percentile(b, 0.5));
    return 0;
}
