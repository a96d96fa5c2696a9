#include "oci/monitor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "base/fd_passing.h"
#include "oci/cgroups.h"
#include "oci/container.h"
#include "oci/hooks.h"
#include "runtime/child/child_protocol.h"
#include "seccomp/denials.h"

namespace stockade::oci {

namespace {

// More than init ever sends after the commit (a failed seccomp or execve,
// then Finished); anything past it is drained unread until the socket
// closes.
constexpr int kMaxMessages = 8;

void waitForExit(int pidfd) {
    pollfd pfd{pidfd, POLLIN, 0};
    while (poll(&pfd, 1, -1) < 0 && errno == EINTR) {
    }
}

// A setup step that failed after `start` (its filter, its execve), from a
// SetupFailed or ExecFailed message: the step's name and the errno, both
// checked to be ones this build knows.
bool failureFromMessage(const ChildMessage& msg, std::string& out) {
    const auto stage = static_cast<uint32_t>(msg.stage);
    if (stage >= static_cast<uint32_t>(kChildStageCount) || msg.err <= 0 || msg.err > 4095)
        return false;
    // A startContainer hook's failure is named as create names a
    // createContainer one: which hook, how it ended, what it said.
    if (msg.stage == ChildStage::StartContainerHooks) {
        out = printableCallNote(msg);
        if (msg.err != ECANCELED && msg.err != ETIMEDOUT) out += ": " + errnoName(msg.err);
        if (!out.empty()) return true;
    }
    out = std::string(describeStage(msg.stage)) + ": " + errnoName(msg.err);
    return true;
}

// The record, changed by `change` under the directory's lock (kill, state
// and delete take it too), in the directory held by fd: a container deleted
// and made again under the same id is another directory, which this never
// writes. The record must still name this monitor.
template <typename Change>
void updateRecord(int dir_fd, const std::string& id, Change change) {
    if (flock(dir_fd, LOCK_EX) < 0) return;
    auto record = readRecord(dir_fd, id);
    if (record && record->monitor_pid == getpid() && change(*record))
        (void)writeRecord(dir_fd, *record);
    flock(dir_fd, LOCK_UN);
}

uint64_t monotonicMs() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<uint64_t>(now.tv_sec) * 1000 + static_cast<uint64_t>(now.tv_nsec) / 1000000;
}

// While the container runs, the counts reach the record at most this often
// (a flood of refusals costs one write a second, not one a refusal).
constexpr uint64_t kDenialsWriteMs = 1000;

// What the monitor hears and answers after the commit, and what it writes.
struct Heard {
    Record::End end;
    bool listening = false;
    std::string not_counted;  // the listener never came, and why
    // The listener closed on an error while processes could still be under
    // the filter: what follows is answered ENOSYS, uncounted, so the last
    // count is never called final (`state`: a lower bound).
    bool listener_lost = false;
    bool dirty = false;  // counts or state not yet in the record
    uint64_t written_ms = 0;
};

void writeHeard(int dir, const std::string& id, const RefusalAnswering& answering, Heard& heard,
                bool final) {
    updateRecord(dir, id, [&](Record& r) {
        if (heard.end.reported || final)
            if (!r.end) r.end = heard.end;
        if (r.denials.counted) {
            denialsIntoRecord(answering.denials(), r.denials);
            r.denials.listening = heard.listening;
            r.denials.final = final;
            if (!heard.not_counted.empty()) {
                r.denials.counted = false;
                r.denials.not_counted = heard.not_counted;
            }
        }
        return true;
    });
    heard.dirty = false;
    heard.written_ms = monotonicMs();
}

// One message from init (or the command before its execve) on the sync
// socket: a setup step that failed after start, or the end.
void hear(const ChildMessage& msg, Heard& heard) {
    if (msg.kind == ChildMessageKind::SetupFailed || msg.kind == ChildMessageKind::ExecFailed) {
        std::string failure;
        if (failureFromMessage(msg, failure) && heard.end.failure.empty())
            heard.end.failure = failure;
    } else if (msg.kind == ChildMessageKind::Finished &&
               endFromWaitStatus(msg.wait_status, heard.end)) {
        heard.end.reported = true;
        heard.end.stragglers = msg.stragglers;
        heard.end.time = rfc3339Now();
    }
}

// The monitor itself, in the grandchild: create's memory, but none of its
// fds but the ones it was given (moved above stdio), and none of its
// signal state. Never returns.
[[noreturn]] void runMonitor(int sync_fd, int control_fd, int dir_fd, int listener_socket_fd,
                             const FilterSource& source, const std::string& id) {
    sigset_t none;
    sigemptyset(&none);
    for (int sig = 1; sig < NSIG; ++sig)
        if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    prctl(PR_SET_NAME, "stockade-mon", 0, 0, 0);
    // Not the container's to read or trace, should it ever see this pid.
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    // create may have taken the spec's umask; the record stays 0600.
    umask(077);
    if (chdir("/") < 0) _exit(1);

    int keep[4] = {fcntl(sync_fd, F_DUPFD_CLOEXEC, 3), fcntl(control_fd, F_DUPFD_CLOEXEC, 3),
                   fcntl(dir_fd, F_DUPFD_CLOEXEC, 3),
                   listener_socket_fd < 0 ? -1 : fcntl(listener_socket_fd, F_DUPFD_CLOEXEC, 3)};
    if (keep[0] < 0 || keep[1] < 0 || keep[2] < 0 || (listener_socket_fd >= 0 && keep[3] < 0))
        _exit(1);
    const int sync = keep[0], control = keep[1], dir = keep[2];
    const int listener_socket = keep[3];
    std::sort(keep, keep + 4);
    unsigned next = 0;
    for (int fd : keep) {
        if (fd < 0) continue;
        if (static_cast<unsigned>(fd) > next)
            if (syscall(SYS_close_range, next, static_cast<unsigned>(fd) - 1, 0U) < 0) _exit(1);
        next = static_cast<unsigned>(fd) + 1;
    }
    if (syscall(SYS_close_range, next, ~0U, 0U) < 0) _exit(1);
    // stdio: /dev/null, so no caller waits on a pipe this process holds.
    int null = open("/dev/null", O_RDWR);
    if (null != 0 || dup2(0, 1) != 1 || dup2(0, 2) != 2) _exit(1);

    // create's word that the record and pid file are written, or its end:
    // then the sync socket closes with this process, the parked command
    // sees it and ends, and nothing of the container is left running.
    char go = 0;
    ssize_t n;
    while ((n = recv(control, &go, 1, 0)) < 0 && errno == EINTR) {
    }
    if (n != 1) _exit(0);
    char committed = 1;
    const int32_t sent = send(sync, &committed, 1, MSG_NOSIGNAL) == 1 ? 0 : errno;
    if (send(control, &sent, sizeof(sent), MSG_NOSIGNAL) != sizeof(sent) || sent != 0) _exit(1);
    close(control);

    // Only stockade's code holds the other ends: init (for the container's
    // life) and the command until its execve (both sockets are
    // close-on-exec). Messages are still taken only whole, known and
    // bounded; the listener only as receiveListener checks it.
    UniqueFd listener_wait(listener_socket);
    UniqueFd listener;
    RefusalAnswering answering(source);
    Heard heard;
    int seen = 0;
    while (true) {
        pollfd fds[3];
        nfds_t count = 0;
        fds[count++] = {sync, POLLIN, 0};
        int wait_at = -1, listener_at = -1;
        if (listener_wait) {
            wait_at = static_cast<int>(count);
            fds[count++] = {listener_wait.get(), POLLIN, 0};
        }
        int timeout = -1;
        if (listener) {
            // Past the budget the refused calls wait in the kernel (as under
            // `stockade run`): the flood slows, the monitor's work is bounded.
            if (answering.answering()) {
                listener_at = static_cast<int>(count);
                fds[count++] = {listener.get(), POLLIN, 0};
            } else {
                timeout = answering.pollTimeoutMs();
            }
        }
        if (heard.dirty) {
            const uint64_t now = monotonicMs();
            const uint64_t due = heard.written_ms + kDenialsWriteMs;
            const int until = due > now ? static_cast<int>(due - now) : 0;
            timeout = timeout < 0 ? until : std::min(timeout, until);
        }
        if (poll(fds, count, timeout) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (heard.dirty && monotonicMs() >= heard.written_ms + kDenialsWriteMs)
            writeHeard(dir, id, answering, heard, false);
        if (listener_at >= 0 && fds[listener_at].revents) {
            // POLLHUP alone: no task is left under the filter.
            if (!(fds[listener_at].revents & POLLIN)) {
                listener.reset();
            } else if (!answering.answerOne(listener.get())) {
                listener.reset();  // the kernel answers the rest ENOSYS: never the call
                heard.listener_lost = true;
                heard.dirty = true;
            } else {
                heard.dirty = true;
            }
        }
        if (wait_at >= 0 && fds[wait_at].revents) {
            auto got = seccomp::receiveListener(listener_wait.get());
            listener_wait.reset();
            if (got) {
                listener = std::move(*got);
                heard.listening = true;
            } else {
                // The command ran under a filter without a listener (the
                // kernel gave none: EBUSY under a host filter with one) or
                // never got that far: its refusals are the kernel's.
                heard.not_counted = "no listener reached the monitor: " + got.error().text();
            }
            heard.dirty = true;
        }
        if (!fds[0].revents) continue;
        ChildMessage msg;
        char buf[sizeof(ChildMessage) + 1];
        n = recv(sync, buf, sizeof(buf), MSG_DONTWAIT);
        // ECONNRESET: the command died with "committed" unread, and the
        // kernel says so once, before init's Finished (child_protocol.h).
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == ECONNRESET)) continue;
        if (n <= 0) break;
        if (++seen > kMaxMessages || n != static_cast<ssize_t>(sizeof(msg)) || heard.end.reported)
            continue;
        memcpy(&msg, buf, sizeof(msg));
        hear(msg, heard);
        if (heard.end.reported) writeHeard(dir, id, answering, heard, false);
    }
    // The socket closed: init and the command are gone, and with them every
    // process under the filter. The counts are final. Without a report,
    // init itself was killed (kill 9, delete --force, the caller's
    // subreaper), or ended before the command ran: said so, with the time;
    // the kills kept beside it name a cause.
    if (!heard.end.reported) heard.end.time = rfc3339Now();
    writeHeard(dir, id, answering, heard, !heard.listener_lost);
    // In a pid namespace joined by path, what init did not end (init
    // killed: its orphans live on under that namespace's PID 1) ends with
    // it here, by the container's cgroup (oci/pid_join.h).
    if (flock(dir, LOCK_EX) == 0) {
        auto record = readRecord(dir, id);
        flock(dir, LOCK_UN);
        if (record && record->monitor_pid == getpid() && pidNamespaceJoined(*record))
            (void)killContainerCgroups(record->cgroups);
    }
    _exit(0);
}

}  // namespace

