// The actions of stockade-probe, by area; probe.cpp's table gives each its
// name and arguments. An action prints its `key=value` lines and returns the
// probe's exit status.
#pragma once

#include "common.h"

namespace probe {

// filesystem.cpp
int readFile(const Args& a);
int readEach(const Args& a);
int openWriteEach(const Args& a);
int openWrite(const Args& a);
int rewriteSame(const Args& a);
int createIn(const Args& a);
int createFile(const Args& a);
int statPath(const Args& a);
int listDir(const Args& a);
int readLink(const Args& a);
int linkFile(const Args& a);
int renamePath(const Args& a);
int cwd(const Args& a);

// counters.cpp
int ioSetupHold(const Args& a);
int sigqueueFill(const Args& a);
int inotifyFill(const Args& a);

// setid.cpp
int setidRoutes(const Args& a);

// network.cpp
int connectTcp(const Args& a);
int listenTcp(const Args& a);
int routeUdp(const Args& a);
int connectAbstract(const Args& a);
int connectUnix(const Args& a);
int ifaces(const Args& a);

// ids.cpp
int chownScratch(const Args& a);
int setuidTo(const Args& a);
int sleepAs(const Args& a);
int trapAs(const Args& a);
int setgidTo(const Args& a);

// processes.cpp
int killPid(const Args& a);
int ptracePid(const Args& a);
int listPids(const Args& a);
int sleepWithToken(const Args& a);
int daemonize(const Args& a);
int daemonizeKeepStdio(const Args& a);
int orphanZombies(const Args& a);
int exitWith(const Args& a);
int raiseSignal(const Args& a);

// environment.cpp
int env(const Args& a);
int listFds(const Args& a);
int readStdin(const Args& a);
int session(const Args& a);
int openTty(const Args& a);
int acquireCtty(const Args& a);

// pty.cpp
int ptyOpen(const Args& a);
int ptyControlling(const Args& a);
int ptyInject(const Args& a);
int ptyHold(const Args& a);
int ptyFill(const Args& a);

// privileges.cpp
int ids(const Args& a);
int caps(const Args& a);
int setuid0(const Args& a);
int setgid0(const Args& a);
int setgroupsEmpty(const Args& a);
int capsetRaise(const Args& a);
int securebitsClear(const Args& a);
int ambientRaise(const Args& a);

// namespaces.cpp
int mounts(const Args& a);
int mountTmpfs(const Args& a);
int fsopenTmpfs(const Args& a);
int mknodDevice(const Args& a);
int chrootSelf(const Args& a);
int unshareNamespace(const Args& a);
int shmLookup(const Args& a);
int hostname(const Args& a);
int sethostnameSame(const Args& a);

}  // namespace probe
