#include "seccomp/oci_import.h"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/unique_fd.h"
#include "seccomp/filter.h"

namespace stockade::seccomp {
namespace {

using nlohmann::json;

// Thrown only inside this file and caught in importOciSeccomp: the reader is
// a deep recursive descent, and every failure ends the import.
struct ImportFailure {
    std::string path;
    std::string message;
};

[[noreturn]] void failAt(const std::string& path, std::string message) {
    throw ImportFailure{path, std::move(message)};
}

std::string shown(const json& value) {
    std::string text = value.dump();
    if (text.size() > 60) text = text.substr(0, 57) + "...";
    return text;
}

std::string joined(const std::vector<std::string_view>& words) {
    std::string out;
    for (std::string_view w : words) {
        if (!out.empty()) out += ", ";
        out += w;
    }
    return out;
}

// SCMP_ACT_TRACE asks a ptrace tracer; with none attached the kernel fails
// the call with ENOSYS (seccomp(2)), and stockade attaches none.
struct ActionName {
    std::string_view name;
    Action action;
    bool takes_errno;
    int fixed_errno;
};
constexpr ActionName kActions[] = {
    {"SCMP_ACT_ALLOW", Action::Allow, false, 0},
    {"SCMP_ACT_ERRNO", Action::Errno, true, 0},
    {"SCMP_ACT_KILL", Action::Kill, false, 0},
    {"SCMP_ACT_KILL_THREAD", Action::Kill, false, 0},
    {"SCMP_ACT_KILL_PROCESS", Action::KillProcess, false, 0},
    {"SCMP_ACT_TRAP", Action::Trap, false, 0},
    {"SCMP_ACT_TRACE", Action::Errno, true, ENOSYS},
    {"SCMP_ACT_LOG", Action::Log, false, 0},
    {"SCMP_ACT_NOTIFY", Action::Notify, false, 0},
};

constexpr std::pair<std::string_view, CompareOp> kOps[] = {
    {"SCMP_CMP_NE", CompareOp::NotEqual},           {"SCMP_CMP_LT", CompareOp::Less},
    {"SCMP_CMP_LE", CompareOp::LessOrEqual},        {"SCMP_CMP_EQ", CompareOp::Equal},
    {"SCMP_CMP_GE", CompareOp::GreaterOrEqual},     {"SCMP_CMP_GT", CompareOp::Greater},
    {"SCMP_CMP_MASKED_EQ", CompareOp::MaskedEqual},
};

constexpr std::string_view kArches[] = {
    "SCMP_ARCH_X86",     "SCMP_ARCH_X86_64",   "SCMP_ARCH_X32",         "SCMP_ARCH_ARM",
    "SCMP_ARCH_AARCH64", "SCMP_ARCH_MIPS",     "SCMP_ARCH_MIPS64",      "SCMP_ARCH_MIPS64N32",
    "SCMP_ARCH_MIPSEL",  "SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PPC",
    "SCMP_ARCH_PPC64",   "SCMP_ARCH_PPC64LE",  "SCMP_ARCH_S390",        "SCMP_ARCH_S390X",
    "SCMP_ARCH_PARISC",  "SCMP_ARCH_PARISC64", "SCMP_ARCH_RISCV64",     "SCMP_ARCH_LOONGARCH64",
    "SCMP_ARCH_M68K",    "SCMP_ARCH_SH",       "SCMP_ARCH_SHEB",
};

// TSYNC, LOG and WAIT_KILLABLE_RECV change nothing that matters to a
// single-threaded child whose denials the supervisor reports.
constexpr std::string_view kHarmlessFlags[] = {
    "SECCOMP_FILTER_FLAG_TSYNC",
    "SECCOMP_FILTER_FLAG_LOG",
    "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV",
};

std::string nativeGoArch() {
#if defined(__x86_64__)
    return "amd64";
#elif defined(__aarch64__)
    return "arm64";
#elif defined(__riscv) && __riscv_xlen == 64
    return "riscv64";
#elif defined(__s390x__)
    return "s390x";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return "ppc64le";
#else
    return "unknown";
#endif
}

std::optional<KernelVersion> parseKernelVersion(std::string_view text, bool allow_suffix) {
    KernelVersion v;
    std::size_t pos = 0;
    auto number = [&](int& out) {
        const std::size_t start = pos;
        long value = 0;
        while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && pos - start < 6) {
            value = value * 10 + (text[pos] - '0');
            ++pos;
        }
        out = static_cast<int>(value);
        return pos > start;
    };
    if (!number(v.major) || pos >= text.size() || text[pos] != '.') return std::nullopt;
    ++pos;
    if (!number(v.minor)) return std::nullopt;
    if (pos != text.size() && !allow_suffix) return std::nullopt;
    return v;
}

bool atLeast(const KernelVersion& have, const KernelVersion& want) {
    return have.major != want.major ? have.major > want.major : have.minor >= want.minor;
}

class Reader {
  public:
    explicit Reader(const OciImportOptions& options) : options_(options) {
        if (options_.arch.empty()) options_.arch = nativeGoArch();
    }

