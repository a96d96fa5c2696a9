// seccomp/denials: refused calls reported by name and count. The rewrite and
// the answers are checked as data; the rest with the kernel: a forked child
// installs the notified filter with a listener and hands it over, and this
// process answers as the supervisor would.

#include <fcntl.h>
#include <linux/keyctl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "seccomp/denials.h"
#include "seccomp/filter.h"
#include "seccomp/install_in_child.h"
#include "seccomp/listener_in_child.h"
#include "seccomp/policy.h"

using namespace stockade;
using namespace stockade::seccomp;

namespace {

constexpr std::uint64_t kHigh = 1ULL << 32;
const long kBadPointer = 1;
// Every wait on the child is bounded by this; a hang is a failure, not a stall.
constexpr int kDeadlineMs = 20000;

int nr(const char* name) {
    SyscallLookup found = lookupSyscall(name);
    REQUIRE(found.kind == SyscallNameKind::Native);
    return found.nr;
}

CompiledFilter mustCompile(const SeccompPolicy& policy) {
    Result<CompiledFilter> compiled = compileFilter(policy);
    INFO((compiled ? "" : compiled.error().describe()));
    REQUIRE(compiled.ok());
    return std::move(compiled.value());
}

seccomp_data call(int number, std::vector<std::uint64_t> args = {}) {
    seccomp_data data{};
    data.nr = number;
    for (std::size_t i = 0; i < args.size() && i < 6; ++i) data.args[i] = args[i];
    return data;
}

std::string errnoText(int err) {
    return err == 0 ? "success" : errnoName(err);
}

long monotonicMs() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1000L + now.tv_nsec / 1000000L;
}

// --- A child under a notified filter, and this process as its supervisor.

struct Answer {
    int want;
    int got;  // 0 when the call succeeded, else its errno
};

struct SupervisedChild {
    pid_t pid = -1;
    UniqueFd listener;
    UniqueFd pidfd;
    UniqueFd report;  // the child's Answers
    UniqueFd go;      // a byte here lets a child that waits for one go on
};

// Forks a child that sets no_new_privs, installs `filter` with a listener,
// sends the listener over a SOCK_SEQPACKET socket (the runtime's order), then
// runs `body(expect, go_fd)`. Between install and _exit the child makes only
// the calls in `body`, write(2), read(2) and those of sendListenerInChild.
template <class Body>
SupervisedChild startSupervised(const CompiledFilter& filter, Body body) {
    int report[2], go[2], sock[2];
    REQUIRE(pipe2(report, O_CLOEXEC) == 0);
    REQUIRE(pipe2(go, O_CLOEXEC) == 0);
    REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(report[0]);
        close(go[1]);
        close(sock[0]);
        // stdin on /dev/null: a TIOCSTI that got through could reach no terminal.
        const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd < 0 || dup2(null_fd, 0) < 0) _exit(120);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0) _exit(121);
        int listener = -1;
        const sock_fprog prog = filter.fprog();
        if (installFilterWithListenerInChild(prog, &listener) != 0) _exit(122);
        if (sendListenerInChild(sock[1], listener) != 0) _exit(123);
        auto expect = [fd = report[1]](int want, long result) {
            const Answer answer{want, result < 0 ? errno : 0};
            if (write(fd, &answer, sizeof answer) != sizeof answer) _exit(124);
        };
        body(expect, go[0]);
        _exit(0);
    }
    close(report[1]);
    close(go[0]);
    close(sock[1]);
    UniqueFd sock_parent(sock[0]);
    SupervisedChild child;
    child.pid = pid;
    child.report.reset(report[0]);
    child.go.reset(go[1]);
    child.pidfd.reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0U)));
    REQUIRE(child.pidfd.valid());
    // The child sends right after installing; should it die first, its end
    // closes and this sees EOF rather than waiting.
    Result<UniqueFd> listener = receiveListener(sock_parent.get());
    INFO((listener ? "" : listener.error().describe()));
    REQUIRE(listener.ok());
    child.listener = std::move(listener.value());
    return child;
}

