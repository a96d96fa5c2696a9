// seccomp/: the default policy, the OCI importer, the compiler and the
// child-side installer. Two kinds of evidence: the compiled program run in a
// small BPF interpreter (every syscall number, exact answers), and the same
// program installed in a forked child, where the kernel answers.

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/keyctl.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "seccomp/filter.h"
#include "seccomp/install_in_child.h"
#include "seccomp/oci_import.h"
#include "seccomp/policy.h"

using namespace stockade;
using namespace stockade::seccomp;

namespace {

constexpr std::uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr std::uint32_t kKillProcess = SECCOMP_RET_KILL_PROCESS;
constexpr std::uint32_t errnoAnswer(int err) {
    return SECCOMP_RET_ERRNO | static_cast<std::uint32_t>(err);
}
constexpr std::uint64_t kHigh = 1ULL << 32;
const long kBadPointer = 1;

std::filesystem::path fixtures() {
    if (const char* dir = std::getenv("STOCKADE_SOURCE_DIR"))
        return std::filesystem::path(dir) / "tests/fixtures/seccomp";
    return std::filesystem::path(STOCKADE_SOURCE_DIR) / "tests/fixtures/seccomp";
}

CompiledFilter mustCompile(const SeccompPolicy& policy) {
    Result<CompiledFilter> compiled = compileFilter(policy);
    INFO((compiled ? "" : compiled.error().describe()));
    REQUIRE(compiled.ok());
    return std::move(compiled.value());
}

SeccompPolicy mustLoad(const std::string& name, const OciImportOptions& options = {}) {
    Result<SeccompPolicy> policy = loadOciSeccompFile(fixtures() / name, options);
    INFO((policy ? "" : policy.error().describe()));
    REQUIRE(policy.ok());
    return std::move(policy.value());
}

int nr(const char* name) {
    SyscallLookup found = lookupSyscall(name);
    REQUIRE(found.kind == SyscallNameKind::Native);
    return found.nr;
}

// --- A classic BPF interpreter, enough for what libseccomp and filter.cpp emit.

std::uint32_t runProgram(const std::vector<sock_filter>& program, const seccomp_data& data) {
    std::uint32_t a = 0, x = 0;
    std::uint32_t mem[BPF_MEMWORDS] = {};
    const auto* bytes = reinterpret_cast<const unsigned char*>(&data);
    for (std::size_t pc = 0; pc < program.size(); ++pc) {
        const sock_filter& f = program[pc];
        auto branch = [&](bool taken) { pc += taken ? f.jt : f.jf; };
        const std::uint32_t operand = BPF_SRC(f.code) == BPF_X ? x : f.k;
        switch (f.code) {
            case BPF_LD | BPF_W | BPF_ABS:
                REQUIRE((f.k % 4 == 0 && f.k + 4 <= sizeof data));
                std::memcpy(&a, bytes + f.k, 4);
                break;
            case BPF_LD | BPF_IMM:
                a = f.k;
                break;
            case BPF_LDX | BPF_IMM:
                x = f.k;
                break;
            case BPF_LD | BPF_MEM:
                a = mem[f.k];
                break;
            case BPF_LDX | BPF_MEM:
                x = mem[f.k];
                break;
            case BPF_ST:
                mem[f.k] = a;
                break;
            case BPF_STX:
                mem[f.k] = x;
                break;
            case BPF_ALU | BPF_AND | BPF_K:
            case BPF_ALU | BPF_AND | BPF_X:
                a &= operand;
                break;
            case BPF_ALU | BPF_OR | BPF_K:
            case BPF_ALU | BPF_OR | BPF_X:
                a |= operand;
                break;
            case BPF_MISC | BPF_TAX:
                x = a;
                break;
            case BPF_MISC | BPF_TXA:
                a = x;
                break;
            case BPF_JMP | BPF_JA:
                pc += f.k;
                break;
            case BPF_JMP | BPF_JEQ | BPF_K:
            case BPF_JMP | BPF_JEQ | BPF_X:
                branch(a == operand);
                break;
            case BPF_JMP | BPF_JGT | BPF_K:
            case BPF_JMP | BPF_JGT | BPF_X:
                branch(a > operand);
                break;
            case BPF_JMP | BPF_JGE | BPF_K:
            case BPF_JMP | BPF_JGE | BPF_X:
                branch(a >= operand);
                break;
            case BPF_JMP | BPF_JSET | BPF_K:
            case BPF_JMP | BPF_JSET | BPF_X:
                branch((a & operand) != 0);
                break;
            case BPF_RET | BPF_K:
                return f.k;
            case BPF_RET | BPF_A:
                return a;
            default:
                FAIL("instruction " << pc << " has code " << f.code);
        }
    }
    FAIL("the program ran off its end");
    return 0;
}

std::uint32_t answer(const CompiledFilter& filter, long number,
                     std::vector<std::uint64_t> args = {}, std::uint32_t arch = AUDIT_ARCH_X86_64) {
    seccomp_data data{};
    data.nr = static_cast<int>(number);
    data.arch = arch;
    for (std::size_t i = 0; i < args.size() && i < 6; ++i) data.args[i] = args[i];
    return runProgram(filter.program, data);
}

// --- Running code under a filter in a forked child.

struct ChildOutcome {
    bool exited = false;
    int exit_code = -1;
    int signal = 0;
    struct Answer {
        int want;
        int got;  // 0 when the call succeeded, else its errno
    };
    std::vector<Answer> answers;
};

// The child: stdin on /dev/null (so a TIOCSTI that got through could not
// reach a terminal), no_new_privs, the filter, then `body`, which reports each
// call with `expect(errno it should get or 0, result)`. Between install and
// _exit it makes only the calls in `body` and write(2).
template <class Body>
ChildOutcome runFiltered(const CompiledFilter& filter, Body body) {
    int fds[2];
    REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd < 0 || dup2(null_fd, 0) < 0) _exit(120);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0) _exit(121);
        const sock_fprog prog = filter.fprog();
        if (installFilterInChild(prog) != 0) _exit(122);
        auto expect = [fd = fds[1]](int want, long result) {
            const ChildOutcome::Answer answer{want, result < 0 ? errno : 0};
            if (write(fd, &answer, sizeof answer) != sizeof answer) _exit(123);
        };
        body(expect);
        _exit(0);
    }
    close(fds[1]);
    ChildOutcome out;
    ChildOutcome::Answer answer{};
    while (read(fds[0], &answer, sizeof answer) == sizeof answer) out.answers.push_back(answer);
    close(fds[0]);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    out.exited = WIFEXITED(status);
    if (out.exited) out.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
    return out;
}

std::string errnoText(int err) {
    return err == 0 ? "success" : errnoName(err);
}

void checkAnswers(const ChildOutcome& out, std::size_t calls) {
    CHECK(out.answers.size() == calls);
    for (std::size_t i = 0; i < out.answers.size(); ++i) {
        INFO("call " << i << ": got " << errnoText(out.answers[i].got) << ", want "
                     << errnoText(out.answers[i].want));
        CHECK(out.answers[i].got == out.answers[i].want);
    }
}

}  // namespace

// ---------------------------------------------------------------- the policy