void denialsIntoRecord(std::vector<std::pair<std::string, uint64_t>> counts, Record::Denials& out) {
    std::sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    out.by_name.clear();
    out.others = out.total = 0;
    for (auto& [name, count] : counts) {
        out.total += count;
        if (out.by_name.size() < kMaxDenialNames)
            out.by_name.emplace_back(std::move(name), count);
        else
            out.others += count;
    }
}

bool endFromWaitStatus(int32_t wait_status, Record::End& end) {
    const int status = wait_status;
    if (WIFEXITED(status) && (status & ~0xff00) == 0) {
        end.exit_status = WEXITSTATUS(status);
        return true;
    }
    if (WIFSIGNALED(status) && (status & ~0xff) == 0 && WTERMSIG(status) >= 1 &&
        WTERMSIG(status) <= 64) {
        end.signal = WTERMSIG(status);
        end.core_dumped = WCOREDUMP(status);
        return true;
    }
    return false;
}

Result<Monitor> Monitor::start(int dir_fd, int sync_fd, int listener_socket_fd, FilterSource source,
                               const std::string& id) {
    // Its own open file description: flock belongs to one, and create's is
    // locked until create exits.
    UniqueFd dir(openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) return Error::fromErrno("monitor: open(container directory)");
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
        return Error::fromErrno("monitor: socketpair(AF_UNIX, SOCK_SEQPACKET)");
    UniqueFd ours(pair[0]), theirs(pair[1]);
    const pid_t middle = fork();
    if (middle < 0) return Error::fromErrno("monitor: fork()");
    if (middle == 0) {
        // The middle process: a new session, then the monitor, then gone,
        // so the monitor is reparented to the caller's subreaper and can
        // never take a controlling terminal.
        // It hands create the monitor's pid and a pidfd, opened while the
        // monitor is its own unreaped child (so the pid cannot have been
        // reused): create then need not wait for the monitor to be
        // scheduled before it writes the record.
        if (setsid() < 0) _exit(1);
        const pid_t monitor = fork();
        if (monitor == 0)
            runMonitor(sync_fd, theirs.get(), dir.get(), listener_socket_fd, source, id);
        if (monitor < 0) _exit(1);
        const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, monitor, 0));
        if (pidfd < 0) {
            kill(monitor, SIGKILL);
            _exit(1);
        }
        _exit(sendWithFds(theirs.get(), &monitor, sizeof(monitor), &pidfd, 1) == 0 ? 0 : 1);
    }
    theirs.reset();
    int status = 0;
    while (waitpid(middle, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return Error::message("monitor: fork() in the middle process failed");
    Monitor out;
    out.control_ = std::move(ours);
    pid_t pid = 0;
    int fds[kMaxPassedFds];
    int count = 0;
    bool truncated = false;
    const ssize_t n =
        receiveWithFds(out.control_.get(), &pid, sizeof(pid), fds, &count, 0, &truncated);
    for (int i = 1; i < count; ++i) close(fds[i]);
    if (count > 0) out.pidfd_.reset(fds[0]);
    if (n != sizeof(pid) || count != 1 || truncated || pid <= 1)
        return Error::message("monitor: its pid did not come");
    out.pid_ = pid;
    return out;
}

uint64_t Monitor::startTime() const {
    const uint64_t start = processStartTime(pid_);
    pollfd pfd{pidfd_.get(), POLLIN, 0};
    if (poll(&pfd, 1, 0) != 0) return 0;  // ended (or unknown): not its time
    return start;
}

Status Monitor::commit() {
    const char go = 1;
    if (send(control_.get(), &go, 1, MSG_NOSIGNAL) != 1) {
        Error e = Error::fromErrno("monitor: send(go)");
        end();
        return e;
    }
    int32_t sent = -1;
    ssize_t n;
    while ((n = recv(control_.get(), &sent, sizeof(sent), 0)) < 0 && errno == EINTR) {
    }
    if (n != sizeof(sent) || sent != 0) {
        end();
        if (n == sizeof(sent) && sent > 0) {
            errno = sent;
            return Error::fromErrno("monitor: send(committed)");
        }
        return Error::message("monitor: it ended before it committed the container");
    }
    committed_ = true;
    control_.reset();
    return okStatus();
}

void Monitor::end() {
    control_.reset();
    if (!pidfd_) return;
    syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
    waitForExit(pidfd_.get());
    pidfd_.reset();
}

Monitor::~Monitor() {
    if (!committed_) end();
}

void stopMonitor(const Record& record) {
    if (record.monitor_pid <= 1) return;
    UniqueFd fd(static_cast<int>(syscall(SYS_pidfd_open, record.monitor_pid, 0)));
    if (!fd) return;
    // Checked after opening: a pid reused since is another process.
    if (processStartTime(record.monitor_pid) != record.monitor_start_time) return;
    syscall(SYS_pidfd_send_signal, fd.get(), SIGKILL, nullptr, 0);
    waitForExit(fd.get());
}

}  // namespace stockade::oci