// The supervisor's loop, as the runtime runs it: answer the listener while
// the child lives.
void superviseUntilExit(DenialCollector& collector, SupervisedChild& child) {
    const long deadline = monotonicMs() + kDeadlineMs;
    while (true) {
        pollfd fds[2] = {{child.listener.get(), POLLIN, 0}, {child.pidfd.get(), POLLIN, 0}};
        const int ready = poll(fds, 2, 1000);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) FAIL("poll: " << errnoName(errno));
        if (fds[0].revents & POLLIN) {
            // Checked only on failure: one assertion per notification would
            // drown the report.
            Status handled = collector.handleOne(child.listener.get());
            if (!handled) FAIL(handled.error().describe());
        }
        if (fds[1].revents & POLLIN) return;
        if (monotonicMs() > deadline) {
            kill(child.pid, SIGKILL);
            FAIL("the child did not finish in time");
        }
    }
}

// Waits until the child has a call pending on the listener.
bool waitForNotification(const SupervisedChild& child) {
    pollfd fd{child.listener.get(), POLLIN, 0};
    const int ready = poll(&fd, 1, kDeadlineMs);
    return ready == 1 && (fd.revents & POLLIN);
}

struct Finished {
    bool exited = false;
    int exit_code = -1;
    int signal = 0;
    std::vector<Answer> answers;
};

Finished reap(SupervisedChild& child) {
    Finished out;
    child.go.reset();
    Answer answer{};
    while (read(child.report.get(), &answer, sizeof answer) == sizeof answer)
        out.answers.push_back(answer);
    int status = 0;
    REQUIRE(waitpid(child.pid, &status, 0) == child.pid);
    out.exited = WIFEXITED(status);
    if (out.exited) out.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
    return out;
}

void checkAnswers(const Finished& out, std::size_t calls) {
    CHECK(out.exited);
    CHECK(out.exit_code == 0);
    CHECK(out.answers.size() == calls);
    for (std::size_t i = 0; i < out.answers.size(); ++i) {
        INFO("call " << i << ": got " << errnoText(out.answers[i].got) << ", want "
                     << errnoText(out.answers[i].want));
        CHECK(out.answers[i].got == out.answers[i].want);
    }
}

std::string describe(const std::vector<Denial>& denials) {
    std::string text;
    for (const Denial& d : denials) text += d.syscall + ":" + std::to_string(d.count) + " ";
    return text;
}

void waitForGo(int fd) {
    char byte;
    while (read(fd, &byte, 1) < 0 && errno == EINTR) {
    }
}

void* keyctlTwentyFiveTimes(void*) {
    for (int i = 0; i < 25; ++i)
        syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0L);
    return nullptr;
}

}  // namespace

// ---------------------------------------------------------------- as data

TEST_CASE("the rewrite notifies refusals and keeps ENOSYS and everything else", "[denials]") {
    const SeccompPolicy original = defaultPolicy();
    const SeccompPolicy notified = withNotifiedDenials(original);
    CHECK(notified.default_action == Action::Notify);
    CHECK(notified.newer_syscalls_enosys == original.newer_syscalls_enosys);
    REQUIRE(notified.rules.size() == original.rules.size());
    for (std::size_t i = 0; i < original.rules.size(); ++i) {
        const SyscallRule& before = original.rules[i];
        const SyscallRule& after = notified.rules[i];
        INFO("rule " << i << " (" << before.names.front() << ")");
        CHECK(after.names == before.names);
        CHECK(after.args == before.args);
        if (before.action == Action::Errno && before.errno_ret != ENOSYS) {
            CHECK(after.action == Action::Notify);
        } else {
            CHECK(after == before);
        }
    }
    // The table, and so what answers ENOSYS, is unchanged.
    const CompiledFilter before = mustCompile(original);
    const CompiledFilter after = mustCompile(notified);
    CHECK(after.highest_known_nr == before.highest_known_nr);

    SeccompPolicy enosys_default;
    enosys_default.default_errno = ENOSYS;
    CHECK(withNotifiedDenials(enosys_default).default_action == Action::Errno);
}