TEST_CASE("the default policy compiles to one program the kernel can take", "[seccomp]") {
    const CompiledFilter filter = mustCompile(defaultPolicy());
    CHECK(!filter.program.empty());
    CHECK(filter.program.size() <= 4096);
    // The table ends at the newest call stockade knows (file_setattr, 6.17).
    CHECK(filter.highest_known_nr == nr("file_setattr"));
    // 32-bit-only names are for other architectures, and only those are skipped.
    const auto& skipped = filter.skipped_names;
    CHECK(std::find(skipped.begin(), skipped.end(), "chown32") != skipped.end());
    CHECK(std::find(skipped.begin(), skipped.end(), "vm86") != skipped.end());
    CHECK(std::find(skipped.begin(), skipped.end(), "read") == skipped.end());
    const sock_fprog prog = filter.fprog();
    CHECK(prog.len == filter.program.size());
    CHECK(prog.filter == filter.program.data());
}

TEST_CASE("the default policy answers every syscall number as it says", "[seccomp]") {
    const SeccompPolicy policy = defaultPolicy();
    const CompiledFilter filter = mustCompile(policy);

    // What each number should get when no argument matters.
    std::map<int, std::uint32_t> expected;
    std::set<int> conditional;
    for (const SyscallRule& rule : policy.rules) {
        for (const std::string& name : rule.names) {
            SyscallLookup found = lookupSyscall(name);
            if (found.kind != SyscallNameKind::Native) continue;
            if (!rule.args.empty()) {
                conditional.insert(found.nr);
                continue;
            }
            expected[found.nr] =
                rule.action == Action::Allow ? kAllow : errnoAnswer(rule.errno_ret);
        }
    }
    for (int n = 0; n <= filter.highest_known_nr; ++n) {
        if (conditional.count(n) && !expected.count(n)) continue;
        INFO("syscall " << n);
        const std::uint32_t want = expected.count(n) ? expected[n] : errnoAnswer(EPERM);
        CHECK(answer(filter, n) == want);
    }
    for (int name_nr : {nr("read"), nr("execve"), nr("openat"), nr("futex"), nr("rseq")})
        CHECK(answer(filter, name_nr) == kAllow);
    const char* const must_be_eperm[] = {
        // Keyring, namespaces, the mount API:
        "keyctl", "add_key", "request_key", "unshare", "setns", "mount", "umount2", "pivot_root",
        "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
        "open_tree_attr",
        // other processes, kernel attack surface, modules, kexec, file handles:
        "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "bpf",
        "perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd",
        "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
        "open_by_handle_at", "name_to_handle_at",
        // host-wide state.
        "clock_settime", "settimeofday", "adjtimex", "clock_adjtime", "sethostname",
        "setdomainname", "acct", "swapon", "swapoff", "reboot", "quotactl", "lookup_dcookie",
        "nfsservctl", "iopl", "ioperm", "syslog"};
    for (const char* name : must_be_eperm) {
        INFO(name);
        CHECK(answer(filter, nr(name)) == errnoAnswer(EPERM));
    }
    CHECK(answer(filter, nr("clone3")) == errnoAnswer(ENOSYS));

    // Above the table: ENOSYS, all the way up to the x32 bit.
    for (long n : {filter.highest_known_nr + 1L, 512L, 547L, 1000L, 0x3fffffffL}) {
        INFO("syscall " << n);
        CHECK(answer(filter, n) == errnoAnswer(ENOSYS));
    }
    // Unnamed numbers inside the table (a gap in x86_64's numbering): EPERM.
    CHECK(answer(filter, 400) == errnoAnswer(EPERM));

    // Other ABIs die.
    CHECK(answer(filter, 0x40000000L | nr("getpid")) == kKillProcess);
    CHECK(answer(filter, 0x40000000L | 512) == kKillProcess);
    CHECK(answer(filter, 20, {}, AUDIT_ARCH_I386) == kKillProcess);
    CHECK(answer(filter, nr("read"), {}, AUDIT_ARCH_AARCH64) == kKillProcess);
}

TEST_CASE("the default policy looks at ioctl, socket, personality and clone arguments",
          "[seccomp]") {
    const CompiledFilter filter = mustCompile(defaultPolicy());
    const int ioctl_nr = nr("ioctl");
    for (std::uint64_t command :
         {std::uint64_t{TIOCSTI}, std::uint64_t{TIOCLINUX}, std::uint64_t{TIOCSETD}}) {
        INFO("command " << command);
        CHECK(answer(filter, ioctl_nr, {0, command}) == errnoAnswer(EPERM));
        CHECK(answer(filter, ioctl_nr, {0, command | kHigh}) == errnoAnswer(EPERM));
        CHECK(answer(filter, ioctl_nr, {0, command | 0xffffffff00000000ULL}) == errnoAnswer(EPERM));
    }
    for (std::uint64_t command :
         {std::uint64_t{TCGETS}, std::uint64_t{TIOCGWINSZ}, std::uint64_t{FIONREAD},
          std::uint64_t{TIOCSTI + 1}, std::uint64_t{0}}) {
        INFO("command " << command);
        CHECK(answer(filter, ioctl_nr, {0, command}) == kAllow);
    }

    for (const char* name : {"socket", "socketpair"}) {
        for (std::uint64_t family : {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK})
            CHECK(answer(filter, nr(name), {family, SOCK_STREAM}) == kAllow);
        for (std::uint64_t family : {AF_PACKET, AF_VSOCK, AF_ALG, AF_KEY, AF_BLUETOOTH, 0})
            CHECK(answer(filter, nr(name), {family, SOCK_STREAM}) == errnoAnswer(EPERM));
        // The kernel reads the family as an int: AF_UNIX with high bits is
        // AF_UNIX to it, and the filter refuses rather than guess.
        CHECK(answer(filter, nr(name), {AF_UNIX | kHigh}) == errnoAnswer(EPERM));
        // IP by protocol: the usual ones pass, MPTCP (which Landlock's TCP
        // rules do not see) and anything else is refused, high bits too.
        for (std::uint64_t family : {AF_INET, AF_INET6}) {
            INFO("family " << family);
            for (std::uint64_t protocol :
                 {0, int{IPPROTO_TCP}, int{IPPROTO_UDP}, int{IPPROTO_UDPLITE}})
                CHECK(answer(filter, nr(name), {family, SOCK_STREAM, protocol}) == kAllow);
            for (std::uint64_t protocol :
                 {std::uint64_t{IPPROTO_MPTCP}, std::uint64_t{IPPROTO_SCTP},
                  std::uint64_t{IPPROTO_MPTCP} | kHigh, std::uint64_t{IPPROTO_TCP} | kHigh})
                CHECK(answer(filter, nr(name), {family, SOCK_STREAM, protocol}) ==
                      errnoAnswer(EPERM));
        }
        CHECK(answer(filter, nr(name), {AF_INET, SOCK_DGRAM, IPPROTO_ICMP}) == kAllow);
        CHECK(answer(filter, nr(name), {AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6}) == kAllow);
    }

    // TCP Fast Open connects inside sendto/sendmsg/sendmmsg, past Landlock's
    // connect rule: refused as a kernel with client TFO off refuses it.
    for (const auto& [name, flags_index] :
         {std::pair{"sendto", 3}, std::pair{"sendmsg", 2}, std::pair{"sendmmsg", 3}}) {
        INFO(name);
        std::vector<std::uint64_t> args(6, 0);
        CHECK(answer(filter, nr(name), args) == kAllow);
        args[flags_index] = MSG_NOSIGNAL | MSG_DONTWAIT;
        CHECK(answer(filter, nr(name), args) == kAllow);
        for (std::uint64_t flags :
             {std::uint64_t{MSG_FASTOPEN}, std::uint64_t{MSG_FASTOPEN | MSG_NOSIGNAL},
              std::uint64_t{MSG_FASTOPEN} | kHigh}) {
            args[flags_index] = flags;
            CHECK(answer(filter, nr(name), args) == errnoAnswer(EOPNOTSUPP));
        }
    }

    for (std::uint64_t persona : {0x0ULL, 0x8ULL, 0x20000ULL, 0x20008ULL, 0xffffffffULL})
        CHECK(answer(filter, nr("personality"), {persona}) == kAllow);
    for (std::uint64_t persona : {std::uint64_t{0xffff}, std::uint64_t{ADDR_NO_RANDOMIZE},
                                  std::uint64_t{READ_IMPLIES_EXEC}, kHigh})
        CHECK(answer(filter, nr("personality"), {persona}) == errnoAnswer(EPERM));

    const std::uint64_t thread_flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
                                       CLONE_THREAD | CLONE_SYSVSEM | CLONE_SETTLS |
                                       CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
    CHECK(answer(filter, nr("clone"), {SIGCHLD}) == kAllow);
    CHECK(answer(filter, nr("clone"), {thread_flags}) == kAllow);
    CHECK(answer(filter, nr("clone"), {CLONE_VM | CLONE_VFORK | SIGCHLD}) == kAllow);
    for (std::uint64_t flag : {CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                               CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET}) {
        INFO("flag " << flag);
        CHECK(answer(filter, nr("clone"), {flag | SIGCHLD}) == errnoAnswer(EPERM));
    }
}

