#include "seccomp/filter.h"

#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "base/unique_fd.h"

namespace stockade::seccomp {
namespace {

// x86_64 numbers of calls newer than libseccomp 2.5.4 upstream (which stops at
// 450; Debian's build knows up to 456), from the kernel's
// arch/x86/entry/syscalls/syscall_64.tbl. Consulted only when libseccomp does
// not know the name, so a newer libseccomp always wins.
struct NewerSyscall {
    std::string_view name;
    int nr;
};
constexpr NewerSyscall kNewerX86_64[] = {
    {"uretprobe", 335},         {"uprobe", 336},
    {"cachestat", 451},         {"fchmodat2", 452},
    {"map_shadow_stack", 453},  {"futex_wake", 454},
    {"futex_wait", 455},        {"futex_requeue", 456},
    {"statmount", 457},         {"listmount", 458},
    {"lsm_get_self_attr", 459}, {"lsm_set_self_attr", 460},
    {"lsm_list_modules", 461},  {"mseal", 462},
    {"setxattrat", 463},        {"getxattrat", 464},
    {"listxattrat", 465},       {"removexattrat", 466},
    {"open_tree_attr", 467},    {"file_getattr", 468},
    {"file_setattr", 469},
};

// On x86_64 a number with this bit set selects the x32 ABI, which the kernel
// accepts under AUDIT_ARCH_X86_64: the arch check alone does not exclude it.
constexpr std::uint32_t kX32SyscallBit = 0x40000000;

// The overlay's "no conditional rule matched" answer, rewritten into a jump
// to the main program. TRACE is never produced by a stockade Action, so no
// real answer can collide with it.
constexpr std::uint32_t kContinueMarker = SCMP_ACT_TRACE(0x5ec);

// A limit of the kernel's classic BPF loader (BPF_MAXINSNS).
constexpr std::size_t kMaxInstructions = 4096;

struct ContextDeleter {
    void operator()(void* ctx) const { seccomp_release(ctx); }
};
using Context = std::unique_ptr<void, ContextDeleter>;

std::uint32_t scmpAction(Action action, int err) {
    switch (action) {
        case Action::Allow:
            return SCMP_ACT_ALLOW;
        case Action::Errno:
            return SCMP_ACT_ERRNO(static_cast<std::uint32_t>(err));
        case Action::Kill:
            return SCMP_ACT_KILL_THREAD;
        case Action::KillProcess:
            return SCMP_ACT_KILL_PROCESS;
        case Action::Trap:
            return SCMP_ACT_TRAP;
        case Action::Log:
            return SCMP_ACT_LOG;
        case Action::Notify:
            return SCMP_ACT_NOTIFY;
    }
    return SCMP_ACT_KILL_PROCESS;
}

std::string describeAction(Action action, int err) {
    std::string text(actionName(action));
    if (action == Action::Errno) text += "(" + errnoName(err) + ")";
    return text;
}

scmp_compare scmpCompare(CompareOp op) {
    switch (op) {
        case CompareOp::NotEqual:
            return SCMP_CMP_NE;
        case CompareOp::Less:
            return SCMP_CMP_LT;
        case CompareOp::LessOrEqual:
            return SCMP_CMP_LE;
        case CompareOp::Equal:
            return SCMP_CMP_EQ;
        case CompareOp::GreaterOrEqual:
            return SCMP_CMP_GE;
        case CompareOp::Greater:
            return SCMP_CMP_GT;
        case CompareOp::MaskedEqual:
            return SCMP_CMP_MASKED_EQ;
    }
    return _SCMP_CMP_MIN;
}

// One (rule, syscall) pair after name lookup.
struct Entry {
    std::size_t rule;
    std::string name;
    int nr;
    Action action;
    int err;
    std::vector<ArgCondition> args;  // sorted by index