    SeccompPolicy read(const json& doc) {
        objectAt(doc, "");
        onlyKeys(doc, "",
                 {"defaultAction", "defaultErrnoRet", "architectures", "archMap", "flags",
                  "listenerPath", "listenerMetadata", "syscalls"});
        SeccompPolicy policy;
        policy.newer_syscalls_enosys = true;
        if (!doc.contains("defaultAction")) failAt("/defaultAction", "required, but missing");
        const ActionName& def = actionAt(doc["defaultAction"], "/defaultAction");
        policy.default_action = def.action;
        policy.default_errno = errnoFor(def, doc, "defaultErrnoRet", "");

        readArchitectures(doc);
        readFlags(doc);
        if (doc.contains("listenerPath") && !stringAt(doc["listenerPath"], "/listenerPath").empty())
            failAt("/listenerPath",
                   "not supported: stockade's supervisor is the listener for SCMP_ACT_NOTIFY");
        if (doc.contains("listenerMetadata"))
            stringAt(doc["listenerMetadata"], "/listenerMetadata");

        if (const json* calls = arrayOrNullAt(doc, "syscalls", "")) {
            for (std::size_t i = 0; i < calls->size(); ++i) {
                readSyscall((*calls)[i], "/syscalls/" + std::to_string(i), policy);
            }
        }
        return policy;
    }

  private:
    static void objectAt(const json& v, const std::string& path) {
        if (!v.is_object())
            failAt(path.empty() ? "/" : path, "expected an object, got " + shown(v));
    }

    static void onlyKeys(const json& object, const std::string& path,
                         std::initializer_list<std::string_view> allowed) {
        for (const auto& item : object.items()) {
            if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
                failAt(path + "/" + item.key(),
                       "unknown key; expected one of " + joined(std::vector(allowed)));
            }
        }
    }

    static std::string stringAt(const json& v, const std::string& path) {
        if (!v.is_string()) failAt(path, "expected a string, got " + shown(v));
        return v.get<std::string>();
    }