TEST_CASE("the answers are the errnos of the original policy", "[denials]") {
    SECTION("the default policy") {
        const DenialAnswers answers(defaultPolicy());
        CHECK(answers.errnoFor(call(nr("keyctl"))) == EPERM);
        CHECK(answers.errnoFor(call(nr("unshare"), {CLONE_NEWUSER})) == EPERM);
        // Conditional refusals: the compiler puts them in an overlay or
        // leaves them to the default action; both are EPERM here.
        CHECK(answers.errnoFor(call(nr("ioctl"), {0, TIOCSTI | kHigh})) == EPERM);
        CHECK(answers.errnoFor(call(nr("ioctl"), {0, TIOCLINUX})) == EPERM);
        CHECK(answers.errnoFor(call(nr("socket"), {AF_PACKET, SOCK_RAW})) == EPERM);
        CHECK(answers.errnoFor(call(nr("clone"), {CLONE_NEWUSER | SIGCHLD})) == EPERM);
        CHECK(answers.errnoFor(call(nr("personality"), {0xffff})) == EPERM);
        // A number the table does not name: the default action.
        CHECK(answers.errnoFor(call(400)) == EPERM);
    }
    SECTION("custom errnos, conditional and unconditional") {
        SeccompPolicy policy;
        policy.default_action = Action::Errno;
        policy.default_errno = EXDEV;
        policy.rules = {
            {{"keyctl"}, Action::Errno, EACCES, {}},
            {{"mount"}, Action::Errno, EPERM, {}},
            {{"mount"}, Action::Errno, EBUSY, {{3, CompareOp::MaskedEqual, 0x1, 0x1}}},
            {{"getppid"}, Action::Allow, 0, {}},
            {{"getppid"}, Action::Errno, ELOOP, {{0, CompareOp::Equal, 7, 0}}},
            {{"socket"}, Action::Errno, EAFNOSUPPORT, {{0, CompareOp::Greater, 10, 0}}},
            {{"acct"}, Action::Notify, 0, {}},
            {{"sync"}, Action::Errno, ENOSYS, {}},
        };
        const DenialAnswers answers(policy);
        CHECK(answers.errnoFor(call(nr("keyctl"))) == EACCES);
        CHECK(answers.errnoFor(call(nr("mount"), {0, 0, 0, 0x3})) == EBUSY);
        CHECK(answers.errnoFor(call(nr("mount"), {0, 0, 0, 0x2})) == EPERM);
        CHECK(answers.errnoFor(call(nr("getppid"), {7})) == ELOOP);
        CHECK(answers.errnoFor(call(nr("socket"), {17})) == EAFNOSUPPORT);
        // No conditional refusal matches, no unconditional rule: the default.
        CHECK(answers.errnoFor(call(nr("socket"), {2})) == EXDEV);
        CHECK(answers.errnoFor(call(nr("read"))) == EXDEV);
        // The policy's own Notify gets what it gets with no listener.
        CHECK(answers.errnoFor(call(nr("acct"))) == ENOSYS);
        // Not a refusal the filter would notify: never let it run.
        CHECK(answers.errnoFor(call(nr("getppid"), {0})) == EPERM);
    }
}

TEST_CASE("numbers are named by libseccomp, then the policy, then by number", "[denials]") {
    const DenialAnswers answers(defaultPolicy());
    CHECK(answers.nameOf(nr("keyctl")) == "keyctl");
    CHECK(answers.nameOf(0) == "read");
    // Newer than libseccomp 2.5.4: named from the policy's own table.
    CHECK(answers.nameOf(nr("open_tree_attr")) == "open_tree_attr");
    CHECK(answers.nameOf(nr("lsm_set_self_attr")) == "lsm_set_self_attr");
    CHECK(answers.nameOf(1000) == "syscall_1000");
}