TEST_CASE("the default policy refuses every mode with a setuid or setgid bit", "[seccomp][G3]") {
    const CompiledFilter filter = mustCompile(defaultPolicy());
    // name, index of the mode, and the flags argument (with its index) that
    // makes open and openat read their mode.
    struct Case {
        const char* name;
        unsigned mode_index;
        int flags_index;
    };
    const Case cases[] = {{"chmod", 1, -1},     {"fchmod", 1, -1}, {"fchmodat", 2, -1},
                          {"fchmodat2", 2, -1}, {"creat", 1, -1},  {"mknod", 1, -1},
                          {"mknodat", 2, -1},   {"open", 2, 1},    {"openat", 3, 2}};
    const std::uint64_t tmpfile = 020000000 | O_DIRECTORY;
    for (const Case& c : cases) {
        INFO(c.name);
        std::vector<std::uint64_t> args(6, 0);
        if (c.flags_index >= 0) args[static_cast<size_t>(c.flags_index)] = O_CREAT | O_WRONLY;
        for (std::uint64_t mode : {0755ULL, 0644ULL, 01777ULL, 0ULL, 0777ULL | kHigh}) {
            args[c.mode_index] = mode;
            CHECK(answer(filter, nr(c.name), args) == kAllow);
        }
        for (std::uint64_t mode : {04755ULL, 02755ULL, 06755ULL, 04000ULL, 02000ULL,
                                   0100000ULL | 04755, 04755ULL | kHigh}) {
            INFO("mode " << std::oct << mode);
            args[c.mode_index] = mode;
            CHECK(answer(filter, nr(c.name), args) == errnoAnswer(EPERM));
        }
        if (c.flags_index >= 0) {
            // Without O_CREAT or O_TMPFILE the mode is not read: any value passes.
            args[c.mode_index] = 06755;
            args[static_cast<size_t>(c.flags_index)] = O_RDONLY;
            CHECK(answer(filter, nr(c.name), args) == kAllow);
            args[static_cast<size_t>(c.flags_index)] = tmpfile | O_RDWR;
            CHECK(answer(filter, nr(c.name), args) == errnoAnswer(EPERM));
        }
    }
    // Its mode is in memory: the whole call answers as on a kernel before 5.6.
    CHECK(answer(filter, nr("openat2"), {0, 0, 0, 24}) == errnoAnswer(ENOSYS));
    // fs.aio-max-nr is one number for the machine.
    CHECK(answer(filter, nr("io_setup"), {128, 0}) == errnoAnswer(ENOSYS));
    CHECK(answer(filter, nr("io_submit")) == kAllow);
}

TEST_CASE("a user's policy with its own conditions on a mode-setting call is refused",
          "[seccomp][G3]") {
    // A conditional ALLOW on another argument could decide before the mode
    // is looked at (libseccomp orders conditional rules itself).
    for (const char* name : {"chmod", "fchmodat", "openat", "mknodat"}) {
        INFO(name);
        SeccompPolicy policy;
        policy.default_action = Action::Log;
        policy.rules = {{{name}, Action::Allow, 0, {{0, CompareOp::MaskedEqual, 0, 0}}}};
        const Status held = checkNoSetidRulesHold(policy);
        REQUIRE(!held.ok());
        CHECK_THAT(held.error().describe(), Catch::Contains(name));
    }
    SeccompPolicy plain;
    plain.rules = {{{"chmod", "openat"}, Action::Allow, 0, {}},
                   {{"socket"}, Action::Allow, 0, {{0, CompareOp::Equal, 1, 0}}}};
    CHECK(checkNoSetidRulesHold(plain).ok());
}

TEST_CASE("a user's policy gets the setuid refusals too, and its own openat2 rule goes",
          "[seccomp][G3]") {
    SeccompPolicy policy;
    policy.default_action = Action::Allow;
    policy.rules = {{{"openat2", "read"}, Action::Allow, 0, {}},
                    {{"chmod"}, Action::Allow, 0, {{1, CompareOp::Equal, 04755, 0}}},
                    {{"openat2"}, Action::Errno, EACCES, {}}};
    addNoSetidRules(policy);
    const CompiledFilter filter = mustCompile(policy);
    CHECK(answer(filter, nr("chmod"), {0, 04755}) == errnoAnswer(EPERM));
    CHECK(answer(filter, nr("chmod"), {0, 0755}) == kAllow);
    CHECK(answer(filter, nr("openat2")) == errnoAnswer(ENOSYS));
    CHECK(answer(filter, nr("read")) == kAllow);
}

