#include "oci/device_cgroup.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>

#include "base/bpf_insn.h"
#include "base/unique_fd.h"
#include "oci/devices.h"
#include "runtime/cgroups/cgroup_fs.h"

namespace stockade::oci {

namespace {

// The nodes every container gets (runc's and crun's list, less mknod of
// any node, which a user namespace refuses anyway): c 1:3 null, 1:5 zero,
// 1:7 full, 1:8 random, 1:9 urandom, 5:0 tty, 5:2 ptmx, 136:* the pts.
struct DefaultNode {
    int64_t major, minor;
};
constexpr DefaultNode kDefaultNodes[] = {{1, 3}, {1, 5}, {1, 7}, {1, 8},
                                         {1, 9}, {5, 0}, {5, 2}, {136, -1}};

bool anyNumber(const std::optional<int64_t>& n) {
    return !n || *n < 0;
}

bool matches(const DeviceRule& rule, char type, uint32_t major, uint32_t minor) {
    return (rule.type == 'a' || rule.type == type) &&
           (anyNumber(rule.major) || *rule.major == major) &&
           (anyNumber(rule.minor) || *rule.minor == minor);
}

bool names(const DeviceRule& rule, char letter) {
    return rule.access.find(letter) != std::string::npos;
}

// The context of a device program (struct bpf_cgroup_dev_ctx): the access
// type's low 16 bits the node's type (BPF_DEVCG_DEV_*), its high 16 the
// access asked (BPF_DEVCG_ACC_*).
constexpr int16_t kAccessType = offsetof(bpf_cgroup_dev_ctx, access_type);
constexpr int16_t kMajor = offsetof(bpf_cgroup_dev_ctx, major);
constexpr int16_t kMinor = offsetof(bpf_cgroup_dev_ctx, minor);

constexpr uint8_t kAccess = BPF_REG_2, kType = BPF_REG_3, kMajorReg = BPF_REG_4,
                  kMinorReg = BPF_REG_5;

bpf_insn load(uint8_t dst, int16_t off) {
    return bpfInstruction(BPF_LDX | BPF_MEM | BPF_W, dst, BPF_REG_1, off, 0);
}

// A jump whose target is patched once known.
bpf_insn jumpIfNot(uint8_t reg, uint32_t value) {
    return bpfInstruction(BPF_JMP32 | BPF_JNE | BPF_K, reg, 0, 0, static_cast<int32_t>(value));
}

std::string numberText(const std::optional<int64_t>& n) {
    return anyNumber(n) ? "*" : std::to_string(*n);
}

// cgroup v1's device cgroup as the kernel keeps it (security/device_cgroup.c):
// a default and exceptions of type c or b, each number or any (-1).
struct V1Exception {
    char type;
    int64_t major, minor;
    std::string access;
};
struct V1State {
    bool default_allow = true;  // a new cgroup under the root allows all
    std::vector<V1Exception> exceptions;
};

bool sameKey(const V1Exception& e, char type, int64_t major, int64_t minor) {
    return e.type == type && e.major == major && e.minor == minor;
}

// An allow written in default-deny mode, or a deny in default-allow mode:
// merged into the exception of the same key, else added.
void addException(V1State& state, char type, int64_t major, int64_t minor,
                  const std::string& access) {
    for (V1Exception& e : state.exceptions)
        if (sameKey(e, type, major, minor)) {
            for (char c : access)
                if (e.access.find(c) == std::string::npos) e.access += c;
            return;
        }
    state.exceptions.push_back({type, major, minor, access});
}

// The other way round: the letters taken from the exception of exactly the
// same key, which goes once it has none.
void removeException(V1State& state, char type, int64_t major, int64_t minor,
                     const std::string& access) {
    for (size_t i = 0; i < state.exceptions.size(); ++i) {
        V1Exception& e = state.exceptions[i];
        if (!sameKey(e, type, major, minor)) continue;
        std::string kept;
        for (char c : e.access)
            if (access.find(c) == std::string::npos) kept += c;
        e.access = kept;
        if (e.access.empty()) state.exceptions.erase(state.exceptions.begin() + i);
        return;
    }
}

bool exceptionCovers(const V1Exception& e, char type, uint32_t major, uint32_t minor) {
    return e.type == type && (e.major < 0 || e.major == major) && (e.minor < 0 || e.minor == minor);
}

// The kernel's answer to one letter: default-allow refuses what any
// exception names in part, default-deny allows what one names whole.
bool v1Allows(const V1State& state, char type, uint32_t major, uint32_t minor, char letter) {
    for (const V1Exception& e : state.exceptions)
        if (exceptionCovers(e, type, major, minor) && e.access.find(letter) != std::string::npos)
            return !state.default_allow;
    return state.default_allow;
}

// The lines applyDeviceRulesV1 writes for one rule, as (allow, line) pairs.
std::vector<std::string> v1Lines(const DeviceRule& rule) {
    std::vector<std::string> lines;
    if (rule.type == 'p' || rule.access.empty()) return lines;
    // A number past Linux's (12 bits major, 20 minor) names no device; v1
    // would read 4294967295 as any, so such a rule is not written at all
    // (the reader refuses one in linux.resources.devices).
    if ((!anyNumber(rule.major) && *rule.major > 4095) ||
        (!anyNumber(rule.minor) && *rule.minor > 1048575))
        return lines;
    const bool every_letter = names(rule, 'r') && names(rule, 'w') && names(rule, 'm');
    if (rule.type == 'a' && anyNumber(rule.major) && anyNumber(rule.minor) && every_letter) {
        // v1 reads "a" as every device and every letter, whatever follows.
        lines.push_back("a");
        return lines;
    }
    const std::string numbers = numberText(rule.major) + ":" + numberText(rule.minor);
    for (char type : {'c', 'b'})
        if (rule.type == 'a' || rule.type == type)
            lines.push_back(std::string(1, type) + " " + numbers + " " + rule.access);
    return lines;
}

}  // namespace

std::string deviceRulesBeyondV1(const std::vector<DeviceRule>& rules) {
    V1State state;
    std::vector<int64_t> majors{0}, minors{0};
    for (const DeviceRule& rule : rules) {
        if (!anyNumber(rule.major)) majors.push_back(*rule.major);
        if (!anyNumber(rule.minor)) minors.push_back(*rule.minor);
        for (const std::string& line : v1Lines(rule)) {
            if (line == "a") {
                state = V1State{rule.allow, {}};
                continue;
            }
            const int64_t major = anyNumber(rule.major) ? -1 : *rule.major;
            const int64_t minor = anyNumber(rule.minor) ? -1 : *rule.minor;
            if (rule.allow == !state.default_allow)
                addException(state, line[0], major, minor, rule.access);
            else
                removeException(state, line[0], major, minor, rule.access);
        }
    }
    // A number no rule names: one past the largest named (the reader
    // bounds them far below 2^32; the modulo only keeps the cast exact).
    int64_t unnamed_major = 0, unnamed_minor = 0;
    for (int64_t n : majors) unnamed_major = std::max(unnamed_major, n + 1);
    for (int64_t n : minors) unnamed_minor = std::max(unnamed_minor, n + 1);
    majors.push_back(unnamed_major % (int64_t{1} << 32));
    minors.push_back(unnamed_minor % (int64_t{1} << 32));
    for (char type : {'c', 'b'})
        for (int64_t major : majors)
            for (int64_t minor : minors)
                for (char letter : {'r', 'w', 'm'}) {
                    const auto ma = static_cast<uint32_t>(major);
                    const auto mi = static_cast<uint32_t>(minor);
                    if (v1Allows(state, type, ma, mi, letter) &&
                        !deviceAllowed(rules, type, ma, mi, std::string(1, letter)))
                        return std::string(1, type) + " " + std::to_string(ma) + ":" +
                               std::to_string(mi) + " " + letter;
                }
    return "";
}

std::vector<DeviceRule> containerDeviceRules(const std::vector<Device>& devices,
                                             const std::vector<DeviceRule>& rules) {
    std::vector<DeviceRule> out;
    out.push_back(DeviceRule{false, 'a', std::nullopt, std::nullopt, "rwm"});
    for (const DeviceRule& rule : rules)
        if (rule.type != 'p') out.push_back(rule);
    for (const DefaultNode& node : kDefaultNodes)
        out.push_back(DeviceRule{true, 'c', node.major, node.minor, "rwm"});
    for (const Device& device : devices) {
        const std::string access = deviceAccess(device, rules);
        if (!access.empty())
            out.push_back(DeviceRule{true, device.type == 'b' ? 'b' : 'c', int64_t{device.major},
                                     int64_t{device.minor}, access});
    }
    return out;
}

bool deviceAllowed(const std::vector<DeviceRule>& rules, char type, uint32_t major, uint32_t minor,
                   std::string_view access) {
    for (char letter : access) {
        bool allowed = false;
        for (auto rule = rules.rbegin(); rule != rules.rend(); ++rule)
            if (names(*rule, letter) && matches(*rule, type, major, minor)) {
                allowed = rule->allow;
                break;
            }
        if (!allowed) return false;
    }
    return true;
}

Result<std::vector<bpf_insn>> deviceProgram(const std::vector<DeviceRule>& rules) {
    std::vector<bpf_insn> code;
    auto jumpTo = [&](size_t at, size_t target) {
        code[at].off = static_cast<int16_t>(target - at - 1);
    };
    const std::pair<char, int32_t> letters[] = {
        {'m', BPF_DEVCG_ACC_MKNOD}, {'r', BPF_DEVCG_ACC_READ}, {'w', BPF_DEVCG_ACC_WRITE}};
    for (const auto& [letter, bit] : letters) {
        // Each letter asked is decided by the last rule naming it that
        // matches: walked from the last, the first match decides. Each
        // comparison loads its field from the context afresh: a register
        // the verifier knows as a constant (after a match) and carries to
        // the next rule keeps it from pruning the paths that meet there,
        // and its work grows with the square of the rules (800 rules failed
        // E2BIG that way; tests/unit/oci_device_cgroup_test.cpp loads 2000).
        code.push_back(load(kAccess, kAccessType));
        code.push_back(bpfInstruction(BPF_ALU64 | BPF_RSH | BPF_K, kAccess, 0, 0, 16));
        code.push_back(bpfInstruction(BPF_ALU64 | BPF_AND | BPF_K, kAccess, 0, 0, bit));
        const size_t not_asked = code.size();
        code.push_back(bpfInstruction(BPF_JMP | BPF_JEQ | BPF_K, kAccess, 0, 0, 0));
        std::vector<size_t> to_next_letter{not_asked};
        // Jumps to this letter's refusal, at its section's end: every jump
        // stays within one section, whose size is bounded below.
        std::vector<size_t> to_deny;
        const size_t section = code.size();
        bool decided = false;
        for (auto rule = rules.rbegin(); rule != rules.rend(); ++rule) {
            if (!names(*rule, letter) || rule->type == 'p') continue;
            std::vector<size_t> to_next_rule;
            if (rule->type != 'a') {
                code.push_back(load(kType, kAccessType));
                code.push_back(bpfInstruction(BPF_ALU64 | BPF_AND | BPF_K, kType, 0, 0, 0xFFFF));
                to_next_rule.push_back(code.size());
                code.push_back(
                    jumpIfNot(kType, rule->type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR));
            }
            if (!anyNumber(rule->major)) {
                code.push_back(load(kMajorReg, kMajor));
                to_next_rule.push_back(code.size());
                code.push_back(jumpIfNot(kMajorReg, static_cast<uint32_t>(*rule->major)));
            }
            if (!anyNumber(rule->minor)) {
                code.push_back(load(kMinorReg, kMinor));
                to_next_rule.push_back(code.size());
                code.push_back(jumpIfNot(kMinorReg, static_cast<uint32_t>(*rule->minor)));
            }
            (rule->allow ? to_next_letter : to_deny).push_back(code.size());
            code.push_back(bpfInstruction(BPF_JMP | BPF_JA, 0, 0, 0, 0));
            for (size_t at : to_next_rule) jumpTo(at, code.size());
            if (code.size() - section > 30000)
                return Error::message(
                    "linux.resources.devices: too many rules for one program (a jump spans at "
                    "most 32767 instructions)");
            // A rule matching every node decides for all: what follows it
            // could not be reached, which the verifier refuses.
            if (to_next_rule.empty()) {
                decided = true;
                break;
            }
        }
        if (!decided) {
            to_deny.push_back(code.size());  // no rule names it: refused
            code.push_back(bpfInstruction(BPF_JMP | BPF_JA, 0, 0, 0, 0));
        }
        // No refusal where nothing jumps to one (every device allowed: a
        // privileged container's "a" rule): the verifier refuses code that
        // cannot be reached.
        if (!to_deny.empty()) {
            for (size_t at : to_deny) jumpTo(at, code.size());
            code.push_back(bpfInstruction(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0));
            code.push_back(bpfInstruction(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
        }
        for (size_t at : to_next_letter) jumpTo(at, code.size());
    }
    code.push_back(bpfInstruction(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1));
    code.push_back(bpfInstruction(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
    return code;
}

Status applyDeviceRulesV1(const std::string& dir, const std::vector<DeviceRule>& rules) {
    for (const DeviceRule& rule : rules) {
        const std::string file = dir + (rule.allow ? "/devices.allow" : "/devices.deny");
        for (const std::string& line : v1Lines(rule))
            if (auto s = writeCgroupFile(file, line); !s)
                return s.error().withContext("linux.resources.devices");
    }
    return okStatus();
}

bool deviceProgramsSupported() {
    const bpf_insn code[] = {bpfInstruction(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1),
                             bpfInstruction(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)};
    bpf_attr load{};
    load.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    load.insns = reinterpret_cast<uintptr_t>(code);
    load.insn_cnt = 2;
    load.license = reinterpret_cast<uintptr_t>("");
    UniqueFd program(static_cast<int>(syscall(SYS_bpf, BPF_PROG_LOAD, &load, sizeof(load))));
    return static_cast<bool>(program);
}

Status attachDeviceProgram(const std::string& dir, const std::vector<DeviceRule>& rules) {
    auto code = deviceProgram(rules);
    if (!code) return code.error();
    bpf_attr load{};
    load.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    load.insns = reinterpret_cast<uintptr_t>(code->data());
    load.insn_cnt = static_cast<uint32_t>(code->size());
    load.license = reinterpret_cast<uintptr_t>("");  // calls no helper
    UniqueFd program(static_cast<int>(syscall(SYS_bpf, BPF_PROG_LOAD, &load, sizeof(load))));
    if (!program)
        return Error::fromErrno("linux.resources.devices: bpf(BPF_PROG_LOAD, CGROUP_DEVICE)");
    UniqueFd cgroup(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!cgroup) return Error::fromErrno("open(\"" + dir + "\")");
    // Flags 0: nothing beneath may attach another (the container could not
    // anyway); a parent's programs with BPF_F_ALLOW_MULTI still run too.
    bpf_attr attach{};
    attach.target_fd = static_cast<uint32_t>(cgroup.get());
    attach.attach_bpf_fd = static_cast<uint32_t>(program.get());
    attach.attach_type = BPF_CGROUP_DEVICE;
    if (syscall(SYS_bpf, BPF_PROG_ATTACH, &attach, sizeof(attach)) < 0)
        return Error::fromErrno("linux.resources.devices: bpf(BPF_PROG_ATTACH, CGROUP_DEVICE) on " +
                                dir);
    return okStatus();
}

}  // namespace stockade::oci
