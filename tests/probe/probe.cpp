// stockade-probe: runs inside the sandbox, performs one attack or observation,
// and prints what the kernel answered as `key=value` lines on stdout.
//
//   stockade-probe ACTION [ARG...]
//
// `result=` is "ok" or the errno's symbolic name ("EROFS"). The probe exits 0
// unless the action itself is about the exit status (exit, raise) or the
// action is unknown or misused (exit 2, `error=` line).
//
// Every attack here must stay harmless when the sandbox is broken and the
// probe runs as real root on the host: it writes back values that are already
// there, creates only unnamed (O_TMPFILE) or self-removed files, opens for
// writing without truncating, and signals only pids it was given. The probe
// uses nothing of stockade, only libc and raw system calls, and is linked
// statically so that it runs under any --rootfs.
//
// The actions live in probe/, one file per area (filesystem, network,
// processes, environment, privileges, namespaces); this file names them.

#include <unistd.h>

#include <functional>
#include <map>
#include <string>

#include "probe/actions.h"

namespace probe {

namespace {

struct ActionSpec {
    size_t argCount;
    const char* usage;
    std::function<int(const Args&)> run;
};

const std::map<std::string, ActionSpec>& actions() {
    static const std::map<std::string, ActionSpec> table = {
        {"read-file", {1, "PATH", readFile}},
        {"read-each", {1, "PATHS (newline-separated)", readEach}},
        {"open-write-each", {1, "PATHS (newline-separated)", openWriteEach}},
        {"open-write", {1, "PATH", openWrite}},
        {"rewrite-same", {1, "PATH", rewriteSame}},
        {"create-in", {1, "DIR", createIn}},
        {"create-file", {2, "PATH CONTENT", createFile}},
        {"stat", {1, "PATH", statPath}},
        {"list-dir", {1, "PATH", listDir}},
        {"readlink", {1, "PATH", readLink}},
        {"link", {2, "EXISTING NEW", linkFile}},
        {"rename", {2, "FROM TO", renamePath}},
        {"mounts", {0, "", mounts}},
        {"cwd", {0, "", cwd}},
        {"shmget", {1, "KEY", shmLookup}},
        {"connect-tcp", {2, "HOST PORT", connectTcp}},
        {"route-udp", {2, "HOST PORT", routeUdp}},
        {"listen-tcp", {3, "HOST PORT SECONDS", listenTcp}},
        {"connect-abstract", {1, "NAME", connectAbstract}},
        {"connect-unix", {1, "PATH", connectUnix}},
        {"ifaces", {0, "", ifaces}},
        {"kill", {2, "PID SIG", killPid}},
        {"ptrace", {1, "PID", ptracePid}},
        {"pids", {0, "", listPids}},
        {"fds", {0, "", listFds}},
        {"read-stdin", {0, "", readStdin}},
        {"env", {0, "", env}},
        {"sleep-with-token", {2, "TOKEN SECONDS", sleepWithToken}},
        {"daemonize", {1, "TOKEN", daemonize}},
        {"daemonize-keep-stdio", {1, "TOKEN", daemonizeKeepStdio}},
        {"orphan-zombies", {1, "N", orphanZombies}},
        {"ids", {0, "", ids}},
        {"caps", {0, "", caps}},
        {"setuid0", {0, "", setuid0}},
        {"setgid0", {0, "", setgid0}},
        {"setgroups", {0, "", setgroupsEmpty}},
        {"capset-raise", {0, "", capsetRaise}},
        {"securebits-clear", {0, "", securebitsClear}},
        {"ambient-raise", {0, "", ambientRaise}},
        {"mount-tmpfs", {0, "", mountTmpfs}},
        {"fsopen", {0, "", fsopenTmpfs}},
        {"unshare", {1, "user|mount|net|pid|ipc|uts|cgroup", unshareNamespace}},
        {"mknod", {0, "", mknodDevice}},
        {"chroot", {0, "", chrootSelf}},
        {"session", {0, "", session}},
        {"open-tty", {0, "", openTty}},
        {"acquire-ctty", {1, "FD", acquireCtty}},
        {"pty-open", {0, "", ptyOpen}},
        {"pty-controlling", {0, "", ptyControlling}},
        {"pty-inject", {0, "", ptyInject}},
        {"pty-hold", {2, "TOKEN SECONDS", ptyHold}},
        {"pty-fill", {0, "", ptyFill}},
        {"hostname", {0, "", hostname}},
        {"sethostname-same", {0, "", sethostnameSame}},
        {"exit", {1, "CODE", exitWith}},
        {"raise", {1, "SIGNAL", raiseSignal}},
        {"setid-routes", {1, "DIR", setidRoutes}},
        {"io-setup-hold", {2, "NR_EVENTS SECONDS", ioSetupHold}},
        {"sigqueue-fill", {1, "SECONDS", sigqueueFill}},
        {"inotify-fill", {1, "SECONDS", inotifyFill}},
        {"chown-scratch", {2, "UID GID", chownScratch}},
        {"setuid-to", {1, "UID", setuidTo}},
        {"sleep-as", {2, "ID SECONDS", sleepAs}},
        {"trap-as", {2, "ID SECONDS", trapAs}},
        {"setgid-to", {1, "GID", setgidTo}},
    };
    return table;
}

int usage() {
    std::string text = "usage: stockade-probe ACTION [ARG...]\nactions:\n";
    for (const auto& [name, spec] : actions()) text += "  " + name + " " + spec.usage + "\n";
    ::write(STDERR_FILENO, text.data(), text.size());
    return 2;
}

}  // namespace

}  // namespace probe

int main(int argc, char** argv) {
    if (argc < 2) return probe::usage();
    const auto it = probe::actions().find(argv[1]);
    if (it == probe::actions().end()) {
        probe::emit("error", std::string("unknown action ") + argv[1]);
        return probe::usage();
    }
    const probe::Args args(argv + 2, argv + argc);
    if (args.size() != it->second.argCount) {
        probe::emit("error", std::string(argv[1]) + " takes " +
                                 std::to_string(it->second.argCount) + " argument(s)");
        return 2;
    }
    return it->second.run(args);
}