TEST_CASE("denials are reportable only where the child can hand the listener over", "[denials]") {
    CHECK(checkDenialsReportable(defaultPolicy()).ok());

    SeccompPolicy policy;
    policy.rules = {{{"write", "close", "exit_group"}, Action::Allow, 0, {}}};
    Status refused = checkDenialsReportable(policy);
    REQUIRE(!refused.ok());
    CHECK_THAT(refused.error().describe(), Catch::Contains("sendmsg"));

    // A refusal that could hold for the child's sendmsg(fd, msg,
    // MSG_NOSIGNAL) stops it; one that cannot (MSG_FASTOPEN, which the
    // default policy refuses) does not.
    policy.rules = {{{"sendmsg", "close"}, Action::Allow, 0, {}},
                    {{"sendmsg"}, Action::Errno, EPERM, {{0, CompareOp::Equal, 3, 0}}}};
    CHECK(!checkDenialsReportable(policy).ok());
    policy.rules = {{{"sendmsg", "close"}, Action::Allow, 0, {}},
                    {{"sendmsg"},
                     Action::Errno,
                     EPERM,
                     {{2, CompareOp::MaskedEqual, MSG_NOSIGNAL, MSG_NOSIGNAL}}}};
    CHECK(!checkDenialsReportable(policy).ok());
    policy.rules = {{{"sendmsg", "close"}, Action::Allow, 0, {}},
                    {{"sendmsg"},
                     Action::Errno,
                     EOPNOTSUPP,
                     {{2, CompareOp::MaskedEqual, MSG_FASTOPEN, MSG_FASTOPEN}}}};
    CHECK(checkDenialsReportable(policy).ok());

    SeccompPolicy allowing;
    allowing.default_action = Action::Allow;
    allowing.rules = {{{"keyctl"}, Action::Errno, EPERM, {}}};
    CHECK(checkDenialsReportable(allowing).ok());
}

TEST_CASE("the listener travels over a SOCK_SEQPACKET socket, close-on-exec", "[denials]") {
    int sock[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock) == 0);
    UniqueFd parent_end(sock[0]), child_end(sock[1]);
    // Any fd travels alike; an eventfd stands in for the listener.
    const int stand_in = eventfd(0, EFD_CLOEXEC);
    REQUIRE(stand_in >= 0);
    CHECK(sendListenerInChild(child_end.get(), stand_in) == 0);
    CHECK(fcntl(stand_in, F_GETFD) == -1);  // the sender's copy is closed
    Result<UniqueFd> received = receiveListener(parent_end.get());
    REQUIRE(received.ok());
    CHECK((fcntl(received->get(), F_GETFD) & FD_CLOEXEC) != 0);

    SECTION("another message is refused") {
        const char other[] = "hello";
        REQUIRE(send(child_end.get(), other, sizeof other, 0) == sizeof other);
        Result<UniqueFd> wrong = receiveListener(parent_end.get());
        REQUIRE(!wrong.ok());
        CHECK_THAT(wrong.error().describe(), Catch::Contains("another message"));
    }
    SECTION("EOF is an error, not a wait") {
        child_end.reset();
        Result<UniqueFd> eof = receiveListener(parent_end.get());
        REQUIRE(!eof.ok());
        CHECK_THAT(eof.error().describe(), Catch::Contains("without sending"));
    }
}

// ---------------------------------------------- installed, the kernel answers