TEST_CASE("a process that may remount cannot make a read-only mount writable", "[seccomp]") {
    // Over a permissive policy (a bundle with no filter) and over one that
    // allows mount and mount_setattr whole (podman's with CAP_SYS_ADMIN).
    SeccompPolicy open;
    open.default_action = Action::Allow;
    SeccompPolicy podmans;
    podmans.rules = {{{"mount", "mount_setattr", "open_tree_attr", "read"}, Action::Allow, 0, {}}};
    for (SeccompPolicy policy : {open, podmans}) {
        REQUIRE(checkNoRemountWritableRulesHold(policy).ok());
        addNoRemountWritableRules(policy);
        const CompiledFilter filter = mustCompile(policy);
        for (std::uint64_t flags :
             {std::uint64_t{MS_REMOUNT}, std::uint64_t{MS_REMOUNT | MS_BIND},
              MS_REMOUNT | MS_BIND | MS_NOSUID | kHigh, std::uint64_t{MS_MGC_VAL | MS_REMOUNT}}) {
            INFO("flags " << std::hex << flags);
            CHECK(answer(filter, nr("mount"), {0, 0, 0, flags}) == errnoAnswer(EPERM));
        }
        // Kept or made read-only, a new mount, a bind (it keeps its
        // source's read-only flag), a move: the kernel decides.
        for (std::uint64_t flags :
             {std::uint64_t{MS_REMOUNT | MS_RDONLY},
              std::uint64_t{MS_REMOUNT | MS_BIND | MS_RDONLY}, std::uint64_t{0},
              std::uint64_t{MS_BIND}, std::uint64_t{MS_BIND | MS_REC}, std::uint64_t{MS_MOVE},
              std::uint64_t{MS_NOSUID | MS_NODEV}}) {
            INFO("flags " << std::hex << flags);
            CHECK(answer(filter, nr("mount"), {0, 0, 0, flags}) == kAllow);
        }
        CHECK(answer(filter, nr("mount_setattr")) == errnoAnswer(ENOSYS));
        CHECK(answer(filter, nr("open_tree_attr")) == errnoAnswer(ENOSYS));
        CHECK(answer(filter, nr("read")) == kAllow);
    }
    SeccompPolicy conditioned;
    conditioned.rules = {{{"mount"}, Action::Allow, 0, {{3, CompareOp::MaskedEqual, MS_BIND, 0}}}};
    const Status held = checkNoRemountWritableRulesHold(conditioned);
    REQUIRE(!held.ok());
    CHECK_THAT(held.error().describe(), Catch::Contains("argument conditions for mount"));
}

// -------------------------------------------------------------- the compiler

TEST_CASE("a conditional rule overrides the unconditional one for the same call", "[seccomp]") {
    SeccompPolicy policy;
    policy.rules = {
        {{"getppid"}, Action::Allow, 0, {}},
        {{"getppid"}, Action::Errno, EACCES, {{0, CompareOp::Equal, 7, 0}}},
        {{"gettid"}, Action::Errno, EPERM, {}},
        {{"gettid"}, Action::Allow, 0, {{0, CompareOp::Equal, 3, 0}}},
        {{"getpid"}, Action::Allow, 0, {}},
        // Agrees with the unconditional rule: nothing to add.
        {{"getpid"}, Action::Allow, 0, {{0, CompareOp::Equal, 1, 0}}},
    };
    const CompiledFilter filter = mustCompile(policy);
    CHECK(answer(filter, nr("getppid"), {0}) == kAllow);
    CHECK(answer(filter, nr("getppid"), {7}) == errnoAnswer(EACCES));
    CHECK(answer(filter, nr("gettid"), {0}) == errnoAnswer(EPERM));
    CHECK(answer(filter, nr("gettid"), {3}) == kAllow);
    CHECK(answer(filter, nr("getpid"), {1}) == kAllow);
    CHECK(answer(filter, nr("read")) == errnoAnswer(EPERM));
}

TEST_CASE("the compiler refuses what it cannot compile faithfully", "[seccomp]") {
    auto errorOf = [](SeccompPolicy policy) {
        Result<CompiledFilter> compiled = compileFilter(policy);
        REQUIRE(!compiled.ok());
        return compiled.error().describe();
    };
    SeccompPolicy policy;

    policy.rules = {{{"read", "raed"}, Action::Allow, 0, {}}};
    CHECK_THAT(errorOf(policy), Catch::Contains("rule 0: unknown system call \"raed\""));

    policy.rules = {{{"read"}, Action::Allow, 0, {}}, {{"read"}, Action::KillProcess, 0, {}}};
    CHECK_THAT(errorOf(policy), Catch::Contains("rule 0 (read) and rule 1 (read)"));

    policy.rules = {{{"socket"},
                     Action::Allow,
                     0,
                     {{0, CompareOp::GreaterOrEqual, 1, 0}, {0, CompareOp::LessOrEqual, 2, 0}}}};
    CHECK_THAT(errorOf(policy), Catch::Contains("tests argument 0 twice"));

    policy.rules = {{{"socket"}, Action::Allow, 0, {{6, CompareOp::Equal, 1, 0}}}};
    CHECK_THAT(errorOf(policy), Catch::Contains("argument index 6"));

    policy.rules = {{{"mount"}, Action::Errno, 5000, {}}};
    CHECK_THAT(errorOf(policy), Catch::Contains("errno 5000"));

    policy.rules = {{{}, Action::Allow, 0, {}}};
    CHECK_THAT(errorOf(policy), Catch::Contains("rule 0: names no system call"));
}

TEST_CASE("names are looked up for this architecture", "[seccomp]") {
    CHECK(lookupSyscall("read").kind == SyscallNameKind::Native);
    CHECK(lookupSyscall("read").nr == 0);
    CHECK(lookupSyscall("chown32").kind == SyscallNameKind::OtherArchitecture);
    CHECK(lookupSyscall("nosuchcall").kind == SyscallNameKind::Unknown);
    CHECK(lookupSyscall("").kind == SyscallNameKind::Unknown);
    // Newer than libseccomp 2.5.4: from stockade's own table.
    CHECK(lookupSyscall("mseal").nr == 462);
    CHECK(lookupSyscall("file_setattr").nr == 469);
}

TEST_CASE("a policy that allows by default gets no ENOSYS for newer calls", "[seccomp]") {
    SeccompPolicy policy;
    policy.default_action = Action::Allow;
    policy.rules = {{{"keyctl"}, Action::Errno, EPERM, {}}};
    const CompiledFilter filter = mustCompile(policy);
    CHECK(answer(filter, 1000) == kAllow);
    CHECK(answer(filter, nr("keyctl")) == errnoAnswer(EPERM));
    CHECK(answer(filter, 0x40000000L | 3) == kKillProcess);
}

// ---------------------------------------------------------- the OCI importer

