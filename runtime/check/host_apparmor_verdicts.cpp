// Ubuntu 23.10+ (kernel.apparmor_restrict_unprivileged_userns = 1): an
// unconfined process that is not root gets its user namespaces confined by
// AppArmor's unprivileged_userns profile, which denies every capability in
// them, so the sandbox's first mount fails. A profile that grants `userns`
// to the binary lifts it; the install and the .deb ship one for the
// installed path (contrib/apparmor/stockade.in, under
// PREFIX/share/stockade/apparmor) and copy it into /etc/apparmor.d where
// the parser accepts it. These verdicts say whether
// this binary is covered and, when not (a build tree, another prefix), name
// the profile to write and the command that loads it.
#include <errno.h>

#include <string>
#include <string_view>

#include "runtime/check/host_check.h"
#include "runtime/check/host_verdicts.h"

namespace stockade {

AppArmorLabel parseAppArmorLabel(std::string_view label) {
    while (!label.empty() && (label.back() == '\n' || label.back() == ' ' || label.back() == '\0'))
        label.remove_suffix(1);
    if (label.empty()) return {};
    // "NAME (MODE)"; a name may hold spaces, the mode is the last parenthesis.
    if (label.back() == ')') {
        if (auto open = label.rfind(" ("); open != std::string_view::npos)
            return {std::string(label.substr(0, open)),
                    std::string(label.substr(open + 2, label.size() - open - 3))};
    }
    return {std::string(label), ""};
}

std::string appArmorAttachment(std::string_view text) {
    constexpr std::string_view kHead = "profile stockade ";
    size_t at = 0;
    while (at < text.size()) {
        size_t end = text.find('\n', at);
        std::string_view line = text.substr(at, end == std::string_view::npos ? end : end - at);
        at = end == std::string_view::npos ? text.size() : end + 1;
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
            line.remove_prefix(1);
        if (!line.starts_with(kHead)) continue;
        line.remove_prefix(kHead.size());
        if (line.starts_with('"')) {
            size_t close = line.find('"', 1);
            return close == std::string_view::npos ? "" : std::string(line.substr(1, close - 1));
        }
        std::string_view path = line.substr(0, line.find_first_of(" \t{"));
        return path.starts_with('/') ? std::string(path) : "";
    }
    return "";
}

namespace {

// …/bin/stockade -> …/share/stockade/apparmor/NAME.
std::string besidePrefix(std::string_view exe, std::string_view name) {
    const size_t slash = exe.rfind('/');
    if (slash == std::string_view::npos || slash == 0) return "";
    const size_t up = exe.rfind('/', slash - 1);
    if (up == std::string_view::npos) return "";
    return std::string(exe.substr(0, up)) + "/share/stockade/apparmor/" + std::string(name);
}

}  // namespace

std::string appArmorShippedProfile(std::string_view exe) {
    return besidePrefix(exe, "stockade");
}

std::string appArmorShippedHelper(std::string_view exe) {
    return besidePrefix(exe, "stockade-apparmor");
}

namespace host_check_detail {

namespace {

constexpr const char* kKnob = "kernel.apparmor_restrict_unprivileged_userns";

// The profiles that exist to grant stockade userns: the installed one, and
// those check tells people to write for other copies.
bool isStockadeProfile(const std::string& profile) {
    return profile == "stockade" || profile.starts_with("stockade-");
}

bool confinedByOther(const AppArmorLabel& label) {
    return !label.profile.empty() && label.profile != "unconfined" &&
           !isStockadeProfile(label.profile);
}

// The label as a reason names it.
std::string labelText(const HostFacts& f) {
    if (f.apparmor_label.empty()) return "an AppArmor label that could not be read";
    return "AppArmor label `" + parseAppArmorLabel(f.apparmor_label).profile + "`";
}

// A word of shell, single-quoted.
std::string shellWord(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// The path as the profile language takes it: quoted when it holds a space.
std::string profilePath(const std::string& exe) {
    return exe.find_first_of(" \t") == std::string::npos ? exe : "\"" + exe + "\"";
}

// What lets this binary build its sandbox under the restriction: load the
// installed profile when it covers this path; else write one for it (named
// apart from the installed one, which covers its own path); or lift the
// restriction for every program.
std::string appArmorFix(const HostFacts& f) {
    const std::string sysctl = std::string("; or, for every program, sysctl -w ") + kKnob +
                               "=0 (keep it in /etc/sysctl.d/)";
    if (!f.apparmor_installed_attachment.empty() && f.apparmor_installed_attachment == f.exe)
        return std::string(kAppArmorProfilePath) +
               " covers this binary but is not in force for it: load it with `sudo "
               "apparmor_parser -r " +
               kAppArmorProfilePath + "`" + sysctl;
    const bool other = !f.apparmor_installed_attachment.empty();
    // The install shipped a profile for this path, and its helper did not
    // put it in /etc/apparmor.d (no parser then, a refusal, a staged
    // install, or it was deleted): the helper does it now, or says why not.
    if (!other && !f.apparmor_shipped_attachment.empty() && f.apparmor_shipped_attachment == f.exe)
        return "the profile for this binary is shipped at " + appArmorShippedProfile(f.exe) +
               " but not installed: install and load it with `sudo sh " +
               shellWord(appArmorShippedHelper(f.exe)) + " install`" + sysctl;
    const std::string name = other ? "stockade-local" : "stockade";
    const std::string file = "/etc/apparmor.d/" + name;
    std::string fix =
        std::string(other ? "the installed " + std::string(kAppArmorProfilePath) + " covers " +
                                f.apparmor_installed_attachment + ", not this binary; "
                          : "") +
        "write the profile of contrib/apparmor/stockade.in for this binary's path "
        "and load it: `printf '%s\\n' 'abi <abi/4.0>,' 'include <tunables/global>' " +
        shellWord("profile " + name + " " + profilePath(f.exe) + " flags=(unconfined) {") +
        " '  userns,' '}' | sudo tee " + file + " >/dev/null && sudo apparmor_parser -r " + file +
        "`";
    return fix + sysctl;
}

}  // namespace

bool appArmorRestricts(const HostFacts& f) {
    if (f.euid == 0) return false;
    if (f.apparmor_restrict_userns == "1") return true;
    return f.apparmor_enabled == "Y" && confinedByOther(parseAppArmorLabel(f.apparmor_label));
}

Verdict appArmorVerdict(const HostFacts& f, const std::string& what) {
    const AppArmorLabel label = parseAppArmorLabel(f.apparmor_label);
    if (f.apparmor_restrict_userns != "1" || confinedByOther(label))
        return unavailable(
            "AppArmor confines this binary (" + f.exe + ") under the profile `" + label.profile +
                "` (" + label.mode + "), which does not grant it user namespaces, so " + what +
                " is refused",
            "add `userns,` to the AppArmor profile `" + label.profile +
                "` and reload it with apparmor_parser -r, or run stockade outside that profile");
    if (isStockadeProfile(label.profile))
        return unavailable(
            "AppArmor restricts unprivileged user namespaces (" + std::string(kKnob) +
                " = 1), and though this binary runs under its profile `" + label.profile + "`, " +
                what + " is refused: the profile in force may lack its userns rule",
            "reload the profile from its file (`sudo apparmor_parser -r /etc/apparmor.d/" +
                label.profile + "`) and check that it holds `userns,`");
    return unavailable("AppArmor restricts unprivileged user namespaces (" + std::string(kKnob) +
                           " = 1) and this binary (" + f.exe + ") runs as " + labelText(f) +
                           ", not under the stockade profile: the namespace is created without "
                           "capabilities, so " +
                           what + " is refused",
                       appArmorFix(f));
}

Verdict judgeAppArmorUserns(const HostFacts& f) {
    const std::string& knob = f.apparmor_restrict_userns;
    if (knob.empty())
        return ok(std::string("no AppArmor user-namespace restriction (no ") + kKnob + ")");
    if (knob != "1")
        return ok(std::string(kKnob) + " = " + knob +
                  ": unprivileged user namespaces are not restricted");
    if (f.euid == 0)
        return ok(std::string(kKnob) + " = 1, which restricts unprivileged users, not root");
    const AppArmorLabel label = parseAppArmorLabel(f.apparmor_label);
    if (isStockadeProfile(label.profile))
        return ok(std::string(kKnob) + " = 1; this binary runs under the AppArmor profile `" +
                  label.profile + "`, which grants it user namespaces");
    // A profile of the site's own may grant userns too: the probe's answer
    // (the sandbox sequence got past its first mount) says whether it does.
    const bool mounted = stepErr(f, SandboxStep::PrivateMounts) == 0;
    if (mounted)
        return ok(std::string(kKnob) + " = 1; this binary runs as " + labelText(f) +
                  ", under which its user namespaces keep their capabilities");
    if (confinedByOther(label))
        return unavailable(std::string(kKnob) + " = 1 and this binary (" + f.exe +
                               ") runs under the AppArmor profile `" + label.profile +
                               "`, not the stockade profile, and its user namespaces have no "
                               "capabilities",
                           "add `userns,` to the AppArmor profile `" + label.profile +
                               "` and reload it with apparmor_parser -r");
    return unavailable(std::string(kKnob) + " = 1 and this binary (" + f.exe +
                           ") is not covered: it runs as " + labelText(f) +
                           ", not under the stockade profile, so its user namespaces have no "
                           "capabilities",
                       appArmorFix(f));
}

}  // namespace host_check_detail

}  // namespace stockade