    std::uint32_t scmp() const { return scmpAction(action, err); }
    std::string where() const { return "rule " + std::to_string(rule) + " (" + name + ")"; }
};

Status validateRule(const SyscallRule& rule, std::size_t index) {
    const std::string where = "rule " + std::to_string(index);
    if (rule.names.empty()) return Error::message(where + ": names no system call");
    if (rule.action == Action::Errno && (rule.errno_ret < 0 || rule.errno_ret > 4095))
        return Error::message(where + ": errno " + std::to_string(rule.errno_ret) +
                              " is outside 0..4095");
    std::vector<bool> seen(6, false);
    for (const ArgCondition& arg : rule.args) {
        if (arg.index > 5)
            return Error::message(where + ": argument index " + std::to_string(arg.index) +
                                  " is outside 0..5");
        // libseccomp refuses two tests of one argument in a rule (EINVAL);
        // say so in terms of the policy.
        if (seen[arg.index])
            return Error::message(where + ": tests argument " + std::to_string(arg.index) +
                                  " twice; a rule may test each argument once");
        seen[arg.index] = true;
    }
    return okStatus();
}

// Sorts each syscall's entries into the main program and the overlay that
// runs first (policy.h, steps 3 and 4), and finds contradictions.
struct Placement {
    std::vector<Entry> main;
    std::vector<Entry> overlay;
};

Result<Placement> place(std::map<int, std::vector<Entry>>& by_nr) {
    Placement out;
    for (auto& [nr, entries] : by_nr) {
        const Entry* unconditional = nullptr;
        for (const Entry& e : entries) {
            if (!e.args.empty()) continue;
            if (!unconditional) {
                unconditional = &e;
            } else if (unconditional->scmp() != e.scmp()) {
                return Error::message(unconditional->where() + " and " + e.where() +
                                      " give it different actions (" +
                                      describeAction(unconditional->action, unconditional->err) +
                                      ", " + describeAction(e.action, e.err) + ")");
            }
        }
        std::vector<const Entry*> conditional;
        for (const Entry& e : entries) {
            if (e.args.empty()) continue;
            bool duplicate = false;
            for (const Entry* other : conditional) {
                if (other->args != e.args) continue;
                if (other->scmp() != e.scmp())
                    return Error::message(other->where() + " and " + e.where() +
                                          " give the same arguments different actions");
                duplicate = true;
            }
            if (duplicate) continue;
            conditional.push_back(&e);
            // A conditional rule that agrees with the unconditional one adds
            // nothing; one that disagrees is an exception and must run first.
            if (!unconditional) {
                out.main.push_back(e);
            } else if (e.scmp() != unconditional->scmp()) {
                out.overlay.push_back(e);
            }
        }
        if (unconditional) out.main.push_back(*unconditional);
    }
    return out;
}

Result<Context> newContext(std::uint32_t default_action) {
    Context ctx(seccomp_init(default_action));
    if (!ctx) return Error::message("seccomp_init failed");
    // Another architecture, or x32 on x86_64, is never a program stockade
    // meant to run; a process that tries is killed, not refused.
    if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS))
        return Error::fromErrno("seccomp_attr_set(ACT_BADARCH, KILL_PROCESS)", -rc);
    // A binary search over syscall numbers instead of a linear list: calls
    // the kernel cannot cache as always-allowed (ioctl, socket, clone, every
    // refusal) pay log(n), not n.
    if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2))
        return Error::fromErrno("seccomp_attr_set(CTL_OPTIMIZE, 2)", -rc);
    return ctx;
}

Status addEntries(void* ctx, const std::vector<Entry>& entries, std::uint32_t default_action) {
    for (const Entry& e : entries) {
        // libseccomp refuses a rule that repeats the default (EACCES); it
        // would change nothing.
        if (e.scmp() == default_action) continue;
        std::vector<scmp_arg_cmp> cmps;
        for (const ArgCondition& a : e.args) {
            cmps.push_back(scmp_arg_cmp{a.index, scmpCompare(a.op), a.value, a.value_two});
        }
        int rc = seccomp_rule_add_exact_array(ctx, e.scmp(), e.nr,
                                              static_cast<unsigned>(cmps.size()), cmps.data());
        if (rc < 0)
            return Error::fromErrno(
                       "seccomp_rule_add(" + e.name + ", " + describeAction(e.action, e.err) + ")",
                       -rc)
                .withContext(e.where());
    }
    return okStatus();
}