    static std::uint64_t unsignedAt(const json& v, const std::string& path, std::uint64_t max) {
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() > max)
            failAt(path,
                   "expected an integer from 0 to " + std::to_string(max) + ", got " + shown(v));
        return v.get<std::uint64_t>();
    }

    // Go writes an absent list as null; both mean "none".
    static const json* arrayOrNullAt(const json& object, const char* key, const std::string& path) {
        if (!object.contains(key)) return nullptr;
        const json& v = object[key];
        if (v.is_null()) return nullptr;
        if (!v.is_array()) failAt(path + "/" + key, "expected an array, got " + shown(v));
        return &v;
    }

    static std::vector<std::string> stringsAt(const json& object, const char* key,
                                              const std::string& path) {
        std::vector<std::string> out;
        if (const json* list = arrayOrNullAt(object, key, path)) {
            for (std::size_t i = 0; i < list->size(); ++i) {
                out.push_back(stringAt((*list)[i], path + "/" + key + "/" + std::to_string(i)));
            }
        }
        return out;
    }

    static const ActionName& actionAt(const json& v, const std::string& path) {
        std::vector<std::string_view> names;
        for (const ActionName& a : kActions) {
            if (v.is_string() && v.get<std::string>() == a.name) return a;
            names.push_back(a.name);
        }
        failAt(path, "expected one of " + joined(names) + ", got " + shown(v));
    }

    // The errno for an action read from `object`: errnoRet where given,
    // EPERM otherwise (as runc), and an error where the action takes none.
    static int errnoFor(const ActionName& action, const json& object, const char* key,
                        const std::string& path) {
        if (!object.contains(key)) return action.fixed_errno ? action.fixed_errno : EPERM;
        const std::string where = path + "/" + key;
        if (!action.takes_errno)
            failAt(where, "only SCMP_ACT_ERRNO and SCMP_ACT_TRACE take an errno, not " +
                              std::string(action.name));
        const int value = static_cast<int>(unsignedAt(object[key], where, 4095));
        return action.fixed_errno ? action.fixed_errno : value;
    }

    // Validated, then set aside: stockade filters the native architecture
    // only, and kills every other (SPEC G5), whatever the profile lists.
    static void readArchitectures(const json& doc) {
        auto archAt = [](const json& v, const std::string& path) {
            const std::string name = stringAt(v, path);
            if (std::find(std::begin(kArches), std::end(kArches), name) == std::end(kArches))
                failAt(path, "expected an architecture such as SCMP_ARCH_X86_64, got " + shown(v));
        };
        const json* arches = arrayOrNullAt(doc, "architectures", "");
        const json* map = arrayOrNullAt(doc, "archMap", "");
        if (arches && map && !arches->empty() && !map->empty())
            failAt("/archMap", "give either \"architectures\" or \"archMap\", not both");
        if (arches) {
            for (std::size_t i = 0; i < arches->size(); ++i)
                archAt((*arches)[i], "/architectures/" + std::to_string(i));
        }
        if (map) {
            for (std::size_t i = 0; i < map->size(); ++i) {
                const std::string path = "/archMap/" + std::to_string(i);
                const json& entry = (*map)[i];
                objectAt(entry, path);
                onlyKeys(entry, path, {"architecture", "subArchitectures"});
                if (!entry.contains("architecture"))
                    failAt(path + "/architecture", "required, but missing");
                archAt(entry["architecture"], path + "/architecture");
                if (const json* subs = arrayOrNullAt(entry, "subArchitectures", path)) {
                    for (std::size_t j = 0; j < subs->size(); ++j)
                        archAt((*subs)[j], path + "/subArchitectures/" + std::to_string(j));
                }
            }
        }
    }

    static void readFlags(const json& doc) {
        const json* flags = arrayOrNullAt(doc, "flags", "");
        if (!flags) return;
        for (std::size_t i = 0; i < flags->size(); ++i) {
            const std::string path = "/flags/" + std::to_string(i);
            const std::string flag = stringAt((*flags)[i], path);
            if (flag == "SECCOMP_FILTER_FLAG_SPEC_ALLOW")
                failAt(path,
                       "not supported: stockade keeps the speculative-execution "
                       "mitigations that this flag turns off");
            if (std::find(std::begin(kHarmlessFlags), std::end(kHarmlessFlags), flag) ==
                std::end(kHarmlessFlags)) {
                std::vector<std::string_view> names(std::begin(kHarmlessFlags),
                                                    std::end(kHarmlessFlags));
                failAt(path, "expected one of " + joined(names) + ", got " + shown((*flags)[i]));
            }
        }
    }

    // Docker's `includes`/`excludes`: whether a rule applies to this sandbox.
    struct Filter {
        std::vector<std::string> caps;
        std::vector<std::string> arches;
        std::optional<KernelVersion> min_kernel;
    };

    static Filter filterAt(const json& object, const char* key, const std::string& path) {
        Filter f;
        if (!object.contains(key)) return f;
        const std::string where = path + "/" + key;
        const json& v = object[key];
        if (v.is_null()) return f;
        objectAt(v, where);
        onlyKeys(v, where, {"caps", "arches", "minKernel"});
        f.caps = stringsAt(v, "caps", where);
        f.arches = stringsAt(v, "arches", where);
        if (v.contains("minKernel") && !v["minKernel"].is_null()) {
            const std::string text = stringAt(v["minKernel"], where + "/minKernel");
            f.min_kernel = parseKernelVersion(text, false);
            if (!f.min_kernel)
                failAt(where + "/minKernel",
                       "expected a kernel version such as \"4.8\", got " + shown(v["minKernel"]));
        }
        return f;
    }

    bool hasCap(const std::string& cap) const {
        return std::find(options_.capabilities.begin(), options_.capabilities.end(), cap) !=
               options_.capabilities.end();
    }
    bool isArch(const std::vector<std::string>& arches) const {
        return std::find(arches.begin(), arches.end(), options_.arch) != arches.end();
    }
    KernelVersion kernel() {
        if (!options_.kernel) {
            utsname u{};
            std::optional<KernelVersion> running;
            if (uname(&u) == 0) running = parseKernelVersion(u.release, true);
            options_.kernel = running.value_or(KernelVersion{});
        }
        return *options_.kernel;
    }

    // Docker's reading, rule by rule (profiles/seccomp/seccomp_linux.go).
    bool applies(const Filter& includes, const Filter& excludes) {
        if (!excludes.arches.empty() && isArch(excludes.arches)) return false;
        for (const std::string& cap : excludes.caps)
            if (hasCap(cap)) return false;
        if (excludes.min_kernel && atLeast(kernel(), *excludes.min_kernel)) return false;
        if (!includes.arches.empty() && !isArch(includes.arches)) return false;
        for (const std::string& cap : includes.caps)
            if (!hasCap(cap)) return false;
        if (includes.min_kernel && !atLeast(kernel(), *includes.min_kernel)) return false;
        return true;
    }

    std::vector<ArgCondition> argsAt(const json& call, const std::string& path) {
        std::vector<ArgCondition> out;
        const json* args = arrayOrNullAt(call, "args", path);
        if (!args) return out;
        for (std::size_t i = 0; i < args->size(); ++i) {
            const std::string where = path + "/args/" + std::to_string(i);
            const json& a = (*args)[i];
            objectAt(a, where);
            onlyKeys(a, where, {"index", "value", "valueTwo", "op"});
            for (const char* key : {"index", "value", "op"}) {
                if (!a.contains(key)) failAt(where + "/" + key, "required, but missing");
            }
            ArgCondition c;
            c.index = static_cast<unsigned>(unsignedAt(a["index"], where + "/index", 5));
            for (const ArgCondition& earlier : out) {
                if (earlier.index == c.index)
                    failAt(where + "/index", "argument " + std::to_string(c.index) +
                                                 " is already tested by this rule; libseccomp "
                                                 "tests each argument once per rule");
            }
            c.value = unsignedAt(a["value"], where + "/value", UINT64_MAX);
            if (a.contains("valueTwo"))
                c.value_two = unsignedAt(a["valueTwo"], where + "/valueTwo", UINT64_MAX);
            c.op = opAt(a["op"], where + "/op");
            out.push_back(c);
        }
        return out;
    }

    static CompareOp opAt(const json& v, const std::string& path) {
        std::vector<std::string_view> names;
        for (const auto& [name, op] : kOps) {
            if (v.is_string() && v.get<std::string>() == name) return op;
            names.push_back(name);
        }
        failAt(path, "expected one of " + joined(names) + ", got " + shown(v));
    }

    std::vector<std::string> namesAt(const json& call, const std::string& path) {
        const bool has_names = call.contains("names") && !call["names"].is_null();
        const bool has_name = call.contains("name") && !call["name"].is_null();
        if (has_names && has_name)
            failAt(path + "/name", "give either \"name\" or \"names\", not both");
        std::vector<std::pair<std::string, std::string>> found;  // (name, path)
        if (has_name) {
            found.emplace_back(stringAt(call["name"], path + "/name"), path + "/name");
        } else if (has_names) {
            std::vector<std::string> names = stringsAt(call, "names", path);
            if (names.empty()) failAt(path + "/names", "expected at least one system call name");
            for (std::size_t i = 0; i < names.size(); ++i)
                found.emplace_back(names[i], path + "/names/" + std::to_string(i));
        } else {
            failAt(path + "/names", "required, but missing");
        }
        std::vector<std::string> out;
        for (auto& [name, where] : found) {
            // Names of other architectures stay (compileFilter skips them);
            // names of none are typos.
            if (lookupSyscall(name).kind == SyscallNameKind::Unknown)
                failAt(where, "unknown system call \"" + name + "\"");
            out.push_back(std::move(name));
        }
        return out;
    }

    void readSyscall(const json& call, const std::string& path, SeccompPolicy& policy) {
        objectAt(call, path);
        onlyKeys(
            call, path,
            {"names", "name", "action", "errnoRet", "args", "comment", "includes", "excludes"});
        std::vector<std::string> names = namesAt(call, path);
        if (!call.contains("action")) failAt(path + "/action", "required, but missing");
        const ActionName& action = actionAt(call["action"], path + "/action");
        const int err = errnoFor(action, call, "errnoRet", path);
        std::vector<ArgCondition> args = argsAt(call, path);
        if (call.contains("comment") && !call["comment"].is_null())
            stringAt(call["comment"], path + "/comment");
        const Filter includes = filterAt(call, "includes", path);
        const Filter excludes = filterAt(call, "excludes", path);
        if (!applies(includes, excludes)) return;

        SyscallRule rule{std::move(names), action.action, action.takes_errno ? err : 0,
                         std::move(args)};
        // libseccomp keeps the first of two unconditional actions for one
        // call and drops the second without a word; refuse instead.
        if (rule.args.empty()) {
            std::vector<std::string> kept;
            for (const std::string& name : rule.names) {
                auto [it, inserted] =
                    unconditional_.try_emplace(name, Seen{rule.action, rule.errno_ret, path});
                if (!inserted &&
                    (it->second.action != rule.action || it->second.err != rule.errno_ret)) {
                    if (!options_.keep_first_unconditional)
                        failAt(path + "/action", "\"" + name + "\" already has " +
                                                     std::string(actionName(it->second.action)) +
                                                     " from " + it->second.path +
                                                     " without argument conditions");
                    if (options_.dropped) options_.dropped->push_back(name);
                    continue;
                }
                kept.push_back(name);
            }
            if (kept.empty()) return;
            rule.names = std::move(kept);
        }
        policy.rules.push_back(std::move(rule));
    }

    struct Seen {
        Action action;
        int err;
        std::string path;
    };

    OciImportOptions options_;
    std::map<std::string, Seen> unconditional_;
};

}  // namespace