TEST_CASE("installed in a child, each refused call is answered EPERM and counted",
          "[denials][kernel]") {
    const SeccompPolicy policy = defaultPolicy();
    const CompiledFilter filter = mustCompile(withNotifiedDenials(policy));
    const long above_table = filter.highest_known_nr + 1;
    char c = 'x';
    SupervisedChild child = startSupervised(filter, [&](auto expect, int) {
        expect(EPERM, syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0L));
        expect(EPERM, syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0L));
        // unshare(CLONE_NEWUSER) and socket(AF_PACKET) would succeed here as
        // root were they performed: EPERM is the supervisor's answer.
        expect(EPERM, syscall(SYS_unshare, CLONE_NEWUSER));
        expect(EPERM, syscall(SYS_socket, AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
        expect(EPERM, syscall(SYS_ioctl, 0, TIOCSTI | kHigh, &c));
        // ENOSYS stays in the kernel and is not reported.
        expect(ENOSYS, syscall(SYS_clone3, kBadPointer, 88L));
        expect(ENOSYS, syscall(above_table, -1L, kBadPointer, 0L));
        expect(0, syscall(SYS_getpid));
    });
    DenialCollector collector{DenialAnswers(policy)};
    superviseUntilExit(collector, child);
    checkAnswers(reap(child), 8);
    const std::vector<Denial> want = {{"ioctl", 1}, {"keyctl", 2}, {"socket", 1}, {"unshare", 1}};
    INFO("denials: " << describe(collector.denials()));
    CHECK(collector.denials() == want);
    CHECK(collector.total() == 5);
}

TEST_CASE("installed in a child, a policy's own errnos are the answers", "[denials][kernel]") {
    SeccompPolicy policy;
    policy.default_action = Action::Errno;
    policy.default_errno = EXDEV;
    policy.rules = {
        // What the child itself needs; sigaltstack for AddressSanitizer's _exit.
        {{"read", "write", "close", "sendmsg", "exit_group", "getpid", "sigaltstack"},
         Action::Allow,
         0,
         {}},
        {{"keyctl"}, Action::Errno, 13, {}},
        {{"getppid"}, Action::Allow, 0, {}},
        {{"getppid"}, Action::Errno, ELOOP, {{0, CompareOp::Equal, 7, 0}}},
        {{"sync"}, Action::Errno, ENOSYS, {}},
    };
    REQUIRE(checkDenialsReportable(policy).ok());
    const CompiledFilter filter = mustCompile(withNotifiedDenials(policy));
    REQUIRE(nr("acct") < filter.highest_known_nr);
    SupervisedChild child = startSupervised(filter, [](auto expect, int) {
        expect(13, syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0L));
        expect(ELOOP, syscall(SYS_getppid, 7L));
        expect(0, syscall(SYS_getppid, 0L));
        expect(EXDEV, syscall(SYS_acct, kBadPointer));
        expect(ENOSYS, syscall(SYS_sync));
    });
    DenialCollector collector{DenialAnswers(policy)};
    superviseUntilExit(collector, child);
    checkAnswers(reap(child), 5);
    const std::vector<Denial> want = {{"acct", 1}, {"getppid", 1}, {"keyctl", 1}};
    INFO("denials: " << describe(collector.denials()));
    CHECK(collector.denials() == want);
}

TEST_CASE("installed in a child, every thread's refusals are counted, clone3 probes are not",
          "[denials][kernel]") {
    const SeccompPolicy policy = defaultPolicy();
    const CompiledFilter filter = mustCompile(withNotifiedDenials(policy));
    SupervisedChild child = startSupervised(filter, [](auto expect, int) {
        // glibc tries clone3 first (ENOSYS, in the kernel), then clone.
        pthread_t threads[4];
        for (pthread_t& thread : threads)
            expect(0, -pthread_create(&thread, nullptr, keyctlTwentyFiveTimes, nullptr));
        for (pthread_t& thread : threads) expect(0, -pthread_join(thread, nullptr));
    });
    DenialCollector collector{DenialAnswers(policy)};
    superviseUntilExit(collector, child);
    checkAnswers(reap(child), 8);
    const std::vector<Denial> want = {{"keyctl", 100}};
    INFO("denials: " << describe(collector.denials()));
    CHECK(collector.denials() == want);
}

TEST_CASE("installed in a child, ordinary programs run under the notified filter",
          "[denials][kernel]") {
    const SeccompPolicy policy = defaultPolicy();
    const CompiledFilter filter = mustCompile(withNotifiedDenials(policy));
    SupervisedChild child = startSupervised(filter, [](auto, int) {
        const char* argv[] = {"/bin/sh", "-c",
                              "echo hi | cat >/dev/null && ls / >/dev/null && exit 7", nullptr};
        execv(argv[0], const_cast<char* const*>(argv));
        _exit(127);
    });
    DenialCollector collector{DenialAnswers(policy)};
    superviseUntilExit(collector, child);
    const Finished out = reap(child);
    CHECK(out.exited);
    CHECK(out.exit_code == 7);
    INFO("denials: " << describe(collector.denials()));
    CHECK(collector.denials().empty());
}