Result<std::vector<sock_filter>> exportProgram(void* ctx) {
    // libseccomp 2.5 can only write the program to an fd.
    UniqueFd fd(memfd_create("stockade-seccomp", MFD_CLOEXEC));
    if (!fd) return Error::fromErrno("memfd_create(\"stockade-seccomp\", MFD_CLOEXEC)");
    if (int rc = seccomp_export_bpf(ctx, fd.get()); rc < 0)
        return Error::fromErrno("seccomp_export_bpf", -rc);
    off_t size = lseek(fd.get(), 0, SEEK_END);
    if (size < 0) return Error::fromErrno("lseek(memfd, 0, SEEK_END)");
    if (size % sizeof(sock_filter) != 0)
        return Error::message("seccomp_export_bpf wrote " + std::to_string(size) +
                              " bytes, not whole instructions");
    std::vector<sock_filter> program(static_cast<std::size_t>(size) / sizeof(sock_filter));
    auto* bytes = reinterpret_cast<char*>(program.data());
    std::size_t done = 0;
    while (done < static_cast<std::size_t>(size)) {
        ssize_t n = pread(fd.get(), bytes + done, static_cast<std::size_t>(size) - done,
                          static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Error::fromErrno("pread(memfd)");
        if (n == 0) return Error::message("memfd shrank while reading the seccomp program");
        done += static_cast<std::size_t>(n);
    }
    return program;
}

sock_filter statement(std::uint16_t code, std::uint32_t k) {
    return sock_filter{code, 0, 0, k};
}
sock_filter jump(std::uint16_t code, std::uint32_t k, std::uint8_t jt, std::uint8_t jf) {
    return sock_filter{code, jt, jf, k};
}

// Answers ENOSYS for numbers above `highest` (policy.h, step 2) and lets
// everything else fall through to what follows. A foreign architecture and
// x32 numbers fall through too, to libseccomp's arch check, which kills.
std::vector<sock_filter> enosysPrologue(std::uint32_t arch, int highest) {
    const bool x32_possible = arch == SCMP_ARCH_X86_64;
    const std::uint8_t length = x32_possible ? 6 : 5;
    std::vector<sock_filter> p;
    auto toEnd = [&] { return static_cast<std::uint8_t>(length - p.size() - 1); };
    p.push_back(statement(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
    p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, toEnd()));
    p.push_back(statement(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
    if (x32_possible) p.push_back(jump(BPF_JMP | BPF_JGE | BPF_K, kX32SyscallBit, toEnd(), 0));
    p.push_back(jump(BPF_JMP | BPF_JGT | BPF_K, static_cast<std::uint32_t>(highest), 0, toEnd()));
    p.push_back(statement(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS));
    return p;
}

// Makes the overlay fall through to the main program where no conditional
// rule matched. BPF jumps are relative and forward, so the programs can be
// laid end to end.
Status linkOverlay(std::vector<sock_filter>& overlay) {
    const std::size_t n = overlay.size();
    for (std::size_t i = 0; i < n; ++i) {
        sock_filter& insn = overlay[i];
        if (insn.code == (BPF_RET | BPF_K) && insn.k == kContinueMarker) {
            insn = statement(BPF_JMP | BPF_JA, static_cast<std::uint32_t>(n - i - 1));
        } else if (BPF_CLASS(insn.code) == BPF_RET && BPF_RVAL(insn.code) != BPF_K) {
            return Error::message("libseccomp emitted a return this linker does not know");
        }
    }
    return okStatus();
}

}  // namespace

sock_fprog CompiledFilter::fprog() const {
    return sock_fprog{static_cast<unsigned short>(program.size()),
                      const_cast<sock_filter*>(program.data())};
}

SyscallLookup lookupSyscall(std::string_view name) {
    if (name.empty()) return {};
    const std::string text(name);
    const std::uint32_t arch = seccomp_arch_native();
    int nr = seccomp_syscall_resolve_name_arch(arch, text.c_str());
    if (nr >= 0) return {SyscallNameKind::Native, nr};
    if (nr != __NR_SCMP_ERROR) return {SyscallNameKind::OtherArchitecture, -1};
    if (arch == SCMP_ARCH_X86_64) {
        for (const NewerSyscall& s : kNewerX86_64) {
            if (s.name == name) return {SyscallNameKind::Native, s.nr};
        }
    }
    return {};
}

Result<CompiledFilter> compileFilter(const SeccompPolicy& policy) {
    auto fail = [](const Error& e) { return e.withContext("compile seccomp policy"); };
    if (policy.default_action == Action::Errno &&
        (policy.default_errno < 0 || policy.default_errno > 4095))
        return fail(Error::message("default errno " + std::to_string(policy.default_errno) +
                                   " is outside 0..4095"));

    CompiledFilter out;
    std::map<int, std::vector<Entry>> by_nr;
    for (std::size_t i = 0; i < policy.rules.size(); ++i) {
        const SyscallRule& rule = policy.rules[i];
        if (Status s = validateRule(rule, i); !s) return fail(s.error());
        std::vector<ArgCondition> args = rule.args;
        std::sort(args.begin(), args.end(),
                  [](const ArgCondition& a, const ArgCondition& b) { return a.index < b.index; });
        const int err = rule.action == Action::Errno ? rule.errno_ret : 0;
        for (const std::string& name : rule.names) {
            SyscallLookup found = lookupSyscall(name);
            if (found.kind == SyscallNameKind::Unknown)
                return fail(Error::message("rule " + std::to_string(i) +
                                           ": unknown system call \"" + name + "\""));
            if (found.kind == SyscallNameKind::OtherArchitecture) {
                if (std::find(out.skipped_names.begin(), out.skipped_names.end(), name) ==
                    out.skipped_names.end())
                    out.skipped_names.push_back(name);
                continue;
            }
            out.highest_known_nr = std::max(out.highest_known_nr, found.nr);
            by_nr[found.nr].push_back(Entry{i, name, found.nr, rule.action, err, args});
        }
    }

    Result<Placement> placed = place(by_nr);
    if (!placed) return fail(placed.error());

    const std::uint32_t default_action = scmpAction(policy.default_action, policy.default_errno);
    Result<Context> main_ctx = newContext(default_action);
    if (!main_ctx) return fail(main_ctx.error());
    if (Status s = addEntries(main_ctx->get(), placed->main, default_action); !s)
        return fail(s.error());
    Result<std::vector<sock_filter>> main_program = exportProgram(main_ctx->get());
    if (!main_program) return fail(main_program.error());

    std::vector<sock_filter> overlay_program;
    if (!placed->overlay.empty()) {
        Result<Context> overlay_ctx = newContext(kContinueMarker);
        if (!overlay_ctx) return fail(overlay_ctx.error());
        if (Status s = addEntries(overlay_ctx->get(), placed->overlay, kContinueMarker); !s)
            return fail(s.error());
        Result<std::vector<sock_filter>> exported = exportProgram(overlay_ctx->get());
        if (!exported) return fail(exported.error());
        overlay_program = std::move(exported.value());
        if (Status s = linkOverlay(overlay_program); !s) return fail(s.error());
    }

    // Allowing by default already lets newer calls through; ENOSYS would
    // only take them away.
    const bool permissive =
        policy.default_action == Action::Allow || policy.default_action == Action::Log;
    if (policy.newer_syscalls_enosys && !permissive && out.highest_known_nr >= 0) {
        out.program = enosysPrologue(seccomp_arch_native(), out.highest_known_nr);
    }
    out.program.insert(out.program.end(), overlay_program.begin(), overlay_program.end());
    out.program.insert(out.program.end(), main_program->begin(), main_program->end());
    if (out.program.size() > kMaxInstructions)
        return fail(Error::message("the program has " + std::to_string(out.program.size()) +
                                   " instructions; the kernel takes at most " +
                                   std::to_string(kMaxInstructions)));
    return out;
}

Result<std::vector<sock_filter>> chainPrograms(const std::vector<sock_filter>& first,
                                               const std::vector<sock_filter>& second) {
    if (first.empty()) return second;
    if (second.empty()) return first;
    if (first.size() + second.size() > BPF_MAXINSNS)
        return Error::message("two seccomp filters laid end to end take " +
                              std::to_string(first.size() + second.size()) +
                              " instructions, more than the kernel's " +
                              std::to_string(BPF_MAXINSNS));
    std::vector<sock_filter> out = first;
    const size_t n = first.size();
    for (size_t i = 0; i < n; ++i) {
        sock_filter& insn = out[i];
        if (BPF_CLASS(insn.code) != BPF_RET) continue;
        if (BPF_RVAL(insn.code) != BPF_K)
            return Error::message(
                "the first seccomp filter returns a computed answer, which cannot be "
                "chained");
        const uint32_t action = insn.k & SECCOMP_RET_ACTION_FULL;
        // Jumps are relative and forward: `second` laid after `first`
        // starts at index n.
        if (action == SECCOMP_RET_ALLOW || action == SECCOMP_RET_LOG)
            insn = sock_filter{BPF_JMP | BPF_JA, 0, 0, static_cast<uint32_t>(n - i - 1)};
    }
    out.insert(out.end(), second.begin(), second.end());
    return out;
}

Result<std::vector<sock_filter>> withPrivilegedFileGuard(const std::vector<sock_filter>& first) {
    auto guard = compileFilter(privilegedFileGuard());
    if (!guard) return guard.error().withContext("stockade's guard against privileged files");
    return chainPrograms(first, guard->program);
}

}  // namespace stockade::seccomp