TEST_CASE("a Docker-style profile is read as Docker reads it", "[seccomp][oci]") {
    SECTION("in a sandbox without capabilities on a current x86_64 kernel") {
        OciImportOptions options;
        options.arch = "amd64";
        options.kernel = KernelVersion{6, 1};
        const SeccompPolicy policy = mustLoad("docker_style.json", options);
        CHECK(policy.default_action == Action::Errno);
        CHECK(policy.default_errno == EPERM);
        CHECK(policy.newer_syscalls_enosys);
        // Dropped: the arm-only rule and the CAP_SYS_ADMIN rule.
        REQUIRE(policy.rules.size() == 8);
        CHECK(policy.rules[1].names == std::vector<std::string>{"ptrace"});
        CHECK(policy.rules[2].args == std::vector<ArgCondition>{{0, CompareOp::Equal, 0, 0}});
        CHECK(policy.rules[4].names == std::vector<std::string>{"modify_ldt"});
        CHECK(policy.rules[5].args ==
              std::vector<ArgCondition>{{0, CompareOp::MaskedEqual, 2114060288, 0}});
        CHECK(policy.rules[6].action == Action::Errno);
        CHECK(policy.rules[6].errno_ret == ENOSYS);

        const CompiledFilter filter = mustCompile(policy);
        CHECK(answer(filter, nr("clone3")) == errnoAnswer(ENOSYS));
        CHECK(answer(filter, nr("mount")) == errnoAnswer(EPERM));
        CHECK(answer(filter, nr("clone"), {CLONE_NEWUSER}) == errnoAnswer(EPERM));
        CHECK(answer(filter, nr("clone"), {SIGCHLD}) == kAllow);
        CHECK(answer(filter, filter.highest_known_nr + 1) == errnoAnswer(ENOSYS));
        const auto& skipped = filter.skipped_names;
        CHECK(std::find(skipped.begin(), skipped.end(), "mmap2") != skipped.end());
    }
    SECTION("with CAP_SYS_ADMIN the admin rule replaces the clone limits") {
        OciImportOptions options;
        options.arch = "amd64";
        options.capabilities = {"CAP_SYS_ADMIN"};
        options.kernel = KernelVersion{6, 1};
        const SeccompPolicy policy = mustLoad("docker_style.json", options);
        REQUIRE(policy.rules.size() == 7);
        CHECK(policy.rules[5].names ==
              std::vector<std::string>{"mount", "umount2", "unshare", "setns", "clone", "clone3"});
    }
    SECTION("minKernel and arches are judged against the options") {
        OciImportOptions options;
        options.arch = "arm64";
        options.kernel = KernelVersion{4, 4};
        const SeccompPolicy policy = mustLoad("docker_style.json", options);
        std::vector<std::string> first_names;
        for (const SyscallRule& rule : policy.rules) first_names.push_back(rule.names[0]);
        CHECK(std::find(first_names.begin(), first_names.end(), "ptrace") == first_names.end());
        CHECK(std::find(first_names.begin(), first_names.end(), "modify_ldt") == first_names.end());
        CHECK(std::find(first_names.begin(), first_names.end(), "set_tls") != first_names.end());
    }
}

TEST_CASE("an OCI runtime-spec profile maps every action and operator", "[seccomp][oci]") {
    const SeccompPolicy policy = mustLoad("oci_runtime_spec.json");
    CHECK(policy.default_action == Action::Allow);
    REQUIRE(policy.rules.size() == 9);
    CHECK(policy.rules[0].action == Action::Errno);
    CHECK(policy.rules[0].errno_ret == EACCES);
    CHECK(policy.rules[1].errno_ret == EPERM);  // errnoRet absent: EPERM, as runc
    CHECK(policy.rules[1].args ==
          std::vector<ArgCondition>{{1, CompareOp::MaskedEqual, 0xffffffff, TIOCSTI}});
    CHECK(policy.rules[2].action == Action::KillProcess);
    CHECK(policy.rules[2].args ==
          std::vector<ArgCondition>{{0, CompareOp::Equal, 17, 0}, {1, CompareOp::NotEqual, 3, 0}});
    // No tracer is ever attached, so TRACE is what the kernel then does: ENOSYS.
    CHECK(policy.rules[3].action == Action::Errno);
    CHECK(policy.rules[3].errno_ret == ENOSYS);
    CHECK(policy.rules[4].action == Action::Kill);
    CHECK(policy.rules[5].action == Action::Log);
    CHECK(policy.rules[6].action == Action::Trap);
    CHECK(policy.rules[7].action == Action::Notify);
    CHECK(policy.rules[8].args == std::vector<ArgCondition>{{0, CompareOp::Greater, 8, 0}});

    const CompiledFilter filter = mustCompile(policy);
    CHECK(answer(filter, nr("keyctl")) == errnoAnswer(EACCES));
    CHECK(answer(filter, nr("ioctl"), {0, TIOCSTI | kHigh}) == errnoAnswer(EPERM));
    CHECK(answer(filter, nr("ioctl"), {0, TCGETS}) == kAllow);
    CHECK(answer(filter, nr("socket"), {AF_PACKET, SOCK_DGRAM}) == kKillProcess);
    CHECK(answer(filter, nr("socket"), {AF_PACKET, SOCK_RAW}) == kAllow);
    CHECK(answer(filter, nr("acct")) == SECCOMP_RET_KILL_THREAD);
    CHECK(answer(filter, nr("syslog")) == SECCOMP_RET_LOG);
    CHECK(answer(filter, nr("kcmp")) == SECCOMP_RET_TRAP);
    CHECK(answer(filter, nr("pidfd_getfd")) == SECCOMP_RET_USER_NOTIF);
    CHECK(answer(filter, nr("personality"), {9}) == errnoAnswer(EPERM));
    CHECK(answer(filter, nr("personality"), {8}) == kAllow);
    // Allowing by default, the profile lets newer calls through too.
    CHECK(answer(filter, 1000) == kAllow);
    // The architectures it lists are not honoured: x32 still dies.
    CHECK(answer(filter, 0x40000000L | 3) == kKillProcess);
}

TEST_CASE("Docker's older single-name form is read", "[seccomp][oci]") {
    const SeccompPolicy policy = mustLoad("legacy_name.json");
    REQUIRE(policy.rules.size() == 3);
    CHECK(policy.rules[0].names == std::vector<std::string>{"read"});
    CHECK(policy.rules[2].names == std::vector<std::string>{"exit_group"});
    mustCompile(policy);
}

TEST_CASE("each malformed profile is refused with the JSON path of the fault", "[seccomp][oci]") {
    // malformed/expected_errors.tsv: one line per fixture, its name, a tab,
    // and text the error must contain.
    const std::filesystem::path dir = fixtures() / "malformed";
    std::ifstream table(dir / "expected_errors.tsv");
    REQUIRE(table.good());
    std::set<std::string> covered;
    std::string line;
    while (std::getline(table, line)) {
        if (line.empty() || line[0] == '#') continue;
        const std::size_t tab = line.find('\t');
        REQUIRE(tab != std::string::npos);
        const std::filesystem::path path = dir / line.substr(0, tab);
        INFO(path.string());
        Result<SeccompPolicy> policy = loadOciSeccompFile(path);
        REQUIRE(!policy.ok());
        const std::string message = policy.error().describe();
        CHECK_THAT(message, Catch::StartsWith(path.string() + ": "));
        CHECK_THAT(message, Catch::Contains(line.substr(tab + 1)));
        covered.insert(path.filename().string());
    }
    CHECK(covered.size() >= 39);
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().extension() != ".json") continue;
        INFO(entry.path().string() << " has no line in expected_errors.tsv");
        CHECK(covered.count(entry.path().filename().string()) == 1);
    }
}

TEST_CASE("a missing profile file names the file and the errno", "[seccomp][oci]") {
    Result<SeccompPolicy> policy = loadOciSeccompFile("/nonexistent/stockade-seccomp.json");
    REQUIRE(!policy.ok());
    CHECK(policy.error().errnum() == ENOENT);
    CHECK_THAT(policy.error().describe(), Catch::Contains("/nonexistent/stockade-seccomp.json"));
}

// ---------------------------------------------- installed, the kernel answers

