#include "runtime/net/nftables.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/unique_fd.h"

namespace stockade {

std::optional<std::string> findNft() {
    for (const char* path : {"/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"})
        if (access(path, X_OK) == 0) return std::string(path);
    return std::nullopt;
}

Status applyNftRuleset(const std::string& ruleset) {
    auto nft = findNft();
    if (!nft)
        return Error::message(
            "no nft binary in /usr/sbin, /sbin or /usr/bin (apt-get install nftables)");
    int in[2], err[2];
    if (pipe2(in, O_CLOEXEC) < 0) return Error::fromErrno("pipe2() for nft's stdin");
    UniqueFd in_read(in[0]), in_write(in[1]);
    if (pipe2(err, O_CLOEXEC) < 0) return Error::fromErrno("pipe2() for nft's stderr");
    UniqueFd err_read(err[0]), err_write(err[1]);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_read.get(), 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, err_write.get(), 2);
    // The supervisor blocks the signals it takes through a signalfd; nft
    // starts with none blocked and default dispositions.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &all);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char* argv[] = {const_cast<char*>(nft->c_str()), const_cast<char*>("-f"),
                    const_cast<char*>("-"), nullptr};
    char* envp[] = {nullptr};
    pid_t pid = -1;
    int spawned = posix_spawn(&pid, nft->c_str(), &actions, &attributes, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    in_read.reset();
    err_write.reset();
    if (spawned != 0) return Error::fromErrno("posix_spawn(\"" + *nft + "\")", spawned);

    // A ruleset is a few hundred bytes: it fits in the pipe, so writing it
    // all before reading nft's stderr cannot deadlock. An nft that died
    // unread would raise SIGPIPE: held blocked here and taken back below.
    sigset_t pipe_signal, old_mask;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, &old_mask);
    const char* p = ruleset.data();
    size_t left = ruleset.size();
    while (left > 0) {
        ssize_t n = write(in_write.get(), p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        p += n;
        left -= static_cast<size_t>(n);
    }
    in_write.reset();
    timespec now{};
    while (sigtimedwait(&pipe_signal, nullptr, &now) == SIGPIPE) {
    }
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    std::string messages;
    char buffer[4096];
    ssize_t n;
    while ((n = read(err_read.get(), buffer, sizeof(buffer))) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        messages.append(buffer, static_cast<size_t>(n));
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return okStatus();
    while (!messages.empty() && messages.back() == '\n') messages.pop_back();
    return Error::message(*nft + " -f - failed (" +
                          (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                             : "signal " + std::to_string(WTERMSIG(status))) +
                          ")" + (messages.empty() ? "" : ": " + messages));
}

}  // namespace stockade