Result<SeccompPolicy> importOciSeccomp(std::string_view json_text,
                                       const OciImportOptions& options) {
    json doc;
    try {
        doc = json::parse(json_text.begin(), json_text.end());
    } catch (const json::exception& e) {
        return Error::message(std::string("not valid JSON: ") + e.what());
    }
    try {
        return Reader(options).read(doc);
    } catch (const ImportFailure& f) {
        return Error::message(f.path + ": " + f.message);
    } catch (const json::exception& e) {
        return Error::message(std::string("seccomp profile: ") + e.what());
    }
}

Result<SeccompPolicy> loadOciSeccompFile(const std::string& path, const OciImportOptions& options) {
    UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return Error::fromErrno("open(\"" + path + "\", O_RDONLY)");
    std::string text;
    char buffer[16384];
    for (;;) {
        ssize_t n = read(fd.get(), buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Error::fromErrno("read(\"" + path + "\")");
        if (n == 0) break;
        text.append(buffer, static_cast<std::size_t>(n));
        // A seccomp profile is tens of kilobytes; refuse to read a device.
        if (text.size() > (16U << 20))
            return Error::message(path + ": larger than 16 MiB, not a seccomp profile");
    }
    Result<SeccompPolicy> policy = importOciSeccomp(text, options);
    if (!policy) return policy.error().withContext(path);
    return policy;
}

}  // namespace stockade::seccomp