namespace {
volatile sig_atomic_t g_alarm_fired = 0;
void onAlarm(int) {
    g_alarm_fired = 1;
}
}  // namespace

TEST_CASE("a child killed while its call waits does not fail the collector", "[denials][kernel]") {
    const SeccompPolicy policy = defaultPolicy();
    const CompiledFilter filter = mustCompile(withNotifiedDenials(policy));
    SupervisedChild child = startSupervised(filter, [](auto expect, int) {
        expect(EPERM, syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0L));
    });
    REQUIRE(waitForNotification(child));
    // Killed between the wake-up and the answer, as a timeout kills.
    REQUIRE(kill(child.pid, SIGKILL) == 0);
    const Finished out = reap(child);
    CHECK(out.signal == SIGKILL);
    CHECK(out.answers.empty());

    // Should the receive block after all, an alarm breaks it (EINTR) and the
    // test fails on the flag instead of hanging.
    struct sigaction on_alarm {};
    on_alarm.sa_handler = onAlarm;
    struct sigaction previous {};
    REQUIRE(sigaction(SIGALRM, &on_alarm, &previous) == 0);
    g_alarm_fired = 0;
    alarm(5);
    DenialCollector collector{DenialAnswers(policy)};
    Status handled = collector.handleOne(child.listener.get());
    alarm(0);
    sigaction(SIGALRM, &previous, nullptr);
    INFO((handled ? "" : handled.error().describe()));
    CHECK(handled.ok());
    CHECK(g_alarm_fired == 0);
    CHECK(collector.total() == 0);
    CHECK(collector.denials().empty());
}

TEST_CASE("with no supervisor answering, a notified call fails with ENOSYS and never runs",
          "[denials][kernel]") {
    const CompiledFilter filter = mustCompile(withNotifiedDenials(defaultPolicy()));
    SECTION("the listener is closed before the call") {
        SupervisedChild child = startSupervised(filter, [](auto expect, int go) {
            waitForGo(go);
            // Each of these would succeed here if performed.
            expect(ENOSYS,
                   syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0L));
            expect(ENOSYS, syscall(SYS_unshare, CLONE_NEWUSER));
            expect(0, syscall(SYS_getpid));
        });
        child.listener.reset();
        checkAnswers(reap(child), 3);  // reap() closes `go`
    }
    SECTION("the listener is closed while the call waits (the supervisor died)") {
        SupervisedChild child = startSupervised(filter, [](auto expect, int) {
            expect(ENOSYS, syscall(SYS_unshare, CLONE_NEWUSER));
            expect(0, syscall(SYS_getpid));
        });
        REQUIRE(waitForNotification(child));
        child.listener.reset();
        checkAnswers(reap(child), 2);
    }
}

TEST_CASE("installed in a child, numbers outside the tracked range are counted as other",
          "[denials][kernel]") {
    // libseccomp lets -1 through to the default action (ptrace uses it to skip
    // a call), so the default's refusal is notified with that number.
    const SeccompPolicy policy = defaultPolicy();
    const CompiledFilter filter = mustCompile(withNotifiedDenials(policy));
    SupervisedChild child = startSupervised(filter, [](auto expect, int) {
        expect(EPERM, syscall(-1L));
        expect(EPERM, syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0L));
    });
    DenialCollector collector{DenialAnswers(policy)};
    superviseUntilExit(collector, child);
    checkAnswers(reap(child), 2);
    const std::vector<Denial> want = {{"keyctl", 1}, {"other", 1}};
    INFO("denials: " << describe(collector.denials()));
    CHECK(collector.denials() == want);
}