TEST_CASE("installed in a child, the default filter refuses and allows as promised",
          "[seccomp][kernel]") {
    const CompiledFilter filter = mustCompile(defaultPolicy());
    const long above_table = filter.highest_known_nr + 1;
    char c = 'x';
    // Arguments are real where a real call would be harmless in this child
    // (unshare, keyctl, socket), so that "refused" is the filter's doing;
    // elsewhere they are bad, and the unfiltered kernel would not say EPERM.
    const ChildOutcome out = runFiltered(filter, [&](auto expect) {
        expect(EPERM, syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0L));
        expect(EPERM, syscall(SYS_unshare, CLONE_NEWUSER));
        expect(EPERM, syscall(SYS_setns, -1L, CLONE_NEWNET));
        expect(EPERM, syscall(SYS_clone, CLONE_NEWUSER | CLONE_FS, 0L, 0L, 0L, 0L));
        expect(EPERM, syscall(SYS_mount, kBadPointer, kBadPointer, kBadPointer, 0L, 0L));
        expect(EPERM, syscall(SYS_bpf, 0L, kBadPointer, 72L));
        expect(EPERM, syscall(SYS_ptrace, 0x7fffffffL, -1L, 0L, 0L));
        expect(ENOSYS, syscall(SYS_clone3, kBadPointer, 88L));
        expect(ENOSYS, syscall(above_table, -1L, kBadPointer, 0L));
        expect(EPERM, syscall(SYS_socket, AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
        expect(EPERM, syscall(SYS_socket, AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0));
        expect(EPERM, syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_MPTCP));
        expect(EOPNOTSUPP, syscall(SYS_sendto, -1L, &c, 1L, MSG_FASTOPEN, kBadPointer, 16L));
        expect(EPERM, syscall(SYS_ioctl, 0, TIOCSTI | kHigh, &c));
        expect(EPERM, syscall(SYS_ioctl, 0, TIOCSTI, &c));
        expect(EPERM, syscall(SYS_ioctl, 0, TIOCLINUX | kHigh, &c));
        expect(EPERM, syscall(SYS_ioctl, 0, TIOCSETD, &c));
        expect(EPERM, syscall(SYS_personality, 0xffffL));
        // Allowed: these reach the kernel.
        expect(0, syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        expect(0, syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP));
        expect(EBADF, syscall(SYS_sendto, -1L, &c, 1L, MSG_NOSIGNAL, kBadPointer, 16L));
        expect(EFAULT, syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, kBadPointer));
        expect(0, syscall(SYS_getpid));
        expect(ENOTTY, syscall(SYS_ioctl, 0, TCGETS, kBadPointer));
        expect(0, syscall(SYS_personality, 0xffffffffL));
    });
    REQUIRE(out.exited);
    CHECK(out.exit_code == 0);
    checkAnswers(out, 25);
}

// The direct ingress's additions (runtime/net/direct_ingress.h): what a sandbox
// holding host sockets must not do is refused whatever the fd, the upper
// halves of int arguments ignored; what is near it still reaches the kernel.
// Without a listener, the call sent to the supervisor answers ENOSYS.
TEST_CASE("installed in a child, the direct ingress's refusals and listen sent to the supervisor",
          "[seccomp][kernel][direct]") {
    SeccompPolicy policy = defaultPolicy();
    addHostSocketRefusals(policy);
    sendCallToSupervisor(policy, "listen");
    const CompiledFilter filter = mustCompile(policy);
    int one = 1;
    char buf[64] = {};
    socklen_t length = sizeof(buf);
    const ChildOutcome out = runFiltered(filter, [&](auto expect) {
        const long tcp = syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        expect(EPERM, syscall(SYS_setsockopt, tcp, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &one, 4L));
        expect(EPERM, syscall(SYS_setsockopt, tcp, IPPROTO_TCP | kHigh, 34L, &one, 4L));
        expect(EPERM, syscall(SYS_getsockopt, tcp, SOL_SOCKET, SO_MEMINFO, buf, &length));
        expect(EPERM, syscall(SYS_setsockopt, tcp, SOL_SOCKET, SO_RXQ_OVFL | kHigh, &one, 4L));
        expect(EPERM, syscall(SYS_getsockopt, tcp, SOL_SOCKET, SO_NETNS_COOKIE, buf, &length));
        expect(EPERM, syscall(SYS_ioctl, tcp, 0x8912L /* SIOCGIFCONF */, buf));
        expect(EPERM, syscall(SYS_ioctl, tcp, 0x8927L | kHigh /* SIOCGIFHWADDR */, buf));
        expect(EPERM, syscall(SYS_ioctl, tcp, 0x8946L /* SIOCETHTOOL */, buf));
        expect(EPERM, syscall(SYS_ioctl, tcp, 0x89ffL, buf));
        expect(EPERM, syscall(SYS_ioctl, tcp, 0x8b01L /* SIOCGIWNAME */, buf));
        expect(ENOSYS, syscall(SYS_listen, tcp, 5L));
        // Near them, and allowed: other TCP options, the socket ioctls below
        // 0x8910, the terminal ones.
        expect(0, syscall(SYS_setsockopt, tcp, IPPROTO_TCP, TCP_NODELAY, &one, 4L));
        expect(0, syscall(SYS_setsockopt, tcp, SOL_SOCKET, SO_REUSEADDR, &one, 4L));
        expect(0, syscall(SYS_ioctl, tcp, 0x8905L /* SIOCATMARK */, buf));
        expect(ENOTTY, syscall(SYS_ioctl, 0, TCGETS, kBadPointer));
    });
    REQUIRE(out.exited);
    CHECK(out.exit_code == 0);
    checkAnswers(out, 15);
}

