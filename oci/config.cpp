#include "oci/config.h"

#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include <algorithm>
#include <bitset>
#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "oci/resource_names.h"
#include "runtime/cgroups/cgroup_fs.h"
#include "seccomp/oci_import.h"

namespace stockade::oci {

namespace {

using nlohmann::json;

// Thrown inside this file only, caught by parseConfig: the field and why.
struct Refusal {
    std::string field;
    std::string why;
};

[[noreturn]] void refuse(const std::string& field, const std::string& why) {
    throw Refusal{field, why};
}

const json* member(const json& object, const char* key) {
    if (!object.is_object()) return nullptr;
    auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string stringAt(const json& v, const std::string& field) {
    if (!v.is_string()) refuse(field, "expected a string");
    return v.get<std::string>();
}

bool boolAt(const json& v, const std::string& field) {
    if (!v.is_boolean()) refuse(field, "expected true or false");
    return v.get<bool>();
}

uint64_t unsignedAt(const json& v, const std::string& field, uint64_t max) {
    if (!v.is_number_integer() ||
        (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
        refuse(field, "expected a non-negative integer");
    uint64_t value = v.get<uint64_t>();
    if (value > max) refuse(field, "out of range (at most " + std::to_string(max) + ")");
    return value;
}

std::vector<std::string> stringsAt(const json& v, const std::string& field) {
    if (!v.is_array()) refuse(field, "expected an array of strings");
    std::vector<std::string> out;
    for (size_t i = 0; i < v.size(); ++i)
        out.push_back(stringAt(v[i], field + "[" + std::to_string(i) + "]"));
    return out;
}

// hooks: the runtime-spec's six; any other name refused.
void readHooks(const json& hooks, Hooks& out) {
    if (!hooks.is_object()) refuse("hooks", "expected an object");
    for (const auto& [name, list] : hooks.items()) {
        const std::string field = "hooks." + name;
        if (list.is_null()) continue;
        if (!list.is_array()) refuse(field, "expected an array of hooks");
        if (list.empty()) continue;
        std::vector<Hook>* into = name == "prestart"          ? &out.prestart
                                  : name == "createRuntime"   ? &out.create_runtime
                                  : name == "createContainer" ? &out.create_container
                                  : name == "startContainer"  ? &out.start_container
                                  : name == "poststart"       ? &out.poststart
                                  : name == "poststop"        ? &out.poststop
                                                              : nullptr;
        if (!into)
            refuse(field,
                   "not a hook stockade knows (it runs prestart, createRuntime, "
                   "createContainer, startContainer, poststart and poststop)");
        for (size_t i = 0; i < list.size(); ++i) {
            const std::string at = field + "[" + std::to_string(i) + "]";
            const json& h = list[i];
            if (!h.is_object()) refuse(at, "expected an object");
            Hook hook;
            const json* path = member(h, "path");
            if (!path) refuse(at + ".path", "required");
            hook.path = stringAt(*path, at + ".path");
            if (hook.path.empty() || hook.path[0] != '/')
                refuse(at + ".path", "must be an absolute path");
            if (const json* a = member(h, "args")) hook.args = stringsAt(*a, at + ".args");
            if (const json* e = member(h, "env")) hook.env = stringsAt(*e, at + ".env");
            if (const json* t = member(h, "timeout")) {
                if (!t->is_number_integer() || t->get<int64_t>() <= 0)
                    refuse(at + ".timeout", "expected a number of seconds greater than zero");
                hook.timeout = static_cast<int>(unsignedAt(*t, at + ".timeout", 86400));
            }
            into->push_back(std::move(hook));
        }
    }
}

// A field stockade does not honour yet: refused when present and not empty.
void refuseIfSet(const json& object, const char* key, const std::string& field,
                 const std::string& why) {
    const json* v = member(object, key);
    if (!v) return;
    if ((v->is_array() || v->is_object() || v->is_string()) && v->empty()) return;
    refuse(field, why);
}

void requireAbsolute(const std::string& path, const std::string& field) {
    if (path.empty() || path[0] != '/') refuse(field, "must be an absolute path");
    if (path.size() > 4096) refuse(field, "longer than PATH_MAX");
    for (size_t i = 0; i < path.size();) {
        size_t end = path.find('/', i + 1);
        if (end == std::string::npos) end = path.size();
        if (path.compare(i, end - i, "/..") == 0) refuse(field, "must not contain \"..\"");
        i = end;
    }
}

void readProcess(const json& p, Config& out) {
    if (!p.is_object()) refuse("process", "expected an object");
    if (const json* t = member(p, "terminal")) out.terminal = boolAt(*t, "process.terminal");
    if (const json* size = member(p, "consoleSize"); size && out.terminal) {
        if (const json* h = member(*size, "height"))
            out.console_rows =
                static_cast<unsigned short>(unsignedAt(*h, "process.consoleSize.height", 65535));
        if (const json* w = member(*size, "width"))
            out.console_cols =
                static_cast<unsigned short>(unsignedAt(*w, "process.consoleSize.width", 65535));
    }
    const json* args = member(p, "args");
    if (!args) refuse("process.args", "required");
    out.args = stringsAt(*args, "process.args");
    if (out.args.empty() || out.args[0].empty())
        refuse("process.args", "must name the program to run");
    if (const json* env = member(p, "env")) out.env = stringsAt(*env, "process.env");
    for (const std::string& e : out.env)
        if (e.find('=') == std::string::npos || e[0] == '=')
            refuse("process.env", "\"" + e + "\" is not KEY=VALUE");
    const json* cwd = member(p, "cwd");
    if (!cwd) refuse("process.cwd", "required");
    out.cwd = stringAt(*cwd, "process.cwd");
    requireAbsolute(out.cwd, "process.cwd");
    if (const json* user = member(p, "user")) {
        if (const json* uid = member(*user, "uid"))
            out.uid = static_cast<uid_t>(unsignedAt(*uid, "process.user.uid", 0xfffffffe));
        if (const json* gid = member(*user, "gid"))
            out.gid = static_cast<gid_t>(unsignedAt(*gid, "process.user.gid", 0xfffffffe));
        if (const json* groups = member(*user, "additionalGids")) {
            if (!groups->is_array()) refuse("process.user.additionalGids", "expected an array");
            // setgroups(2) takes at most NGROUPS_MAX (65536) groups.
            if (groups->size() > 65536)
                refuse("process.user.additionalGids", "more than 65536 groups");
            for (const json& g : *groups)
                out.additional_gids.push_back(
                    static_cast<gid_t>(unsignedAt(g, "process.user.additionalGids", 0xfffffffe)));
        }
        if (const json* mask = member(*user, "umask"))
            out.umask = static_cast<mode_t>(unsignedAt(*mask, "process.user.umask", 0777));
    }
    if (const json* caps = member(p, "capabilities")) {
        if (!caps->is_object()) refuse("process.capabilities", "expected an object");
        Config::CapabilityMasks& m = out.capabilities;
        const std::pair<const char*, uint64_t*> sets[] = {{"bounding", &m.bounding},
                                                          {"effective", &m.effective},
                                                          {"inheritable", &m.inheritable},
                                                          {"permitted", &m.permitted},
                                                          {"ambient", &m.ambient}};
        for (const auto& [set, mask] : sets)
            if (const json* names = member(*caps, set)) {
                std::string field = std::string("process.capabilities.") + set;
                for (const std::string& name : stringsAt(*names, field)) {
                    int number = capabilityNumber(name);
                    if (number < 0) refuse(field, "unknown capability \"" + name + "\"");
                    *mask |= uint64_t{1} << number;
                    if (mask == &m.bounding) out.bounding_names.push_back(name);
                }
            }
        // What capset(2) and PR_CAP_AMBIENT_RAISE would refuse, said here.
        auto missing = [](uint64_t set, uint64_t in) { return (set & ~in) != 0; };
        if (missing(m.effective, m.permitted))
            refuse("process.capabilities.effective", "holds a capability permitted does not");
        if (missing(m.permitted, m.bounding))
            refuse("process.capabilities.permitted", "holds a capability bounding does not");
        // PR_CAP_AMBIENT_RAISE refuses a capability not both permitted and
        // inheritable; runc and crun go on without it (runc spec's own
        // default asks ambient with no inheritable set), and so does this.
        m.ambient_dropped = m.ambient & ~(m.permitted & m.inheritable);
        m.ambient &= m.permitted & m.inheritable;
    }
    if (const json* limits = member(p, "rlimits")) {
        if (!limits->is_array()) refuse("process.rlimits", "expected an array");
        static const std::pair<const char*, int> kNames[] = {
            {"RLIMIT_AS", RLIMIT_AS},
            {"RLIMIT_CORE", RLIMIT_CORE},
            {"RLIMIT_CPU", RLIMIT_CPU},
            {"RLIMIT_DATA", RLIMIT_DATA},
            {"RLIMIT_FSIZE", RLIMIT_FSIZE},
            {"RLIMIT_LOCKS", RLIMIT_LOCKS},
            {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
            {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
            {"RLIMIT_NICE", RLIMIT_NICE},
            {"RLIMIT_NOFILE", RLIMIT_NOFILE},
            {"RLIMIT_NPROC", RLIMIT_NPROC},
            {"RLIMIT_RSS", RLIMIT_RSS},
            {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
            {"RLIMIT_RTTIME", RLIMIT_RTTIME},
            {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
            {"RLIMIT_STACK", RLIMIT_STACK}};
        std::set<int> seen;
        for (size_t i = 0; i < limits->size(); ++i) {
            const json& l = (*limits)[i];
            std::string field = "process.rlimits[" + std::to_string(i) + "]";
            const json* type = member(l, "type");
            if (!type) refuse(field + ".type", "required");
            std::string name = stringAt(*type, field + ".type");
            Rlimit r;
            bool known = false;
            for (const auto& [n, res] : kNames)
                if (name == n) {
                    r.resource = res;
                    known = true;
                }
            if (!known) refuse(field + ".type", "unknown rlimit \"" + name + "\"");
            if (!seen.insert(r.resource).second) refuse(field + ".type", name + " given twice");
            const json* soft = member(l, "soft");
            const json* hard = member(l, "hard");
            if (!soft || !hard) refuse(field, "soft and hard are required");
            r.soft = unsignedAt(*soft, field + ".soft", UINT64_MAX);
            r.hard = unsignedAt(*hard, field + ".hard", UINT64_MAX);
            if (r.soft > r.hard) refuse(field, "soft above hard");
            out.rlimits.push_back(r);
        }
    }
    if (const json* nnp = member(p, "noNewPrivileges"))
        out.no_new_privileges = boolAt(*nnp, "process.noNewPrivileges");
    refuseIfSet(p, "apparmorProfile", "process.apparmorProfile", "not supported yet");
    refuseIfSet(p, "selinuxLabel", "process.selinuxLabel", "not supported yet");
    if (const json* adj = member(p, "oomScoreAdj")) {
        if (!adj->is_number_integer() || adj->get<int64_t>() < -1000 || adj->get<int64_t>() > 1000)
            refuse("process.oomScoreAdj", "expected an integer from -1000 to 1000");
        out.oom_score_adj = static_cast<int>(adj->get<int64_t>());
    }
    refuseIfSet(p, "scheduler", "process.scheduler", "not supported yet");
    refuseIfSet(p, "ioPriority", "process.ioPriority", "not supported yet");
    refuseIfSet(p, "execCPUAffinity", "process.execCPUAffinity", "not supported yet");
}

// Mount options: flags for mount(2), the bind forms, and the rest passed
// as data. Propagation other than private is refused (every mount of a
// stockade sandbox is private), as is what no code here does yet.
// The recursive forms (`rro`, `rnosuid`, ..., runc's and the runtime-spec's
// since 1.1, which containerd 2 sends for read-only mounts) are their plain
// forms here: stockade sets a bind's attributes on every mount of it
// (mount_setattr with AT_RECURSIVE), so `ro` already holds below as `rro`
// asks. `nosymfollow` (Linux 5.10) likewise, on a bind or any other mount.
void readMountOptions(const std::vector<std::string>& options, const std::string& field, Mount& m) {
    static const std::pair<const char*, unsigned long> kSet[] = {{"ro", MS_RDONLY},
                                                                 {"nosuid", MS_NOSUID},
                                                                 {"nodev", MS_NODEV},
                                                                 {"noexec", MS_NOEXEC},
                                                                 {"sync", MS_SYNCHRONOUS},
                                                                 {"dirsync", MS_DIRSYNC},
                                                                 {"noatime", MS_NOATIME},
                                                                 {"nodiratime", MS_NODIRATIME},
                                                                 {"relatime", MS_RELATIME},
                                                                 {"strictatime", MS_STRICTATIME},
                                                                 {"mand", MS_MANDLOCK},
                                                                 {"nosymfollow", MS_NOSYMFOLLOW},
                                                                 {"rro", MS_RDONLY},
                                                                 {"rnosuid", MS_NOSUID},
                                                                 {"rnodev", MS_NODEV},
                                                                 {"rnoexec", MS_NOEXEC},
                                                                 {"rnoatime", MS_NOATIME},
                                                                 {"rnodiratime", MS_NODIRATIME},
                                                                 {"rrelatime", MS_RELATIME},
                                                                 {"rstrictatime", MS_STRICTATIME},
                                                                 {"rnosymfollow", MS_NOSYMFOLLOW}};
    static const std::pair<const char*, unsigned long> kClear[] = {
        {"rw", MS_RDONLY},
        {"suid", MS_NOSUID},
        {"dev", MS_NODEV},
        {"exec", MS_NOEXEC},
        {"async", MS_SYNCHRONOUS},
        {"atime", MS_NOATIME},
        {"diratime", MS_NODIRATIME},
        {"norelatime", MS_RELATIME},
        {"nostrictatime", MS_STRICTATIME},
        {"nomand", MS_MANDLOCK},
        {"symfollow", MS_NOSYMFOLLOW},
        {"rrw", MS_RDONLY},
        {"rsuid", MS_NOSUID},
        {"rdev", MS_NODEV},
        {"rexec", MS_NOEXEC},
        {"ratime", MS_NOATIME},
        {"rdiratime", MS_NODIRATIME},
        {"rnorelatime", MS_RELATIME},
        {"rnostrictatime", MS_STRICTATIME},
        {"rsymfollow", MS_NOSYMFOLLOW}};
    std::string data;
    for (const std::string& o : options) {
        bool done = false;
        for (const auto& [name, flag] : kSet)
            if (o == name) m.flags |= flag, done = true;
        for (const auto& [name, flag] : kClear)
            if (o == name) m.flags &= ~flag, done = true;
        if (done) continue;
        if (o == "bind" || o == "rbind") {
            m.bind = true;
            m.recursive = m.recursive || o == "rbind";
        } else if (o == "private" || o == "rprivate") {
            // What every stockade mount is already.
        } else if (o == "slave" || o == "rslave") {
            m.slave = o;  // a bind's: judged by create against its source
        } else if (o == "shared" || o == "rshared" || o == "unbindable" || o == "runbindable") {
            refuse(field, "propagation \"" + o + "\" is not supported (every mount is private)");
        } else if (o == "tmpcopyup") {
            m.tmpcopyup = true;  // judged against the image by create
        } else if (o == "remount" || o == "idmap" || o == "ridmap" || o.starts_with("idmap=") ||
                   o.starts_with("ridmap=") || o == "move" || o == "recursive") {
            refuse(field, "option \"" + o + "\" is not supported yet");
        } else if (o.find(',') != std::string::npos) {
            refuse(field, "an option may not hold a comma");
        } else {
            data += (data.empty() ? "" : ",") + o;  // newinstance, ptmxmode=, mode=, size=...
        }
    }
    m.data = data;
}

void readMounts(const json& mounts, Config& out) {
    if (!mounts.is_array()) refuse("mounts", "expected an array");
    for (size_t i = 0; i < mounts.size(); ++i) {
        const json& j = mounts[i];
        std::string field = "mounts[" + std::to_string(i) + "]";
        Mount m;
        const json* dest = member(j, "destination");
        if (!dest) refuse(field + ".destination", "required");
        m.destination = stringAt(*dest, field + ".destination");
        requireAbsolute(m.destination, field + ".destination");
        field += " (" + m.destination + ")";
        if (const json* t = member(j, "type")) m.type = stringAt(*t, field + ".type");
        if (const json* s = member(j, "source")) m.source = stringAt(*s, field + ".source");
        std::vector<std::string> options;
        if (const json* o = member(j, "options")) options = stringsAt(*o, field + ".options");
        readMountOptions(options, field + ".options", m);
        refuseIfSet(j, "uidMappings", field + ".uidMappings", "idmapped mounts not supported yet");
        refuseIfSet(j, "gidMappings", field + ".gidMappings", "idmapped mounts not supported yet");
        if (m.type == "bind" || m.type == "none") m.bind = true;
        if (!m.slave.empty() && !m.bind)
            refuse(field + ".options",
                   "propagation \"" + m.slave + "\" is not supported (every mount is private)");
        if (m.tmpcopyup && (m.bind || m.type != "tmpfs"))
            refuse(field + ".options", "tmpcopyup is for a tmpfs");
        if (m.bind) {
            m.type = "bind";
            if (m.source.empty()) refuse(field + ".source", "a bind mount needs a source");
            if (!m.data.empty())
                refuse(field + ".options", "option \"" + m.data + "\" means nothing to a bind");
        } else if (m.type == "proc" && !m.data.empty()) {
            // A proc takes few options; any other would reach the kernel as
            // host root's (pidns= opens a host path): refused by name.
            for (size_t i = 0; i <= m.data.size();) {
                size_t end = m.data.find(',', i);
                if (end == std::string::npos) end = m.data.size();
                const std::string option = m.data.substr(i, end - i);
                const std::string key = option.substr(0, option.find('='));
                if (key != "hidepid" && key != "gid" && key != "subset")
                    refuse(field + ".options", "option \"" + option +
                                                   "\" is not supported for proc (only hidepid, "
                                                   "gid and subset)");
                i = end + 1;
            }
        } else if (m.type == "cgroup" || m.type == "cgroup2") {
            // The container's own cgroup directories, bound read-only
            // (oci/container_plan.cpp); a hierarchy named in the options is
            // a v1 mount of one controller, which no client measured asks.
            if (!m.data.empty())
                refuse(field + ".options",
                       "option \"" + m.data + "\" means nothing to a cgroup mount");
        } else if (m.type != "proc" && m.type != "tmpfs" && m.type != "devpts" &&
                   m.type != "mqueue" && m.type != "sysfs") {
            refuse(field + ".type", "type \"" + m.type + "\" is not supported");
        }
        out.mounts.push_back(std::move(m));
    }
}

std::vector<IdMap> readIdMaps(const json& v, const std::string& field) {
    if (!v.is_array()) refuse(field, "expected an array");
    std::vector<IdMap> out;
    for (size_t i = 0; i < v.size(); ++i) {
        std::string f = field + "[" + std::to_string(i) + "]";
        const json* c = member(v[i], "containerID");
        const json* h = member(v[i], "hostID");
        const json* s = member(v[i], "size");
        if (!c || !h || !s) refuse(f, "containerID, hostID and size are required");
        IdMap m{static_cast<uint32_t>(unsignedAt(*c, f + ".containerID", 0xfffffffe)),
                static_cast<uint32_t>(unsignedAt(*h, f + ".hostID", 0xfffffffe)),
                static_cast<uint32_t>(unsignedAt(*s, f + ".size", 0xffffffff))};
        if (m.size == 0) refuse(f + ".size", "must be at least 1");
        // A range past the last id would wrap: the ids it gives would not
        // be the ones the kernel's map holds (it refuses the map, but a
        // group could be taken on its word before).
        if (uint64_t{m.host_id} + m.size > (uint64_t{1} << 32) ||
            uint64_t{m.container_id} + m.size > (uint64_t{1} << 32))
            refuse(f + ".size", "the range runs past the last id (4294967295)");
        out.push_back(m);
    }
    return out;
}

void readDeviceRules(const json& rules, Resources& out) {
    if (!rules.is_array()) refuse("linux.resources.devices", "expected an array");
    for (size_t i = 0; i < rules.size(); ++i) {
        const std::string f = "linux.resources.devices[" + std::to_string(i) + "]";
        const json& r = rules[i];
        if (!r.is_object()) refuse(f, "expected an object");
        DeviceRule rule;
        const json* allow = member(r, "allow");
        if (!allow) refuse(f + ".allow", "required");
        rule.allow = boolAt(*allow, f + ".allow");
        if (const json* type = member(r, "type"); type && !type->is_null()) {
            const std::string t = stringAt(*type, f + ".type");
            if (t != "a" && t != "c" && t != "u" && t != "b" && t != "p")
                refuse(f + ".type", "unknown device type \"" + t + "\"");
            rule.type = t == "u" ? 'c' : t[0];
        }
        for (const auto& [name, into] :
             {std::pair{"major", &rule.major}, std::pair{"minor", &rule.minor}}) {
            const json* n = member(r, name);
            if (!n || n->is_null()) continue;
            if (!n->is_number_integer()) refuse(f + "." + name, "expected an integer");
            *into = n->get<int64_t>();
            // -1 is any, as the runtime spec's Go type takes it. Linux's
            // device numbers are 12 bits (major) and 20 (minor): cgroup v1
            // reads 4294967295 as "any", so a larger number would match
            // every device there (the second review's F1).
            const int64_t last = std::string(name) == "major" ? 4095 : 1048575;
            if (*into < -1 || *into > last)
                refuse(f + "." + name,
                       "not a device number (-1 for any, up to " + std::to_string(last) + ")");
        }
        if (const json* access = member(r, "access"); access && !access->is_null()) {
            rule.access = stringAt(*access, f + ".access");
            for (char c : rule.access)
                if (c != 'r' && c != 'w' && c != 'm')
                    refuse(f + ".access", "\"" + rule.access + "\" is not made of r, w and m");
        }
        out.device_rules.push_back(std::move(rule));
    }
}

// The numbers of a cpuset list ("0-3,8"), the form cpuset.cpus and
// cpuset.mems take (the kernel's stride form "0-7:2/4" is not read: runc
// and podman never write it); nullopt when malformed. Bounded: a list may
// not name more than kMaxCpusetNumber, the kernel's largest NR_CPUS.
constexpr unsigned kMaxCpusetNumber = 8192;
// A bitset, not a set of numbers: a config of 4 MiB of "0-8191" ranges
// costs one pass over it, not a tree insertion per number named.
using CpusetBits = std::bitset<kMaxCpusetNumber>;
std::optional<CpusetBits> cpusetNumbers(const std::string& text) {
    CpusetBits out;
    auto number = [](std::string_view part, unsigned& value) {
        auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
        return ec == std::errc() && end == part.data() + part.size() && !part.empty() &&
               value < kMaxCpusetNumber;
    };
    for (size_t i = 0; i <= text.size();) {
        size_t end = text.find(',', i);
        if (end == std::string::npos) end = text.size();
        std::string_view part(text.data() + i, end - i);
        const size_t dash = part.find('-');
        unsigned first = 0, last = 0;
        if (!number(part.substr(0, dash), first)) return std::nullopt;
        last = first;
        if (dash != std::string_view::npos && !number(part.substr(dash + 1), last))
            return std::nullopt;
        if (last < first) return std::nullopt;
        if (last - first + 1 == kMaxCpusetNumber) {
            out.set();
        } else {
            CpusetBits range;
            range.set();
            range >>= kMaxCpusetNumber - (last - first + 1);  // last - first + 1 ones
            out |= range << first;
        }
        i = end + 1;
    }
    return out;
}

// cpu.cpus or cpu.mems: a well-formed list of CPUs (memory nodes) this host
// has online, judged here so that create refuses it before it makes
// anything (the kernel would refuse it only at the write, EINVAL, which
// does not say which number). A host without NUMA has no node directory:
// node 0 alone.
std::string cpusetListAt(const json& v, const std::string& field, bool mems) {
    const std::string text = stringAt(v, field);
    auto asked = cpusetNumbers(text);
    if (!asked)
        refuse(field, "\"" + text +
                          "\" is not a list of numbers and ranges (\"0-3,8\", each below " +
                          std::to_string(kMaxCpusetNumber) + ")");
    const char* online_file =
        mems ? "/sys/devices/system/node/online" : "/sys/devices/system/cpu/online";
    std::string online = readCgroupFileOr(online_file);
    while (!online.empty() && (online.back() == '\n' || online.back() == ' ')) online.pop_back();
    if (online.empty() && mems) online = "0";
    auto host = cpusetNumbers(online);
    if (!host) refuse(field, std::string("cannot read the host's list in ") + online_file);
    for (unsigned n = 0; n < kMaxCpusetNumber; ++n)
        if (asked->test(n) && !host->test(n))
            refuse(field, std::string(mems ? "memory node " : "CPU ") + std::to_string(n) +
                              " is not online on this host (" + online_file + ": " + online + ")");
    return text;
}

// linux.resources, for create and update alike: what oci/cgroups.cpp can
// write is read, anything else refused by name. Null members and empty
// objects and arrays ask nothing (clients send them so).
void readResources(const json& res, Resources& out) {
    if (!res.is_object()) refuse("linux.resources", "expected an object");
    auto integer = [](const json& v, const std::string& field) {
        if (!v.is_number_integer()) refuse(field, "expected an integer");
        return v.get<int64_t>();
    };
    for (const auto& [key, value] : res.items()) {
        if (value.is_null()) continue;
        // Device rules: inside a user namespace no device node but the
        // ones stockade binds can be made or opened (mknod is refused,
        // every filesystem mounted there is nodev). They are read so that
        // create can judge linux.devices' nodes by them (oci/devices.h).
        if (key == "devices") {
            readDeviceRules(value, out);
            continue;
        }
        if ((value.is_array() || value.is_object()) && value.empty()) continue;
        const std::string section = "linux.resources." + key;
        if ((key == "memory" || key == "pids" || key == "cpu") && !value.is_object())
            refuse(section, "expected an object");
        if (key == "memory" || key == "pids") {
            for (const auto& [name, v] : value.items()) {
                if (v.is_null()) continue;
                const std::string field = section + "." + name;
                if (key == "memory" && name == "reservation") {
                    // runc's "unset" is 0, as for the cpu fields.
                    if (int64_t bytes = integer(v, field); bytes != 0)
                        out.memory_reservation = bytes;
                    continue;
                }
                if (key == "memory" && name == "swappiness") {
                    out.swappiness = unsignedAt(v, field, 100);
                    continue;
                }
                if (key == "memory" && name == "disableOOMKiller") {
                    if (!v.is_boolean()) refuse(field, "expected true or false");
                    out.disable_oom_killer = v.get<bool>();
                    continue;
                }
                const bool swap = key == "memory" && name == "swap";
                if (name != "limit" && !swap) refuse(field, "not enforced yet");
                (swap              ? out.swap_limit
                 : key == "memory" ? out.memory_limit
                                   : out.pids_limit) = integer(v, field);
            }
            continue;
        }
        if (key == "cpu") {
            for (const auto& [name, v] : value.items()) {
                const std::string field = section + "." + name;
                if (v.is_null() || (v.is_string() && v.get<std::string>().empty())) continue;
                if (name == "shares") {
                    // runc's "unset"; a weight the kernel keeps in 2..262144.
                    uint64_t shares = unsignedAt(v, field, 262144);
                    if (shares != 0) out.cpu_shares = std::max<uint64_t>(shares, 2);
                } else if (name == "quota") {
                    if (int64_t quota = integer(v, field); quota != 0) out.cpu_quota = quota;
                } else if (name == "period") {
                    if (uint64_t period = unsignedAt(v, field, 1000000); period != 0) {
                        if (period < 1000) refuse(field, "below the kernel's 1000 microseconds");
                        out.cpu_period = period;
                    }
                } else if (name == "cpus" || name == "mems") {
                    (name == "cpus" ? out.cpuset_cpus : out.cpuset_mems) =
                        cpusetListAt(v, field, name == "mems");
                } else {
                    refuse(field, "not enforced yet");
                }
            }
            continue;
        }
        if (key == "hugepageLimits") {
            if (!value.is_array()) refuse(section, "expected an array");
            for (size_t i = 0; i < value.size(); ++i) {
                const std::string field = section + "[" + std::to_string(i) + "]";
                const json& limit = value[i];
                if (!limit.is_object()) refuse(field, "expected an object");
                const json* size = member(limit, "pageSize");
                const json* bytes = member(limit, "limit");
                if (!size || !bytes) refuse(field, "needs pageSize and limit");
                std::string name = stringAt(*size, field + ".pageSize");
                if (auto problem = hugePageSizeProblem(name)) refuse(field + ".pageSize", *problem);
                for (const auto& [seen, unused] : out.hugepage_limits)
                    if (seen == name) refuse(field + ".pageSize", name + " given twice");
                out.hugepage_limits.emplace_back(std::move(name),
                                                 unsignedAt(*bytes, field + ".limit", UINT64_MAX));
            }
            continue;
        }
        if (key == "unified") {
            if (!value.is_object()) refuse(section, "expected an object");
            for (const auto& [name, v] : value.items()) {
                if (auto problem = unifiedKeyProblem(name)) refuse(section, *problem);
                out.unified[name] = stringAt(v, section + "." + name);
            }
            continue;
        }
        refuse(section, "resource limits of this kind are not enforced yet");
    }
    // The spec's swap is memory and swap together (cgroup v1's memsw), so
    // a limit on it needs a limit on memory no higher.
    if (out.swap_limit && *out.swap_limit >= 0 &&
        (!out.memory_limit || *out.memory_limit < 0 || *out.swap_limit < *out.memory_limit))
        refuse("linux.resources.memory.swap", "below memory.limit, or without one");
}

// linux.personality: the domain alone. The spec defines no flag, and each
// of personality(2)'s would weaken the container rather than describe it
// (ADDR_NO_RANDOMIZE turns ASLR off, READ_IMPLIES_EXEC makes readable
// memory executable, ADDR_COMPAT_LAYOUT and MMAP_PAGE_ZERO change the
// address space), so any flag is refused by name: runc 1.2 warns and
// drops them, youki refuses them; stockade never drops what it is asked.
void readPersonality(const json& p, Config& out) {
    if (!p.is_object()) refuse("linux.personality", "expected an object");
    const json* domain = member(p, "domain");
    if (!domain) refuse("linux.personality.domain", "required");
    const std::string d = stringAt(*domain, "linux.personality.domain");
    if (d == "LINUX")
        out.personality = 0x0000;  // PER_LINUX
    else if (d == "LINUX32")
        out.personality = 0x0008;  // PER_LINUX32: uname(2) says i686 (armv7l...)
    else
        refuse("linux.personality.domain", "unknown domain \"" + d + "\" (LINUX or LINUX32)");
    if (const json* flags = member(p, "flags")) {
        std::vector<std::string> names = stringsAt(*flags, "linux.personality.flags");
        if (!names.empty())
            refuse("linux.personality.flags",
                   "\"" + names[0] +
                       "\": no flag is supported (the spec defines none; personality(2)'s "
                       "would weaken the container: ASLR, executable reads, the address "
                       "space's layout)");
    }
}

// "/a//b/./c/" as "/a/b/c" (".." is refused before this).
std::string lexicallyNormal(const std::string& path) {
    std::string out;
    for (size_t i = 0; i < path.size();) {
        size_t end = path.find('/', i);
        if (end == std::string::npos) end = path.size();
        const std::string part = path.substr(i, end - i);
        if (!part.empty() && part != ".") out += "/" + part;
        i = end + 1;
    }
    return out.empty() ? "/" : out;
}

void readDevices(const json& devices, Config& out) {
    if (!devices.is_array()) refuse("linux.devices", "expected an array");
    for (size_t i = 0; i < devices.size(); ++i) {
        const std::string f = "linux.devices[" + std::to_string(i) + "]";
        const json& d = devices[i];
        if (!d.is_object()) refuse(f, "expected an object");
        Device device;
        const json* path = member(d, "path");
        if (!path) refuse(f + ".path", "required");
        device.path = stringAt(*path, f + ".path");
        requireAbsolute(device.path, f + ".path");
        // One spelling per path ("/dev/./null" is /dev/null): what is
        // compared below and by create is the path the bind lands on.
        device.path = lexicallyNormal(device.path);
        const json* type = member(d, "type");
        if (!type) refuse(f + ".type", "required");
        const std::string t = stringAt(*type, f + ".type");
        if (t == "p") refuse(f + ".type", "FIFOs are not supported (only c, u and b)");
        if (t != "c" && t != "u" && t != "b")
            refuse(f + ".type", "unknown device type \"" + t + "\" (c, u, b or p)");
        device.type = t == "b" ? 'b' : 'c';
        const json* major = member(d, "major");
        const json* minor = member(d, "minor");
        if (!major || !minor) refuse(f, "major and minor are required for a c, u or b device");
        device.major = static_cast<uint32_t>(unsignedAt(*major, f + ".major", 0xfff));
        device.minor = static_cast<uint32_t>(unsignedAt(*minor, f + ".minor", 0xfffff));
        if (const json* mode = member(d, "fileMode"))
            device.file_mode = static_cast<mode_t>(unsignedAt(*mode, f + ".fileMode", 0177777));
        if (const json* uid = member(d, "uid"))
            device.uid = static_cast<uint32_t>(unsignedAt(*uid, f + ".uid", 0xfffffffe));
        if (const json* gid = member(d, "gid"))
            device.gid = static_cast<uint32_t>(unsignedAt(*gid, f + ".gid", 0xfffffffe));
        for (const Device& earlier : out.devices)
            if (earlier.path == device.path) refuse(f + ".path", device.path + " listed twice");
        out.devices.push_back(std::move(device));
    }
}

void readLinux(const json& l, Config& out) {
    if (!l.is_object()) refuse("linux", "expected an object");
    std::set<std::string> types;
    if (const json* nss = member(l, "namespaces")) {
        if (!nss->is_array()) refuse("linux.namespaces", "expected an array");
        for (size_t i = 0; i < nss->size(); ++i) {
            std::string f = "linux.namespaces[" + std::to_string(i) + "]";
            Namespace n;
            const json* type = member((*nss)[i], "type");
            if (!type) refuse(f + ".type", "required");
            n.type = stringAt(*type, f + ".type");
            if (const json* path = member((*nss)[i], "path")) n.path = stringAt(*path, f + ".path");
            static const std::set<std::string> kKnown = {"pid", "network", "mount", "ipc",
                                                         "uts", "user",    "cgroup"};
            if (n.type == "time") refuse(f + ".type", "time namespaces are not supported yet");
            if (!kKnown.count(n.type)) refuse(f + ".type", "unknown namespace \"" + n.type + "\"");
            if (!types.insert(n.type).second) refuse(f + ".type", n.type + " listed twice");
            if (!n.path.empty()) {
                requireAbsolute(n.path, f + ".path");
                static const std::map<std::string, std::string> kWhyNot = {
                    {"mount", "the container's root is built in a mount namespace of its own"},
                    {"user",
                     "the container's user namespace is made by stockade, its ids leased or "
                     "the caller's (never host root, G3)"},
                    {"cgroup", "the container is given a cgroup namespace of its own"}};
                if (auto why = kWhyNot.find(n.type); why != kWhyNot.end())
                    refuse(f + ".path", "joining a " + n.type +
                                            " namespace is not supported yet: " + why->second +
                                            " (network, ipc, uts and pid can be "
                                            "joined)");
            }
            out.namespaces.push_back(n);
        }
    }
    if (!types.count("mount"))
        refuse("linux.namespaces", "stockade needs a mount namespace of the container's own");
    if (const json* u = member(l, "uidMappings"))
        out.uid_mappings = readIdMaps(*u, "linux.uidMappings");
    if (const json* g = member(l, "gidMappings"))
        out.gid_mappings = readIdMaps(*g, "linux.gidMappings");
    if (const json* masked = member(l, "maskedPaths")) {
        out.masked_paths = stringsAt(*masked, "linux.maskedPaths");
        for (const std::string& p : out.masked_paths) requireAbsolute(p, "linux.maskedPaths");
    }
    if (const json* ro = member(l, "readonlyPaths")) {
        out.readonly_paths = stringsAt(*ro, "linux.readonlyPaths");
        for (const std::string& p : out.readonly_paths) requireAbsolute(p, "linux.readonlyPaths");
    }
    if (const json* sysctl = member(l, "sysctl")) {
        if (!sysctl->is_object()) refuse("linux.sysctl", "expected an object");
        for (const auto& [key, value] : sysctl->items())
            out.sysctl[key] = stringAt(value, "linux.sysctl." + key);
    }
    if (const json* devices = member(l, "devices")) readDevices(*devices, out);
    if (const json* path = member(l, "cgroupsPath"))
        out.cgroups_path = stringAt(*path, "linux.cgroupsPath");
    if (const json* res = member(l, "resources")) readResources(*res, out.resources);
    if (const json* prop = member(l, "rootfsPropagation")) {
        std::string p = stringAt(*prop, "linux.rootfsPropagation");
        if (p == "slave" || p == "rslave")
            out.rootfs_slave = p;  // said by create: taken as private
        else if (!p.empty() && p != "private" && p != "rprivate")
            refuse("linux.rootfsPropagation",
                   "\"" + p + "\" is not supported (private, or slave taken as private)");
    }
    refuseIfSet(l, "mountLabel", "linux.mountLabel", "not supported yet");
    refuseIfSet(l, "intelRdt", "linux.intelRdt", "not supported");
    if (const json* persona = member(l, "personality")) readPersonality(*persona, out);
    refuseIfSet(l, "timeOffsets", "linux.timeOffsets", "not supported yet");
    refuseIfSet(l, "memoryPolicy", "linux.memoryPolicy", "not supported yet");
    refuseIfSet(l, "netDevices", "linux.netDevices", "not supported yet");
    if (const json* sc = member(l, "seccomp")) {
        // A Docker-style rule that needs a capability is in when the
        // container's bounding set holds it.
        seccomp::OciImportOptions options;
        options.capabilities = out.bounding_names;
        options.keep_first_unconditional = true;
        options.dropped = &out.seccomp_dropped;
        auto policy = seccomp::importOciSeccomp(sc->dump(), options);
        if (!policy) refuse("linux.seccomp", policy.error().describe());
        bool notify = policy->default_action == seccomp::Action::Notify;
        for (const seccomp::SyscallRule& rule : policy->rules)
            notify = notify || rule.action == seccomp::Action::Notify;
        if (notify) refuse("linux.seccomp", "SCMP_ACT_NOTIFY is not supported yet");
        out.seccomp = std::move(*policy);
    }
}

}  // namespace

const Namespace* Config::findNamespace(std::string_view type) const {
    for (const Namespace& n : namespaces)
        if (n.type == type) return &n;
    return nullptr;
}

bool Config::sharesPidNamespace() const {
    const Namespace* pid = findNamespace("pid");
    return !pid || !pid->path.empty();
}

Result<Config> parseProcess(std::string_view json_text) {
    if (json_text.size() > kMaxConfigBytes)
        return Error::message("process.json: larger than " + std::to_string(kMaxConfigBytes) +
                              " bytes");
    json doc = json::parse(json_text, nullptr, false);
    if (doc.is_discarded()) return Error::message("process.json: not valid JSON");
    Config out;
    try {
        readProcess(doc, out);
    } catch (const Refusal& r) {
        return Error::message("process.json: " + r.field + ": " + r.why);
    } catch (const json::exception& e) {
        return Error::message(std::string("process.json: ") + e.what());
    }
    return out;
}

Result<Resources> parseResources(std::string_view json_text) {
    if (json_text.size() > kMaxConfigBytes)
        return Error::message("linux.resources: larger than " + std::to_string(kMaxConfigBytes) +
                              " bytes");
    json doc = json::parse(json_text, nullptr, false);
    if (doc.is_discarded()) return Error::message("linux.resources: not valid JSON");
    Resources out;
    try {
        readResources(doc, out);
    } catch (const Refusal& r) {
        return Error::message(r.field + ": " + r.why);
    } catch (const json::exception& e) {
        return Error::message(std::string("linux.resources: ") + e.what());
    }
    return out;
}

Result<Config> parseConfig(std::string_view json_text) {
    if (json_text.size() > kMaxConfigBytes)
        return Error::message("config.json: larger than " + std::to_string(kMaxConfigBytes) +
                              " bytes");
    json doc = json::parse(json_text, nullptr, false);
    if (doc.is_discarded()) return Error::message("config.json: not valid JSON");
    if (!doc.is_object()) return Error::message("config.json: expected an object");
    Config out;
    try {
        const json* version = member(doc, "ociVersion");
        if (!version) refuse("ociVersion", "required");
        out.oci_version = stringAt(*version, "ociVersion");
        // 1.3 (2025-11), which engines that vendor it (containerd 2.2)
        // write: of its Linux fields netDevices is refused below, as
        // memoryPolicy and intelRdt were; its failing poststart hook is
        // still 1.2's warning (docs/oci.md).
        if (!out.oci_version.starts_with("1.0") && !out.oci_version.starts_with("1.1") &&
            !out.oci_version.starts_with("1.2") && !out.oci_version.starts_with("1.3"))
            refuse("ociVersion", "\"" + out.oci_version + "\" is not 1.0, 1.1, 1.2 or 1.3");
        const json* root = member(doc, "root");
        if (!root || !member(*root, "path")) refuse("root.path", "required");
        out.root_path = stringAt((*root)["path"], "root.path");
        if (out.root_path.empty()) refuse("root.path", "must not be empty");
        if (const json* ro = member(*root, "readonly"))
            out.root_readonly = boolAt(*ro, "root.readonly");
        const json* process = member(doc, "process");
        if (!process) refuse("process", "required (create starts the container's process)");
        readProcess(*process, out);
        if (const json* h = member(doc, "hostname")) out.hostname = stringAt(*h, "hostname");
        if (out.hostname.size() > 64) refuse("hostname", "longer than 64 bytes");
        if (const json* d = member(doc, "domainname")) out.domainname = stringAt(*d, "domainname");
        if (out.domainname && out.domainname->size() > 64)
            refuse("domainname", "longer than 64 bytes");
        if (const json* m = member(doc, "mounts")) readMounts(*m, out);
        const json* linux_section = member(doc, "linux");
        if (!linux_section) refuse("linux", "required on Linux");
        readLinux(*linux_section, out);
        // Sysctls, as runc judges them: only those a namespace of the
        // container's own holds (the IPC namespace's kernel.* and fs.mqueue.*,
        // the network namespace's net.*), written in its /proc/sys.
        for (const auto& [key, value] : out.sysctl) {
            const std::string field = "linux.sysctl." + key;
            if (key.empty() || key.size() > 255 ||
                key.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-") !=
                    std::string::npos ||
                key.find("..") != std::string::npos || key[0] == '.')
                refuse(field, "not a sysctl name");
            if (value.find('\n') != std::string::npos) refuse(field, "a value holds a newline");
            static const std::set<std::string> kIpc = {
                "kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem",
                "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced"};
            auto own = [&](const char* type) {
                const Namespace* n = out.findNamespace(type);
                return n && n->path.empty();
            };
            if (kIpc.count(key) || key.starts_with("fs.mqueue.")) {
                if (!own("ipc")) refuse(field, "needs a new ipc namespace");
            } else if (key.starts_with("net.")) {
                // A joined one must not be the host's: judged by create,
                // which writes them there (oci/container_plan.cpp).
                if (!out.findNamespace("network")) refuse(field, "needs a network namespace");
            } else {
                refuse(field, "not a namespaced sysctl: it would be the host's");
            }
        }
        const Namespace* uts = out.findNamespace("uts");
        if (!out.hostname.empty() && (!uts || !uts->path.empty()))
            refuse("hostname", "needs a new uts namespace (linux.namespaces)");
        if (out.domainname && (!uts || !uts->path.empty()))
            refuse("domainname", "needs a new uts namespace (linux.namespaces)");
        if (const json* hooks = member(doc, "hooks")) readHooks(*hooks, out.hooks);
        for (const char* other : {"solaris", "windows", "vm", "zos"})
            refuseIfSet(doc, other, other, "not a Linux container");
        if (const json* a = member(doc, "annotations")) {
            if (!a->is_object()) refuse("annotations", "expected an object");
            for (const auto& [k, v] : a->items())
                out.annotations[k] = stringAt(v, "annotations." + k);
        }
    } catch (const Refusal& r) {
        return Error::message("config.json: " + r.field + ": " + r.why);
    } catch (const json::exception& e) {
        return Error::message(std::string("config.json: ") + e.what());
    }
    return out;
}

namespace {

// capabilities(7), by number: 0 CAP_CHOWN ... 40 CAP_CHECKPOINT_RESTORE.
constexpr const char* kCapabilityNames[] = {"CAP_CHOWN",
                                            "CAP_DAC_OVERRIDE",
                                            "CAP_DAC_READ_SEARCH",
                                            "CAP_FOWNER",
                                            "CAP_FSETID",
                                            "CAP_KILL",
                                            "CAP_SETGID",
                                            "CAP_SETUID",
                                            "CAP_SETPCAP",
                                            "CAP_LINUX_IMMUTABLE",
                                            "CAP_NET_BIND_SERVICE",
                                            "CAP_NET_BROADCAST",
                                            "CAP_NET_ADMIN",
                                            "CAP_NET_RAW",
                                            "CAP_IPC_LOCK",
                                            "CAP_IPC_OWNER",
                                            "CAP_SYS_MODULE",
                                            "CAP_SYS_RAWIO",
                                            "CAP_SYS_CHROOT",
                                            "CAP_SYS_PTRACE",
                                            "CAP_SYS_PACCT",
                                            "CAP_SYS_ADMIN",
                                            "CAP_SYS_BOOT",
                                            "CAP_SYS_NICE",
                                            "CAP_SYS_RESOURCE",
                                            "CAP_SYS_TIME",
                                            "CAP_SYS_TTY_CONFIG",
                                            "CAP_MKNOD",
                                            "CAP_LEASE",
                                            "CAP_AUDIT_WRITE",
                                            "CAP_AUDIT_CONTROL",
                                            "CAP_SETFCAP",
                                            "CAP_MAC_OVERRIDE",
                                            "CAP_MAC_ADMIN",
                                            "CAP_SYSLOG",
                                            "CAP_WAKE_ALARM",
                                            "CAP_BLOCK_SUSPEND",
                                            "CAP_AUDIT_READ",
                                            "CAP_PERFMON",
                                            "CAP_BPF",
                                            "CAP_CHECKPOINT_RESTORE"};
constexpr int kCapabilityCount = sizeof(kCapabilityNames) / sizeof(kCapabilityNames[0]);

}  // namespace

int capabilityNumber(std::string_view name) {
    for (int i = 0; i < kCapabilityCount; ++i)
        if (name == kCapabilityNames[i]) return i;
    return -1;
}

std::vector<std::string> capabilityNames() {
    return std::vector<std::string>(kCapabilityNames, kCapabilityNames + kCapabilityCount);
}

Result<int> parseSignal(std::string_view text) {
    // A number as Go's Atoi takes it (runc's): a leading '+' allowed.
    std::string_view digits = text.starts_with('+') ? text.substr(1) : text;
    int value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (!digits.empty() && ec == std::errc() && end == digits.data() + digits.size()) {
        // 0 asks only whether the process is there, as runc takes it.
        if (value < 0 || value > SIGRTMAX)
            return Error::message("invalid signal \"" + std::string(text) + "\"");
        return value;
    }
    // A name in any case, with or without SIG (runc upper-cases it).
    std::string name(text);
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (name.starts_with("SIG")) name = name.substr(3);
    static const std::pair<const char*, int> kNames[] = {
        {"HUP", SIGHUP},       {"INT", SIGINT},     {"QUIT", SIGQUIT}, {"ILL", SIGILL},
        {"TRAP", SIGTRAP},     {"ABRT", SIGABRT},   {"IOT", SIGABRT},  {"BUS", SIGBUS},
        {"FPE", SIGFPE},       {"KILL", SIGKILL},   {"USR1", SIGUSR1}, {"SEGV", SIGSEGV},
        {"USR2", SIGUSR2},     {"PIPE", SIGPIPE},   {"ALRM", SIGALRM}, {"TERM", SIGTERM},
        {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD},   {"CLD", SIGCHLD},  {"CONT", SIGCONT},
        {"STOP", SIGSTOP},     {"TSTP", SIGTSTP},   {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU},
        {"URG", SIGURG},       {"XCPU", SIGXCPU},   {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM},
        {"PROF", SIGPROF},     {"WINCH", SIGWINCH}, {"IO", SIGIO},     {"POLL", SIGIO},
        {"PWR", SIGPWR},       {"SYS", SIGSYS},     {"UNUSED", SIGSYS}};
    for (const auto& [n, sig] : kNames)
        if (name == n) return sig;
    // The real-time signals as moby's table names them: RTMIN, RTMIN+1 ...
    // RTMIN+15, RTMAX-14 ... RTMAX-1, RTMAX.
    for (const auto& [base, sign, at] :
         {std::tuple<const char*, int, int>{"RTMIN", 1, SIGRTMIN}, {"RTMAX", -1, SIGRTMAX}}) {
        const std::string_view b = base;
        if (!std::string_view(name).starts_with(b)) continue;
        if (name.size() == b.size()) return at;
        if (name[b.size()] != (sign > 0 ? '+' : '-')) continue;
        int offset = 0;
        const char* first = name.data() + b.size() + 1;
        const char* last = name.data() + name.size();
        auto [stop, err] = std::from_chars(first, last, offset);
        if (err == std::errc() && stop == last && first != last && offset >= 1 &&
            offset <= (sign > 0 ? 15 : 14))
            return at + sign * offset;
    }
    return Error::message("unknown signal \"" + std::string(text) + "\"");  // runc's words
}

std::string defaultConfigJson(bool rootless) {
    json mounts = json::array({
        {{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
        {{"destination", "/dev"},
         {"type", "tmpfs"},
         {"source", "tmpfs"},
         {"options", {"nosuid", "strictatime", "mode=755", "size=65536k"}}},
        {{"destination", "/dev/pts"},
         {"type", "devpts"},
         {"source", "devpts"},
         {"options",
          rootless
              ? json{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}
              : json{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}}},
        {{"destination", "/dev/shm"},
         {"type", "tmpfs"},
         {"source", "shm"},
         {"options", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}}},
        {{"destination", "/dev/mqueue"},
         {"type", "mqueue"},
         {"source", "mqueue"},
         {"options", {"nosuid", "noexec", "nodev"}}},
        {{"destination", "/sys"},
         {"type", "sysfs"},
         {"source", "sysfs"},
         {"options", {"nosuid", "noexec", "nodev", "ro"}}},
    });
    json doc = {{"ociVersion", "1.2.0"},
                {"process",
                 {{"terminal", false},
                  {"user", {{"uid", 0}, {"gid", 0}}},
                  {"args", {"sh"}},
                  {"env", {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}},
                  {"cwd", "/"},
                  {"capabilities",
                   {{"bounding", {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"}},
                    {"effective", {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"}},
                    {"permitted", {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"}}}},
                  {"rlimits", {{{"type", "RLIMIT_NOFILE"}, {"hard", 1024}, {"soft", 1024}}}},
                  {"noNewPrivileges", true}}},
                {"root", {{"path", "rootfs"}, {"readonly", true}}},
                {"hostname", "stockade"},
                {"mounts", mounts},
                {"linux",
                 {{"namespaces",
                   {{{"type", "pid"}},
                    {{"type", "network"}},
                    {{"type", "ipc"}},
                    {{"type", "uts"}},
                    {{"type", "mount"}},
                    {{"type", "cgroup"}},
                    {{"type", "user"}}}},
                  {"maskedPaths",
                   {"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                    "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                    "/proc/sched_debug", "/sys/firmware", "/proc/scsi"}},
                  {"readonlyPaths",
                   {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}}}}};
    return doc.dump(2) + "\n";
}

}  // namespace stockade::oci