TEST_CASE("the lower tier's filter allows AF_UNIX streams and seqpackets only, and no connect",
          "[seccomp][kernel][tier]") {
    SeccompPolicy policy = defaultPolicy();
    REQUIRE(allowLocalSocketsOnly(policy).ok());
    for (const SyscallRule& r : policy.rules) {
        if (r.action != Action::Allow) continue;
        CHECK(std::find(r.names.begin(), r.names.end(), "connect") == r.names.end());
        if (std::find(r.names.begin(), r.names.end(), "socket") != r.names.end())
            CHECK((r.args.size() == 2 && r.args[0].index == 0 && r.args[0].value == AF_UNIX &&
                   r.args[1].index == 1 && r.args[1].op == CompareOp::MaskedEqual));
    }
    const CompiledFilter filter = mustCompile(policy);
    const ChildOutcome out = runFiltered(filter, [&](auto expect) {
        for (int family : {AF_INET, AF_INET6})
            for (int type : {SOCK_STREAM, SOCK_DGRAM, SOCK_RAW})
                expect(EPERM, syscall(SYS_socket, family, type | SOCK_CLOEXEC, 0));
        expect(EPERM, syscall(SYS_socket, AF_INET, SOCK_DGRAM, IPPROTO_ICMP));
        expect(EPERM, syscall(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0));
        int pair[2];
        expect(EPERM, syscall(SYS_socketpair, AF_INET, SOCK_STREAM, 0, pair));
        // A unix datagram could be sent to any socket path of the host.
        expect(EPERM, syscall(SYS_socket, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        expect(EPERM, syscall(SYS_socketpair, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair));
        const long local = syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        expect(0, local);
        expect(0, syscall(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0));
        expect(0, syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair));
        // Nor a connect, whatever the path: refused before any lookup.
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strcpy(addr.sun_path, "/nonexistent/stockade.sock");
        expect(EPERM, syscall(SYS_connect, local, &addr, sizeof(addr)));
    });
    REQUIRE(out.exited);
    CHECK(out.exit_code == 0);
    checkAnswers(out, 15);

    SeccompPolicy open_policy;
    open_policy.default_action = Action::Allow;
    CHECK_FALSE(allowLocalSocketsOnly(open_policy).ok());
}

TEST_CASE("the lower tier's filter refuses metadata changes by path and watches, not by fd",
          "[seccomp][kernel][tier]") {
    SeccompPolicy policy = defaultPolicy();
    refuseMetadataByPath(policy);
    const CompiledFilter filter = mustCompile(policy);
    char dir_template[] = "/tmp/stockade-metadata-XXXXXX";
    REQUIRE(mkdtemp(dir_template) != nullptr);
    const std::string file = std::string(dir_template) + "/f";
    const int made = ::open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    REQUIRE(made >= 0);
    ::close(made);
    const ChildOutcome out = runFiltered(filter, [&](auto expect) {
        expect(EPERM, syscall(SYS_chmod, file.c_str(), 0644));
        expect(EPERM, syscall(SYS_fchmodat, AT_FDCWD, file.c_str(), 0644));
        const long opath = syscall(SYS_openat, AT_FDCWD, file.c_str(), O_PATH | O_CLOEXEC);
        expect(0, opath);
        // An O_PATH fd with AT_EMPTY_PATH: how a path Landlock never checked
        // would be reached through an fd.
        expect(EPERM, syscall(452 /* fchmodat2 */, opath, "", 0644, AT_EMPTY_PATH));
        expect(EPERM, syscall(SYS_fchownat, opath, "", -1, -1, AT_EMPTY_PATH));
        expect(EPERM, syscall(SYS_chown, file.c_str(), -1, -1));
        expect(EPERM, syscall(SYS_utimensat, AT_FDCWD, file.c_str(), nullptr, 0));
        expect(EPERM, syscall(SYS_utimes, file.c_str(), nullptr));
        expect(EPERM, syscall(SYS_setxattr, file.c_str(), "user.stockade", "1", 1L, 0L));
        expect(EPERM, syscall(SYS_removexattr, file.c_str(), "user.stockade"));
        expect(ENOSYS, syscall(SYS_inotify_init1, IN_CLOEXEC));
        expect(ENOSYS, syscall(SYS_inotify_add_watch, 0, file.c_str(), IN_ALL_EVENTS));
        // On a file opened for writing, as Landlock allowed it: kept.
        const long fd = syscall(SYS_openat, AT_FDCWD, file.c_str(), O_WRONLY | O_CLOEXEC);
        expect(0, fd);
        expect(0, syscall(SYS_fchmod, fd, 0640));
        expect(0, syscall(SYS_utimensat, fd, nullptr, nullptr, 0));
        expect(0, syscall(SYS_fchown, fd, -1, -1));
    });
    struct stat st;
    REQUIRE(::stat(file.c_str(), &st) == 0);
    ::unlink(file.c_str());
    ::rmdir(dir_template);
    REQUIRE(out.exited);
    CHECK(out.exit_code == 0);
    checkAnswers(out, 16);
    CHECK((st.st_mode & 0777) == 0640);  // the fd's chmod, and none of the refused ones
}

TEST_CASE("installed in a child, no call makes a setuid or setgid file", "[seccomp][kernel][G3]") {
    const CompiledFilter filter = mustCompile(defaultPolicy());
    char dir_template[] = "/tmp/stockade-setid-XXXXXX";
    REQUIRE(mkdtemp(dir_template) != nullptr);
    const std::string dir = dir_template;
    const std::string plain = dir + "/plain";
    const std::string made = dir + "/made";
    { std::ofstream(plain) << "#!/bin/sh\n"; }
    const ChildOutcome out = runFiltered(filter, [&](auto expect) {
        expect(EPERM, syscall(SYS_chmod, plain.c_str(), 04755));
        expect(EPERM, syscall(SYS_chmod, plain.c_str(), 02755));
        expect(EPERM, syscall(SYS_fchmodat, AT_FDCWD, plain.c_str(), 06755));
        expect(EPERM, syscall(452 /* fchmodat2 */, AT_FDCWD, plain.c_str(), 04755, 0));
        int fd = static_cast<int>(syscall(SYS_open, plain.c_str(), O_RDONLY | O_CLOEXEC));
        expect(EPERM, syscall(SYS_fchmod, fd, 04755));
        expect(EPERM, syscall(SYS_open, made.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 04755));
        expect(EPERM, syscall(SYS_openat, AT_FDCWD, made.c_str(), O_CREAT | O_WRONLY, 02755));
        expect(EPERM, syscall(SYS_creat, made.c_str(), 04755));
        expect(EPERM, syscall(SYS_mknod, made.c_str(), S_IFREG | 04755, 0));
        expect(EPERM, syscall(SYS_mknodat, AT_FDCWD, made.c_str(), S_IFREG | 02755, 0));
        expect(EPERM,
               syscall(SYS_openat, AT_FDCWD, dir.c_str(), 020000000 | O_DIRECTORY | O_RDWR, 04755));
        expect(ENOSYS, syscall(SYS_openat2, AT_FDCWD, made.c_str(), kBadPointer, 24L));
        expect(ENOSYS, syscall(SYS_io_setup, 128, kBadPointer));
        // The same calls without the bits reach the kernel.
        expect(0, syscall(SYS_chmod, plain.c_str(), 0755));
        expect(0, syscall(SYS_fchmod, fd, 0700));
        expect(0, syscall(SYS_close, fd));
    });
    // What the kernel left on disk: nothing with either bit, and no file made.
    struct stat st {};
    REQUIRE(stat(plain.c_str(), &st) == 0);
    CHECK((st.st_mode & (S_ISUID | S_ISGID)) == 0);
    CHECK(access(made.c_str(), F_OK) != 0);
    std::filesystem::remove_all(dir);
    REQUIRE(out.exited);
    CHECK(out.exit_code == 0);
    checkAnswers(out, 16);
}

TEST_CASE(
    "the privileged-file guard after a permissive policy: no setid mode, no user namespace, "
    "no io_uring; the policy's own refusals stand",
    "[seccomp][kernel][G3]") {
    // A user's policy that allows everything, with a conditional rule of
    // its own on clone (as podman's and Docker's have) and a refusal.
    SeccompPolicy own;
    own.default_action = Action::Allow;
    own.rules.push_back(
        SyscallRule{{"clone"},
                    Action::Allow,
                    0,
                    {ArgCondition{0, CompareOp::MaskedEqual, CLONE_NEWUSER, CLONE_NEWUSER}}});
    own.rules.push_back(SyscallRule{{"mkdirat"}, Action::Errno, EACCES, {}});
    auto chained = withPrivilegedFileGuard(mustCompile(own).program);
    REQUIRE(chained);
    CompiledFilter filter;
    filter.program = std::move(*chained);
    char dir_template[] = "/tmp/stockade-guard-XXXXXX";
    REQUIRE(mkdtemp(dir_template) != nullptr);
    const std::string dir = dir_template;
    const std::string plain = dir + "/plain";
    { std::ofstream(plain) << "#!/bin/sh\n"; }
    const ChildOutcome out = runFiltered(filter, [&](auto expect) {
        expect(EPERM, syscall(SYS_chmod, plain.c_str(), 04755));
        expect(EPERM, syscall(SYS_open, (dir + "/made").c_str(), O_CREAT | O_WRONLY, 02755));
        expect(ENOSYS, syscall(SYS_openat2, AT_FDCWD, plain.c_str(), kBadPointer, 24L));
        expect(EPERM, syscall(SYS_unshare, CLONE_NEWUSER));
        const long cloned = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
        if (cloned == 0) _exit(0);  // had the guard let it through
        expect(EPERM, cloned);
        expect(ENOSYS, syscall(SYS_clone3, kBadPointer, 88L));
        expect(EPERM, syscall(SYS_io_uring_setup, 4, kBadPointer));
        // The policy's own refusal keeps its errno; what both allow runs.
        expect(EACCES, syscall(SYS_mkdirat, AT_FDCWD, (dir + "/d").c_str(), 0755));
        expect(0, syscall(SYS_chmod, plain.c_str(), 0700));
        expect(0, syscall(SYS_unshare, 0));
    });
    struct stat st {};
    REQUIRE(stat(plain.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0700);
    CHECK(access((dir + "/made").c_str(), F_OK) != 0);
    std::filesystem::remove_all(dir);
    REQUIRE(out.exited);
    CHECK(out.exit_code == 0);
    checkAnswers(out, 10);
}

TEST_CASE("installed in a child, ENOSYS above the table comes from the filter",
          "[seccomp][kernel]") {
    // The default table reaches past every call this kernel has, so its ENOSYS
    // could be the kernel's own. A short table makes the difference visible:
    // getrandom exists (and would say EFAULT) but lies above exit_group.
    SeccompPolicy policy;
    // sigaltstack: AddressSanitizer calls it on the way into _exit.
    policy.rules = {{{"write", "exit_group", "getpid", "sigaltstack"}, Action::Allow, 0, {}}};
    const CompiledFilter filter = mustCompile(policy);
    REQUIRE(filter.highest_known_nr == nr("exit_group"));
    REQUIRE(nr("getrandom") > filter.highest_known_nr);
    const ChildOutcome out = runFiltered(filter, [](auto expect) {
        expect(ENOSYS, syscall(SYS_getrandom, kBadPointer, 1L, 0L));
        expect(EPERM, syscall(SYS_ioctl, -1L, TCGETS, 0L));
        expect(0, syscall(SYS_getpid));
    });
    REQUIRE(out.exited);
    CHECK(out.exit_code == 0);
    checkAnswers(out, 3);
}

TEST_CASE("installed in a child, an x32 call kills the process", "[seccomp][kernel]") {
    const CompiledFilter filter = mustCompile(defaultPolicy());
    const ChildOutcome out = runFiltered(filter, [](auto expect) {
        expect(0, syscall(SYS_getpid));
        expect(0, syscall(0x40000000L | SYS_getpid));
    });
    checkAnswers(out, 1);
    CHECK(!out.exited);
    CHECK(out.signal == SIGSYS);
}

namespace {

// i386 getpid through the legacy gate; Catch's own SIGSEGV handler is put
// back to the default first, so a kernel that refuses the gate ends the
// child by the signal instead of a report from inside it.
long int80Getpid() {
    signal(SIGSEGV, SIG_DFL);
    long result = 20;
    asm volatile("int $0x80" : "+a"(result) : : "memory", "r8", "r9", "r10", "r11");
    return result;
}

}  // namespace

TEST_CASE("installed in a child, a 32-bit (int 0x80) call kills the process", "[seccomp][kernel]") {
    // Some hosts (paravirtualised guests among them) refuse the int 0x80
    // gate in the kernel itself with SIGSEGV, before any filter sees it:
    // then the call cannot reach the i386 table whatever the filter does,
    // and the filtered child must still die without an answer.
    const pid_t bare = fork();
    REQUIRE(bare >= 0);
    if (bare == 0) _exit(int80Getpid() == getpid() ? 0 : 1);
    int bare_status = 0;
    REQUIRE(waitpid(bare, &bare_status, 0) == bare);
    const bool kernel_refuses_gate = WIFSIGNALED(bare_status) && WTERMSIG(bare_status) == SIGSEGV;
    if (!kernel_refuses_gate)
        REQUIRE((WIFEXITED(bare_status) && WEXITSTATUS(bare_status) == 0));
    else
        WARN("this kernel refuses int 0x80 itself (SIGSEGV without a filter)");

    const CompiledFilter filter = mustCompile(defaultPolicy());
    const ChildOutcome out = runFiltered(filter, [](auto expect) { expect(0, int80Getpid()); });
    CHECK(out.answers.empty());
    CHECK(!out.exited);
    if (kernel_refuses_gate)
        CHECK((out.signal == SIGSYS || out.signal == SIGSEGV));
    else
        CHECK(out.signal == SIGSYS);
}

TEST_CASE("installed in a child, ordinary programs run under the default filter",
          "[seccomp][kernel]") {
    const CompiledFilter filter = mustCompile(defaultPolicy());
    const ChildOutcome out = runFiltered(filter, [](auto) {
        const char* argv[] = {"/bin/sh", "-c",
                              "echo hi | cat >/dev/null && ls / >/dev/null && exit 7", nullptr};
        execv(argv[0], const_cast<char* const*>(argv));
        _exit(127);
    });
    CHECK(out.exited);
    CHECK(out.exit_code == 7);
}

TEST_CASE("installed in a child, a Docker-style profile runs /bin/true and refuses unshare",
          "[seccomp][kernel][oci]") {
    const CompiledFilter filter = mustCompile(mustLoad("docker_style.json"));
    const ChildOutcome refused = runFiltered(filter, [](auto expect) {
        expect(EPERM, syscall(SYS_unshare, CLONE_NEWUSER));
        expect(ENOSYS, syscall(SYS_clone3, kBadPointer, 88L));
    });
    checkAnswers(refused, 2);
    const ChildOutcome ran = runFiltered(filter, [](auto) {
        const char* argv[] = {"/bin/true", nullptr};
        execv(argv[0], const_cast<char* const*>(argv));
        _exit(127);
    });
    CHECK(ran.exited);
    CHECK(ran.exit_code == 0);
}

TEST_CASE("installed with a listener, notified calls need the supervisor", "[seccomp][kernel]") {
    SeccompPolicy policy;
    policy.default_action = Action::Allow;
    policy.rules = {{{"getppid"}, Action::Notify, 0, {}}};
    const CompiledFilter filter = mustCompile(policy);
    int fds[2];
    REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0) _exit(121);
        int listener = -1;
        const sock_fprog prog = filter.fprog();
        if (installFilterWithListenerInChild(prog, &listener) != 0) _exit(122);
        const int fd_flags = fcntl(listener, F_GETFD);
        close(listener);
        // With the listener gone, the kernel fails notified calls with ENOSYS.
        const long result = syscall(SYS_getppid);
        const int answers[] = {listener >= 0, (fd_flags & FD_CLOEXEC) != 0, result < 0 ? errno : 0};
        if (write(fds[1], answers, sizeof answers) != sizeof answers) _exit(123);
        _exit(0);
    }
    close(fds[1]);
    int answers[3] = {-1, -1, -1};
    CHECK(read(fds[0], answers, sizeof answers) == sizeof answers);
    close(fds[0]);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(answers[0] == 1);
    CHECK(answers[1] == 1);
    CHECK(answers[2] == ENOSYS);
}
