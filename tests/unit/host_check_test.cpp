// runtime/host_check: `stockade check` against states this machine can be put
// in (as root; as uid 65534, which no cgroup lets write; inside a user
// namespace whose user.max_user_namespaces is 0; under a seccomp filter that
// hides Landlock), and, as plain data, against hosts it cannot become
// (Debian's userns switch, Ubuntu's AppArmor restriction, a container's
// seccomp profile, a masked /proc, a pure cgroup v2 host).
//
// Each produced state is made in a forked child, which runs checkHost and
// sends the report back as JSON. A state that cannot be produced here WARNs
// and returns; with CI=true it FAILs instead (STYLE.md, habit 7).

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "base/error.h"
#include "namespaces/landlock.h"
#include "runtime/cgroups/cgroup_limits.h"
#include "runtime/check/host_check.h"

using namespace stockade;
using nlohmann::json;

namespace {

bool ciMode() {
    const char* ci = std::getenv("CI");
    return ci != nullptr && std::string_view(ci) == "true";
}

// A state the test could not produce: a FAIL under CI=true, a loud WARN
// otherwise. Returns false so the caller can `return`.
bool cannotProduce(const std::string& what) {
    std::string text = "SKIPPED, NOT TESTED: " + what;
    if (ciMode()) FAIL(text + " (CI=true turns this skip into a failure)");
    WARN(text);
    return false;
}
#define REQUIRE_STATE(cond, what) \
    if (!(cond) && !cannotProduce(what)) return

std::string readFile(const std::string& path) {
    std::string out;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return out;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
    close(fd);
    return out;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// Runs `body` in a forked child and returns what it printed. The body
// returns the text to send: a report's JSON, or "SKIP: why" when the state
// could not be made.
std::string inChild(const std::function<std::string()>& body) {
    int p[2];
    REQUIRE(pipe2(p, O_CLOEXEC) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        std::string text = body();
        const char* at = text.data();
        size_t left = text.size();
        while (left > 0) {
            ssize_t n = write(p[1], at, left);
            if (n <= 0) _exit(2);
            at += n;
            left -= static_cast<size_t>(n);
        }
        _exit(0);
    }
    close(p[1]);
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = read(p[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
    close(p[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    INFO("child output: " << out);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    return out;
}

const json& check(const json& report, const std::string& id) {
    for (const json& c : report["checks"])
        if (c["id"] == id) return c;
    FAIL("no check named " << id);
    static json none;
    return none;
}

std::string text(const json& value) {
    return value.is_string() ? value.get<std::string>() : std::string();
}

// A host where every probe worked: the base the pure cases change one fact of.
HostFacts healthyFacts(uid_t euid) {
    HostFacts f;
    f.euid = euid;
    f.kernel = "6.12.0";
    f.systemd = true;  // a desktop or server distribution's host
    f.sandbox_uid = f.sandbox_host_uid = euid == 0 ? 65534 : euid;
    f.sandbox_gid = f.sandbox_host_gid = euid == 0 ? 65534 : 100;
    for (SandboxStep s :
         {SandboxStep::Clone3, SandboxStep::PidfdSignal, SandboxStep::IdMaps, SandboxStep::SetIds,
          SandboxStep::CgroupNs, SandboxStep::PrivateMounts, SandboxStep::RootTmpfs,
          SandboxStep::BindReadOnly, SandboxStep::TmpTmpfs, SandboxStep::Proc,
          SandboxStep::SealRoot, SandboxStep::PivotRoot, SandboxStep::Hostname,
          SandboxStep::Loopback, SandboxStep::Dumpable, SandboxStep::DropCapabilities,
          SandboxStep::NoNewPrivs, SandboxStep::PidfdWait})
        f.sandbox[s] = 0;
    for (SeccompStep s : {SeccompStep::NoNewPrivs, SeccompStep::AllowAll, SeccompStep::Listener,
                          SeccompStep::DefaultFilter})
        f.seccomp[s] = 0;
    f.default_filter_instructions = 400;
    f.landlock.abi = 7;
    f.landlock_restrict = 0;
    f.idmap_probed = euid == 0;
    f.idmap_path = "/tmp";
    f.idmap_fs = "ext4";
    f.cgroup2 = {"/sys/fs/cgroup",
                 "/sys/fs/cgroup/user.slice/stockade.scope",
                 "cpu memory pids",
                 "memory pids",
                 0,
                 0,
                 0};
    f.rlimits = {{"RLIMIT_DATA", 0}, {"RLIMIT_NPROC", 0}, {"RLIMIT_CPU", 0}};
    f.close_range = 0;
    f.nft = "/usr/sbin/nft";
    f.veth_probed = euid == 0;
    f.direct_probed = true;
    if (euid != 0)
        f.direct_error =
            "setsockopt(SO_ATTACH_FILTER): EPERM (this kernel lets only CAP_NET_ADMIN filter a "
            "TCP socket; as root it can)";
    for (const char* kind : {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"})
        f.max_namespaces[kind] = "15000";
    f.exe = "/usr/local/bin/stockade";
    return f;
}

// What the sandbox's clone3 leaves when it fails: none of the later steps.
void cloneFails(HostFacts& f, int err) {
    f.sandbox.clear();
    f.sandbox[SandboxStep::Clone3] = err;
    f.plain_clone3 = 0;
}

}  // namespace

// ------------------------------------------------------------------ pure

// A step of the setup table that fails after every step a verdict maps
// (Landlock's restriction, seccomp, init's last steps) would leave every
// verdict ok while run stops there: it blocks the run by its own name.
TEST_CASE("a failed setup step that no verdict maps still blocks the run", "[host_check]") {
    HostFacts f = healthyFacts(1000);
    f.setup_steps = {{"mark every fd above 2 close-on-exec", 0},
                     {"install the seccomp filter", EACCES}};
    const HostReport r = reportFromFacts(f, {});
    CHECK_FALSE(r.can_run);
    REQUIRE(r.blockers.size() == 1);
    CHECK(contains(r.blockers[0], "install the seccomp filter"));
    CHECK(contains(r.blockers[0], "EACCES"));
    f.setup_steps.back().second = 0;
    CHECK(reportFromFacts(f, {}).can_run);
}

TEST_CASE("a healthy host: every guarantee ok, the profile can run", "[host_check]") {
    HostReport r = reportFromFacts(healthyFacts(1000), {});
    for (const CheckEntry& e : r.entries) {
        INFO(e.id << ": " << e.reason);
        if (e.id.starts_with("cgroup1.")) {
            // A pure cgroup v2 host has no v1 hierarchy: true, and harmless.
            CHECK(contains(e.reason, "no cgroup v1 hierarchy holds"));
            continue;
        }
        if (e.id == "veth_backend" || e.id == "direct_backend") {  // root only, and optional
            CHECK(contains(e.reason, e.id == "veth_backend" ? "needs root" : "CAP_NET_ADMIN"));
            CHECK_FALSE(e.required);
            continue;
        }
        CHECK(e.state == CheckState::Ok);
        CHECK(e.reason.empty());
        CHECK(e.fix.empty());
    }
    CHECK(r.can_run);
    CHECK(r.blockers.empty());
    for (const char* id : {"G1",           "G2",
                           "G3",           "G4",
                           "G5",           "G6",
                           "G7",           "G8",
                           "G9",           "G10",
                           "user_ns",      "mount_ns",
                           "pid_ns",       "net_ns",
                           "ipc_ns",       "uts_ns",
                           "cgroup_ns",    "seccomp",
                           "no_new_privs", "capabilities",
                           "landlock",     "cgroup2.memory",
                           "cgroup2.pids", "cgroup1.memory",
                           "cgroup1.pids", "rlimit",
                           "memory",       "pids",
                           "cpu_time"})
        CHECK(r.find(id) != nullptr);
    CHECK(r.find("memory")->mechanism == "cgroup2");
    CHECK(r.find("landlock")->mechanism == "abi-7");
}

TEST_CASE("the veth backend: ok as root with nft and a working pair, else the cause and the fix",
          "[host_check]") {
    HostFacts root = healthyFacts(0);
    const HostReport fine = reportFromFacts(root, {});
    REQUIRE(fine.find("veth_backend") != nullptr);
    CHECK(fine.find("veth_backend")->state == CheckState::Ok);
    CHECK_FALSE(fine.find("veth_backend")->required);

    const HostReport rootless = reportFromFacts(healthyFacts(1000), {});
    const CheckEntry* user = rootless.find("veth_backend");
    CHECK(user->state == CheckState::Unavailable);
    CHECK(contains(user->reason, "needs root"));
    CHECK(contains(user->fix, "--net-backend userspace"));
    CHECK(rootless.can_run);  // never a blocker: only serve --net-backend veth needs it

    HostFacts no_nft = root;
    no_nft.nft.clear();
    CHECK(contains(reportFromFacts(no_nft, {}).find("veth_backend")->fix,
                   "apt-get install nftables"));

    HostFacts broken = root;
    broken.veth_error = "RTM_NEWLINK(veth stkcheckh <-> stkchecks): EOPNOTSUPP";
    const HostReport broken_report = reportFromFacts(broken, {});
    const CheckEntry* e = broken_report.find("veth_backend");
    CHECK(e->state == CheckState::Unavailable);
    CHECK(contains(e->reason, "EOPNOTSUPP"));
    CHECK(contains(e->fix, "CONFIG_VETH"));
}

TEST_CASE("the direct backend: ok as root with the listener cgroup, else the cause and the fix",
          "[host_check]") {
    const HostReport fine = reportFromFacts(healthyFacts(0), {});
    REQUIRE(fine.find("direct_backend") != nullptr);
    CHECK(fine.find("direct_backend")->state == CheckState::Ok);
    CHECK_FALSE(fine.find("direct_backend")->required);

    // Rootless on Linux 6.17 and later: the socket filter, and the cgroup
    // programs in any case.
    const HostReport rootless = reportFromFacts(healthyFacts(1000), {});
    const CheckEntry* user = rootless.find("direct_backend");
    CHECK(user->state == CheckState::Unavailable);
    CHECK(contains(user->reason, "CAP_NET_ADMIN filter a TCP socket"));
    CHECK(contains(user->reason, "need root"));
    CHECK(contains(user->fix, "userspace forwarder"));
    CHECK(rootless.can_run);  // never a blocker

    HostFacts no_v2 = healthyFacts(0);
    no_v2.direct_error =
        "cannot make the listeners in a cgroup that refuses their bind and "
        "connect: no cgroup2 filesystem is mounted (/proc/self/mountinfo)";
    // The report held while its entries are read (find points into it).
    const HostReport no_v2_report = reportFromFacts(no_v2, {});
    const CheckEntry* e = no_v2_report.find("direct_backend");
    CHECK(e->state == CheckState::Unavailable);
    CHECK(contains(e->fix, "mount -t cgroup2"));

    HostFacts no_bpf = healthyFacts(0);
    no_bpf.direct_error =
        "cannot make the listeners in a cgroup that refuses their bind and "
        "connect: bpf(BPF_PROG_LOAD, CGROUP_SOCK_ADDR for "
        "BPF_CGROUP_INET4_BIND): EPERM";
    const HostReport no_bpf_report = reportFromFacts(no_bpf, {});
    e = no_bpf_report.find("direct_backend");
    CHECK(contains(e->reason, "BPF_PROG_LOAD"));
    CHECK(contains(e->fix, "CONFIG_CGROUP_BPF"));
}

TEST_CASE("Debian's kernel.unprivileged_userns_clone=0 is named, with its sysctl", "[host_check]") {
    HostFacts f = healthyFacts(1000);
    cloneFails(f, EPERM);
    f.unshare = {{"user", EPERM}};
    f.unprivileged_userns_clone = "0";
    HostReport r = reportFromFacts(f, {});
    const CheckEntry* user = r.find("user_ns");
    CHECK(user->state == CheckState::Unavailable);
    CHECK(contains(user->reason, "kernel.unprivileged_userns_clone is 0"));
    CHECK(contains(user->reason, "unshare(CLONE_NEWUSER): EPERM"));
    CHECK(contains(user->fix, "sysctl -w kernel.unprivileged_userns_clone=1"));
    CHECK_FALSE(r.can_run);
    // The first cause is named once; what it kept from being probed is not.
    REQUIRE_FALSE(r.blockers.empty());
    CHECK(r.blockers.front().starts_with("user_ns: "));
    for (size_t i = 1; i < r.blockers.size(); ++i)
        CHECK_FALSE(contains(r.blockers[i], "not probed"));
    CHECK(r.find("G1")->state == CheckState::Unavailable);
    CHECK(r.find("G3")->state == CheckState::Unavailable);
    // Root is not bound by the switch: the same EPERM has another cause.
    HostFacts as_root = f;
    as_root.euid = 0;
    CHECK_FALSE(contains(reportFromFacts(as_root, {}).find("user_ns")->reason,
                         "unprivileged_userns_clone is 0"));
}

TEST_CASE("Ubuntu's AppArmor restriction: a user namespace without capabilities", "[host_check]") {
    HostFacts f = healthyFacts(1000);
    // clone3 of every namespace at once needs CAP_SYS_ADMIN in the new user
    // namespace, which AppArmor's unprivileged_userns profile denies.
    cloneFails(f, EPERM);
    f.unshare = {{"user", 0},    {"mnt", EPERM}, {"pid", EPERM},   {"net", EPERM},
                 {"ipc", EPERM}, {"uts", EPERM}, {"cgroup", EPERM}};
    f.apparmor_restrict_userns = "1";
    HostReport r = reportFromFacts(f, {});
    const CheckEntry* user = r.find("user_ns");
    CHECK(user->state == CheckState::Unavailable);
    CHECK(contains(user->reason, "AppArmor restricts unprivileged user namespaces"));
    CHECK(contains(user->fix, "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"));
    CHECK(contains(user->fix, "profile stockade /usr/local/bin/stockade"));
    CHECK(contains(user->fix, "userns,"));
    CHECK(contains(r.find("mount_ns")->reason, "AppArmor"));
    CHECK_FALSE(r.can_run);
}

// Ubuntu's restriction as fixtures (this host has AppArmor inactive): the
// sysctl's value, this process's label and the installed profile's
// attachment are the inputs; whether the binary is covered, and the fix, the
// output.
namespace {

// The restriction's symptom as the probe sees it: the sandbox's clone3 made
// the user namespace, and its first mount in it was refused.
HostFacts restrictedFacts(const std::string& label) {
    HostFacts f = healthyFacts(1000);
    f.apparmor_restrict_userns = "1";
    f.apparmor_enabled = "Y";
    f.apparmor_label = label;
    for (auto it = f.sandbox.find(SandboxStep::PrivateMounts); it != f.sandbox.end();)
        it = f.sandbox.erase(it);
    f.sandbox[SandboxStep::PrivateMounts] = EPERM;
    f.sandbox[SandboxStep::PidfdWait] = 0;
    return f;
}

// The shell command between the fix's backticks, up to `| sudo tee`: the
// printf that writes the profile, run for real.
std::string profileTheFixWrites(const std::string& fix) {
    auto start = fix.find("`printf ");
    auto end = fix.find(" | sudo tee ");
    REQUIRE(start != std::string::npos);
    REQUIRE(end != std::string::npos);
    std::string command = fix.substr(start + 1, end - start - 1);
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string out;
    char buf[512];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
    REQUIRE(pclose(pipe) == 0);
    return out;
}

}  // namespace

TEST_CASE("AppArmor labels and the installed profile's attachment are read as written",
          "[host_check]") {
    CHECK(parseAppArmorLabel("unconfined\n").profile == "unconfined");
    CHECK(parseAppArmorLabel("unconfined\n").mode.empty());
    const AppArmorLabel ours = parseAppArmorLabel("stockade (unconfined)\n");
    CHECK(ours.profile == "stockade");
    CHECK(ours.mode == "unconfined");
    const AppArmorLabel other = parseAppArmorLabel("/usr/bin/my tool (enforce)");
    CHECK(other.profile == "/usr/bin/my tool");
    CHECK(other.mode == "enforce");
    CHECK(parseAppArmorLabel("").profile.empty());

    // The profile the install writes (contrib/apparmor/stockade.in), as it
    // writes it: check finds the path it covers.
    std::string in = readFile(std::string(STOCKADE_SOURCE_DIR) + "/contrib/apparmor/stockade.in");
    REQUIRE(contains(in, "@STOCKADE_BIN@"));
    in.replace(in.find("@STOCKADE_BIN@"), 14, "/opt/st/bin/stockade");
    CHECK(appArmorAttachment(in) == "/opt/st/bin/stockade");
    CHECK(appArmorAttachment("profile stockade \"/opt/my st/stockade\" flags=(unconfined) {") ==
          "/opt/my st/stockade");
    CHECK(appArmorAttachment("# profile stockade /usr/bin/stockade\nprofile other /x {}").empty());
    CHECK(appArmorAttachment("").empty());
    // The shipped copy and its helper sit beside the binary's prefix.
    CHECK(appArmorShippedProfile("/usr/bin/stockade") == "/usr/share/stockade/apparmor/stockade");
    CHECK(appArmorShippedHelper("/opt/st/bin/stockade") ==
          "/opt/st/share/stockade/apparmor/stockade-apparmor");
    CHECK(appArmorShippedProfile("stockade").empty());
    CHECK(appArmorShippedProfile("/stockade").empty());
}

TEST_CASE("the AppArmor userns restriction: who it binds, and when this binary is covered",
          "[host_check]") {
    // Not restricted: no sysctl, the sysctl at 0, or root.
    HostFacts f = healthyFacts(1000);
    const HostReport plain = reportFromFacts(f, {});
    const CheckEntry* e = plain.find("apparmor_userns");
    REQUIRE(e != nullptr);
    CHECK(e->state == CheckState::Ok);
    CHECK_FALSE(e->required);
    CHECK(contains(e->mechanism, "no AppArmor user-namespace restriction"));
    f.apparmor_restrict_userns = "0";
    CHECK(reportFromFacts(f, {}).find("apparmor_userns")->state == CheckState::Ok);
    HostFacts root = restrictedFacts("unconfined");
    root.euid = 0;
    root.sandbox = healthyFacts(0).sandbox;
    CHECK(reportFromFacts(root, {}).find("apparmor_userns")->state == CheckState::Ok);
    CHECK(contains(reportFromFacts(root, {}).find("apparmor_userns")->mechanism, "not root"));

    // Covered: the installed profile confines this binary, and the sandbox works.
    HostFacts covered = healthyFacts(1000);
    covered.apparmor_restrict_userns = "1";
    covered.apparmor_enabled = "Y";
    covered.apparmor_label = "stockade (unconfined)";
    HostReport ok = reportFromFacts(covered, {});
    CHECK(ok.find("apparmor_userns")->state == CheckState::Ok);
    CHECK(contains(ok.find("apparmor_userns")->mechanism, "profile `stockade`"));
    CHECK(ok.can_run);

    // Not covered: unconfined, the user namespace made and its mount refused.
    HostFacts bare = restrictedFacts("unconfined");
    HostReport r = reportFromFacts(bare, {});
    e = r.find("apparmor_userns");
    CHECK(e->state == CheckState::Unavailable);
    CHECK(contains(e->reason, "/usr/local/bin/stockade) is not covered"));
    CHECK(contains(e->reason, "AppArmor label `unconfined`"));
    CHECK(contains(e->fix, "/etc/apparmor.d/stockade"));
    CHECK(contains(e->fix, "sudo apparmor_parser -r /etc/apparmor.d/stockade`"));
    CHECK(contains(e->fix, "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"));
    // The symptom is named where it was seen, and user_ns carries the blocker.
    const CheckEntry* user = r.find("user_ns");
    CHECK(user->state == CheckState::Unavailable);
    CHECK(contains(user->reason, "runs as AppArmor label `unconfined`"));
    CHECK(contains(user->reason, "mount(\"/\", MS_REC|MS_PRIVATE): EPERM"));
    CHECK(user->fix == e->fix);
    CHECK(contains(r.find("mount_ns")->reason, "AppArmor restricts"));
    CHECK_FALSE(r.can_run);
    REQUIRE_FALSE(r.blockers.empty());
    CHECK(r.blockers.front().starts_with("user_ns: AppArmor restricts"));
    // The profile the fix writes is the install's shape, for this path.
    const std::string written = profileTheFixWrites(e->fix);
    CHECK(written ==
          "abi <abi/4.0>,\ninclude <tunables/global>\n"
          "profile stockade /usr/local/bin/stockade flags=(unconfined) {\n  userns,\n}\n");
    CHECK(appArmorAttachment(written) == "/usr/local/bin/stockade");
}

TEST_CASE("the AppArmor restriction's fix fits the binary: another prefix, a stale load",
          "[host_check]") {
    // A build tree while the package's profile covers /usr/bin/stockade: a
    // profile of its own, named apart, with a path the shell and AppArmor
    // must both quote.
    HostFacts tree = restrictedFacts("unconfined");
    tree.exe = "/home/ann/it's mine/build/stockade";
    tree.apparmor_installed_attachment = "/usr/bin/stockade";
    const HostReport tree_report = reportFromFacts(tree, {});
    const CheckEntry* e = tree_report.find("apparmor_userns");
    CHECK(e->state == CheckState::Unavailable);
    CHECK(contains(e->fix, "/etc/apparmor.d/stockade covers /usr/bin/stockade, not this binary"));
    CHECK(contains(e->fix, "sudo tee /etc/apparmor.d/stockade-local >/dev/null"));
    CHECK(contains(e->fix, "sudo apparmor_parser -r /etc/apparmor.d/stockade-local`"));
    const std::string written = profileTheFixWrites(e->fix);
    // tests/package/apparmor_profile_test.sh parses this very text.
    CHECK(written ==
          "abi <abi/4.0>,\ninclude <tunables/global>\n"
          "profile stockade-local \"/home/ann/it's mine/build/stockade\" flags=(unconfined) {\n"
          "  userns,\n}\n");

    // The installed profile covers this path but is not in force (AppArmor
    // started before it was written, or it was unloaded): load it.
    HostFacts unloaded = restrictedFacts("unconfined");
    unloaded.exe = "/usr/bin/stockade";
    unloaded.apparmor_installed_attachment = "/usr/bin/stockade";
    const HostReport unloaded_report = reportFromFacts(unloaded, {});
    e = unloaded_report.find("apparmor_userns");
    CHECK(contains(e->fix, "/etc/apparmor.d/stockade covers this binary but is not in force"));
    CHECK(contains(e->fix, "sudo apparmor_parser -r /etc/apparmor.d/stockade`"));
    CHECK_FALSE(contains(e->fix, "printf"));

    // The install shipped a profile for this path that its helper did not
    // put in place (AppArmor installed later, a staged install, deleted):
    // the fix is the helper beside the binary, which installs and loads it.
    HostFacts shipped = restrictedFacts("unconfined");
    shipped.exe = "/opt/st/bin/stockade";
    shipped.apparmor_shipped_attachment = "/opt/st/bin/stockade";
    const HostReport shipped_report = reportFromFacts(shipped, {});  // e points into it
    e = shipped_report.find("apparmor_userns");
    CHECK(
        contains(e->fix, "shipped at /opt/st/share/stockade/apparmor/stockade but not installed"));
    CHECK(
        contains(e->fix, "`sudo sh '/opt/st/share/stockade/apparmor/stockade-apparmor' install`"));
    CHECK_FALSE(contains(e->fix, "printf"));
    // A shipped profile for another path (a copy moved away from its
    // prefix) is no fix for this one: the printf is.
    shipped.apparmor_shipped_attachment = "/usr/bin/stockade";
    CHECK(contains(reportFromFacts(shipped, {}).find("apparmor_userns")->fix, "printf"));

    // Under the stockade profile, yet the mount is refused: the profile in
    // force lacks its rule.
    HostFacts stale = restrictedFacts("stockade (unconfined)");
    HostReport r = reportFromFacts(stale, {});
    CHECK(r.find("apparmor_userns")->state == CheckState::Ok);
    CHECK(contains(r.find("user_ns")->reason, "may lack its userns rule"));
    CHECK(contains(r.find("user_ns")->fix, "apparmor_parser -r /etc/apparmor.d/stockade"));

    // Another profile confines the binary: where the sandbox works under it,
    // covered; where it denies the namespace, that profile is named, with
    // or without the sysctl.
    HostFacts site = healthyFacts(1000);
    site.apparmor_restrict_userns = "1";
    site.apparmor_enabled = "Y";
    site.apparmor_label = "ci-runner (enforce)";
    CHECK(reportFromFacts(site, {}).find("apparmor_userns")->state == CheckState::Ok);
    site.apparmor_restrict_userns = "";
    cloneFails(site, EACCES);
    site.unshare = {{"user", EACCES}};
    const HostReport site_report = reportFromFacts(site, {});
    const CheckEntry* user = site_report.find("user_ns");
    CHECK(contains(user->reason, "under the profile `ci-runner` (enforce)"));
    CHECK(contains(user->fix, "add `userns,` to the AppArmor profile `ci-runner`"));
    // AppArmor off: the same label text is not taken for a cause.
    site.apparmor_enabled = "N";
    CHECK_FALSE(contains(reportFromFacts(site, {}).find("user_ns")->reason, "ci-runner"));
}

TEST_CASE("user.max_user_namespaces: zero, and a limit reached", "[host_check]") {
    HostFacts f = healthyFacts(1000);
    cloneFails(f, ENOSPC);
    f.unshare = {{"user", ENOSPC}};
    f.max_namespaces["user"] = "0";
    const CheckEntry* user = nullptr;
    HostReport zero = reportFromFacts(f, {});
    user = zero.find("user_ns");
    CHECK(contains(user->reason, "user.max_user_namespaces is 0"));
    CHECK(user->fix == "sysctl -w user.max_user_namespaces=15000");

    f.max_namespaces["user"] = "12";
    HostReport reached = reportFromFacts(f, {});
    user = reached.find("user_ns");
    CHECK(contains(user->reason, "limit on user namespaces is reached"));
    CHECK(contains(user->reason, "= 12"));

    // Another kind's limit is named by its own knob.
    HostFacts net = healthyFacts(1000);
    cloneFails(net, ENOSPC);
    net.unshare = {{"user", 0}, {"mnt", 0}, {"pid", 0},   {"net", ENOSPC},
                   {"ipc", 0},  {"uts", 0}, {"cgroup", 0}};
    net.max_namespaces["net"] = "0";
    HostReport r = reportFromFacts(net, {});
    CHECK(r.find("user_ns")->state == CheckState::Ok);
    CHECK(r.find("net_ns")->state == CheckState::Unavailable);
    CHECK(r.find("net_ns")->fix == "sysctl -w user.max_net_namespaces=15000");
    CHECK(r.find("G1")->state == CheckState::Unavailable);
    CHECK(r.find("clone3")->state == CheckState::Ok);
}

TEST_CASE("a container's seccomp profile: clone3 answered ENOSYS", "[host_check]") {
    HostFacts f = healthyFacts(1000);
    cloneFails(f, ENOSYS);
    f.plain_clone3 = ENOSYS;
    f.unshare = {{"user", 0}, {"mnt", 0}, {"pid", 0},   {"net", 0},
                 {"ipc", 0},  {"uts", 0}, {"cgroup", 0}};
    f.seccomp_mode = 2;
    f.seccomp_filters = 1;
    HostReport r = reportFromFacts(f, {});
    const CheckEntry* clone = r.find("clone3");
    CHECK(clone->state == CheckState::Unavailable);
    CHECK(contains(clone->reason, "seccomp filter"));
    CHECK(contains(clone->reason, "clone3(CLONE_PIDFD): ENOSYS"));
    CHECK(contains(clone->fix, "seccomp"));
    CHECK_FALSE(r.can_run);
    CHECK(r.blockers.front().starts_with("clone3: "));

    f.seccomp_mode = 0;
    CHECK(contains(reportFromFacts(f, {}).find("clone3")->fix, "Linux 5.3"));
}

TEST_CASE(
    "the tier line: full on a healthy host, landlock without user namespaces, none "
    "without Landlock either, each with the fix",
    "[host_check][tier]") {
    CHECK(reportFromFacts(healthyFacts(1000), {}).tier.tier == "full");

    HostFacts f = healthyFacts(1000);
    cloneFails(f, ENOSPC);
    f.unshare = {{"user", ENOSPC}};
    f.max_namespaces["user"] = "0";
    const HostReport lower = reportFromFacts(f, {});
    INFO(lower.tier.reason);
    CHECK(lower.tier.tier == "landlock");
    CHECK(contains(lower.tier.reason, "user.max_user_namespaces is 0"));
    CHECK(contains(lower.tier.reason, "--min-tier landlock"));
    REQUIRE_FALSE(lower.tier.fixes.empty());
    CHECK(lower.tier.fixes.front() == "user_ns: sysctl -w user.max_user_namespaces=15000");
    CHECK(contains(formatReport(lower), "Tier: landlock: "));
    CHECK(contains(reportJson(lower), "\"tier\": \"landlock\""));

    f.landlock = {0, "Landlock is built into the kernel but not enabled (EOPNOTSUPP)"};
    f.landlock_restrict.reset();
    const HostReport none = reportFromFacts(f, {});
    CHECK(none.tier.tier == "none");
    CHECK(contains(none.tier.reason, "no lower tier either (landlock: "));
}

TEST_CASE("a masked /proc refuses a fresh procfs, and the masks are listed", "[host_check]") {
    HostFacts f = healthyFacts(1000);
    for (SandboxStep s : {SandboxStep::SealRoot, SandboxStep::PivotRoot, SandboxStep::Hostname,
                          SandboxStep::Loopback, SandboxStep::Dumpable,
                          SandboxStep::DropCapabilities, SandboxStep::NoNewPrivs})
        f.sandbox.erase(s);
    f.sandbox[SandboxStep::Proc] = EPERM;
    f.proc_overmounts = {"/proc/kcore", "/proc/sys"};
    HostReport r = reportFromFacts(f, {});
    const CheckEntry* proc = r.find("proc");
    CHECK(proc->state == CheckState::Unavailable);
    CHECK(contains(proc->reason, "mount_too_revealing"));
    CHECK(contains(proc->reason, "/proc/kcore, /proc/sys"));
    CHECK(contains(proc->fix, "systempaths=unconfined"));
    CHECK(r.find("G2")->state == CheckState::Unavailable);
    // Steps after it were never reached: said so, and not blamed.
    CHECK(r.find("net_ns")->reason.starts_with("not probed"));
    CHECK(r.blockers.front().starts_with("proc: "));
    for (size_t i = 1; i < r.blockers.size(); ++i)
        CHECK_FALSE(contains(r.blockers[i], "not probed"));
}

TEST_CASE("cgroup v2: delegated, not delegated, not writable", "[host_check]") {
    HostFacts f = healthyFacts(1000);
    CHECK(reportFromFacts(f, {}).find("pids")->mechanism == "cgroup2");

    f.cgroup2.controllers = "cpu";
    HostReport r = reportFromFacts(f, {});
    CHECK(contains(r.find("cgroup2.memory")->reason, "not delegated"));
    CHECK(contains(r.find("cgroup2.memory")->reason,
                   "/sys/fs/cgroup/user.slice/cgroup.subtree_control"));
    CHECK(contains(r.find("cgroup2.memory")->fix, "systemd-run --user --scope -p Delegate=yes"));
    const CheckEntry* memory = r.find("memory");
    CHECK(memory->state == CheckState::Degraded);
    CHECK(memory->mechanism == "rlimit (RLIMIT_DATA)");
    CHECK(r.find("G8")->state == CheckState::Degraded);
    CHECK(r.can_run);  // nothing required it

    HostCheckRequest strict;
    strict.require = {"memory"};
    HostReport refused = reportFromFacts(f, strict);
    CHECK_FALSE(refused.can_run);
    REQUIRE(refused.blockers.size() == 1);
    CHECK(refused.blockers[0].starts_with("memory: "));

    HostFacts root = healthyFacts(0);
    root.cgroup2.controllers = "cpu";
    CHECK(contains(reportFromFacts(root, {}).find("cgroup2.pids")->fix,
                   "echo +pids > /sys/fs/cgroup/user.slice/cgroup.subtree_control"));

    HostFacts locked = healthyFacts(1000);
    locked.cgroup2.subtree_control_errno = EACCES;
    CHECK(contains(reportFromFacts(locked, {}).find("cgroup2.memory")->reason,
                   "cgroup.subtree_control is not writable by uid 1000 (EACCES)"));
}

TEST_CASE("Landlock: absent, older ABIs degrade, required refuses", "[host_check]") {
    HostFacts f = healthyFacts(1000);
    f.landlock = {3, ""};
    HostReport old = reportFromFacts(f, {});
    CHECK(old.find("landlock")->state == CheckState::Degraded);
    CHECK(contains(old.find("landlock")->reason, "no TCP rules"));
    CHECK(old.can_run);

    f.landlock = {0, "Landlock is built into the kernel but not enabled (EOPNOTSUPP)"};
    f.landlock_restrict.reset();
    f.lsm = "lockdown,capability,yama,apparmor";
    HostCheckRequest required;
    required.landlock = LandlockMode::Required;
    HostReport r = reportFromFacts(f, required);
    CHECK(r.find("landlock")->state == CheckState::Unavailable);
    CHECK(contains(r.find("landlock")->fix, "lsm=landlock,lockdown,capability,yama,apparmor"));
    CHECK_FALSE(r.can_run);
    CHECK(reportFromFacts(f, {}).can_run);  // best-effort runs without it
}

TEST_CASE("idmapped mounts: degraded, and blocking only for a root-owned worktree",
          "[host_check]") {
    HostFacts f = healthyFacts(0);
    f.idmap_error = "mount_setattr(\"/tmp\", MOUNT_ATTR_IDMAP): EINVAL";
    f.idmap_fs = "tmpfs";
    HostReport r = reportFromFacts(f, {});
    const CheckEntry* idmap = r.find("idmapped_mounts");
    CHECK(idmap->state == CheckState::Degraded);
    CHECK(contains(idmap->reason, "a root-owned worktree would not be writable"));
    CHECK(contains(idmap->reason, "/tmp (tmpfs)"));
    CHECK(r.can_run);
    f.worktree_root_owned = true;
    HostReport refused = reportFromFacts(f, {});
    CHECK_FALSE(refused.can_run);
    CHECK(refused.blockers.front().starts_with("idmapped_mounts: "));
}

TEST_CASE("the report's text is aligned and its JSON complete", "[host_check]") {
    HostFacts f = healthyFacts(1000);
    f.cgroup2.controllers = "cpu";
    HostReport r = reportFromFacts(f, {});
    std::string out = formatReport(r);
    std::istringstream lines(out);
    std::string line;
    std::set<size_t> state_columns;
    while (std::getline(lines, line)) {
        if (!line.starts_with("  ")) continue;
        for (const char* state : {" ok ", " degraded ", " unavailable "}) {
            auto at = line.find(state);
            if (at != std::string::npos) {
                state_columns.insert(at);
                break;
            }
        }
    }
    CHECK(state_columns.size() == 1);
    CHECK(contains(out, "  G1  network "));
    CHECK(contains(out, "  G10 landlock "));
    CHECK(contains(out,
                   "rlimit (RLIMIT_DATA): no writable cgroup (cgroup2.memory: controller not "
                   "delegated to /sys/fs/cgroup/user.slice/stockade.scope;"));
    CHECK(contains(out, "; fix: run stockade in a delegated cgroup"));
    CHECK(contains(out, "The profile can run as required."));

    json doc = json::parse(reportJson(r));
    CHECK(doc["schema"] == "stockade.check/v1");
    CHECK(doc["can_run"] == true);
    CHECK(doc["checks"].size() == r.entries.size());
    CHECK(check(doc, "G1")["kind"] == "guarantee");
    CHECK(check(doc, "G1")["reason"].is_null());
    CHECK(check(doc, "memory")["state"] == "degraded");
    CHECK(check(doc, "memory")["fix"].is_string());
    CHECK(check(doc, "user_ns")["required"] == true);
}

// ------------------------------------------------------------------ produced

TEST_CASE("as root on this host: the probes' own answers", "[host_check][root]") {
    REQUIRE_STATE(geteuid() == 0, "the root report needs root");
    HostReport r = checkHost({});
    INFO(formatReport(r));
    CHECK(r.euid == 0);
    CHECK(r.find("user_ns")->state == CheckState::Ok);
    // Inside 65534; outside an id leased from the default range
    // (runtime/plan/identity.h), not nobody's.
    const std::string& mechanism = r.find("user_ns")->mechanism;
    const size_t at = mechanism.find("uid 65534 inside is host uid ");
    REQUIRE(at != std::string::npos);
    const unsigned long host = std::stoul(mechanism.substr(at + 29));
    CHECK(host >= 0x78000000ul);
    CHECK(host < 0x7C000000ul);
    for (const char* id :
         {"G1",           "G2",          "G3",        "G4",     "G5",      "G6",
          "G7",           "G9",          "mount_ns",  "proc",   "pid_ns",  "net_ns",
          "ipc_ns",       "uts_ns",      "cgroup_ns", "clone3", "seccomp", "no_new_privs",
          "capabilities", "close_range", "rlimit"}) {
        INFO(id << ": " << r.find(id)->reason);
        CHECK(r.find(id)->state == CheckState::Ok);
    }
    CHECK(r.can_run);

    ns::LandlockSupport landlock = ns::probeLandlock();
    if (landlock.abi >= 6) {
        CHECK(r.find("landlock")->state == CheckState::Ok);
        CHECK(r.find("landlock")->mechanism == "abi-" + std::to_string(landlock.abi));
    }

    // This host's cgroup layout, read independently of the code under test.
    std::string self = readFile("/proc/self/cgroup");
    std::string v2_mount = findCgroup2Mount(readFile("/proc/self/mountinfo"));
    std::string v2_root = readFile(v2_mount + "/cgroup.controllers");
    for (const char* controller : {"memory", "pids"}) {
        std::string c = controller;
        bool on_v1 = cgroupPathOf(self, c).has_value() &&
                     access(("/sys/fs/cgroup/" + c + "/cgroup.procs").c_str(), F_OK) == 0;
        if (on_v1) {
            INFO(r.find("cgroup1." + c)->reason);
            CHECK(r.find("cgroup1." + c)->state == CheckState::Ok);
        }
        if (!v2_mount.empty() && !contains(" " + v2_root + " ", " " + c + " ") &&
            !contains(" " + v2_root, " " + c + "\n")) {
            const CheckEntry* v2 = r.find("cgroup2." + c);
            CHECK(v2->state == CheckState::Unavailable);
            CHECK(contains(v2->reason, "controller not available in the unified hierarchy"));
            if (on_v1) CHECK(r.find(c)->mechanism == "cgroup1");
        }
    }
    CHECK(r.find("memory")->state == CheckState::Ok);
    CHECK(r.find("pids")->state == CheckState::Ok);
    CHECK(r.elapsed_us > 0);
    CHECK_FALSE(r.probe_us.empty());
}

TEST_CASE("the probes leave no mount, cgroup, process or fd behind", "[host_check]") {
    auto listDir = [](const std::string& path) {
        std::set<std::string> names;
        if (DIR* d = opendir(path.c_str())) {
            while (dirent* e = readdir(d))
                if (!std::string_view(e->d_name).starts_with("stockade")) names.insert(e->d_name);
            closedir(d);
        }
        return names;
    };
    auto fds = [&] { return listDir("/proc/self/fd").size(); };
    std::string self = readFile("/proc/self/cgroup");
    std::vector<std::string> cgroup_dirs;
    if (auto v2 = cgroupPathOf(self, ""))
        cgroup_dirs.push_back(findCgroup2Mount(readFile("/proc/self/mountinfo")) + *v2);
    for (const char* c : {"memory", "pids"})
        if (auto p = cgroupPathOf(self, c))
            cgroup_dirs.push_back("/sys/fs/cgroup/" + std::string(c) + *p);
    std::vector<std::set<std::string>> before;
    for (const std::string& d : cgroup_dirs) before.push_back(listDir(d));
    std::string mounts_before = readFile("/proc/self/mountinfo");
    size_t fds_before = fds();

    HostReport r = checkHost({});

    CHECK(readFile("/proc/self/mountinfo") == mounts_before);
    for (size_t i = 0; i < cgroup_dirs.size(); ++i) {
        INFO(cgroup_dirs[i]);
        CHECK(listDir(cgroup_dirs[i]) == before[i]);
    }
    CHECK(fds() == fds_before);
    errno = 0;
    CHECK(waitpid(-1, nullptr, WNOHANG) == -1);
    CHECK(errno == ECHILD);
}

TEST_CASE("as uid 65534: no writable cgroup, memory and pids fall back to rlimits",
          "[host_check][root]") {
    REQUIRE_STATE(geteuid() == 0, "becoming uid 65534 needs root");
    std::string out = inChild([] {
        if (setgroups(0, nullptr) < 0 || setresgid(65534, 65534, 65534) < 0 ||
            setresuid(65534, 65534, 65534) < 0)
            return "SKIP: " + Error::fromErrno("setresuid(65534)").describe();
        // Dropping root without exec leaves a process non-dumpable, its
        // children's /proc files root's (the report says so); a user's
        // stockade was exec'd, which makes it dumpable again.
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
        HostCheckRequest request;
        request.require = {"memory", "pids"};
        return reportJson(checkHost(request));
    });
    REQUIRE_STATE(!out.starts_with("SKIP"), "uid 65534: " + out);
    json r = json::parse(out);
    INFO(r.dump(2));
    CHECK(r["uid"] == 65534);
    REQUIRE_STATE(
        check(r, "cgroup1.memory")["state"] != "ok" && check(r, "cgroup2.memory")["state"] != "ok",
        "a cgroup on this host is writable by uid 65534");
    // The way to a delegated cgroup this host offers: systemd's, or root's by hand.
    struct stat systemd_dir;
    const std::string delegation =
        lstat("/run/systemd/system", &systemd_dir) == 0 && S_ISDIR(systemd_dir.st_mode)
            ? "systemd-run --user --scope -p Delegate=yes stockade"
            : "chown -R 65534 ";
    for (const char* v1 : {"cgroup1.memory", "cgroup1.pids"}) {
        const json& c = check(r, v1);
        if (c["state"] == "ok") continue;
        CHECK(c["state"] == "unavailable");
        CHECK(contains(text(c["reason"]), "not writable by uid 65534"));
        CHECK(contains(text(c["fix"]), delegation));
    }
    for (auto [limit, rlimit] : {std::pair{"memory", "RLIMIT_DATA"}, {"pids", "RLIMIT_NPROC"}}) {
        const json& c = check(r, limit);
        CHECK(c["state"] == "degraded");
        CHECK(c["mechanism"] == "rlimit (" + std::string(rlimit) + ")");
        CHECK(contains(text(c["reason"]), "no writable cgroup"));
        CHECK(contains(text(c["fix"]), delegation));
        CHECK(c["required"] == true);
    }
    CHECK(check(r, "G8")["state"] == "degraded");
    // Rootless: the user namespace maps only ourselves, and needs no idmap.
    CHECK(check(r, "user_ns")["state"] == "ok");
    CHECK(contains(text(check(r, "user_ns")["mechanism"]), "host uid 65534"));
    CHECK(check(r, "idmapped_mounts")["state"] == "ok");
    // Required and degraded: the profile cannot run as required.
    CHECK(r["can_run"] == false);
    CHECK(r["blockers"].size() == 2);
}

TEST_CASE("user namespaces forbidden: user.max_user_namespaces=0 in a throwaway namespace",
          "[host_check]") {
    std::string out = inChild([] {
        // The limit is per user namespace and writable by its owner; set to
        // 0 here, it forbids every namespace nested below.
        if (unshare(CLONE_NEWUSER) < 0)
            return "SKIP: " + Error::fromErrno("unshare(CLONE_NEWUSER)").describe();
        int fd = open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0\n", 2) != 2)
            return "SKIP: " +
                   Error::fromErrno("write(\"/proc/sys/user/max_user_namespaces\", 0)").describe();
        close(fd);
        return reportJson(checkHost({}));
    });
    REQUIRE_STATE(!out.starts_with("SKIP"), "user namespaces forbidden: " + out);
    json r = json::parse(out);
    INFO(r.dump(2));
    const json& user = check(r, "user_ns");
    CHECK(user["state"] == "unavailable");
    CHECK(contains(text(user["reason"]), "user.max_user_namespaces is 0"));
    CHECK(contains(text(user["reason"]), "ENOSPC"));
    CHECK(user["fix"] == "sysctl -w user.max_user_namespaces=15000");
    CHECK(r["can_run"] == false);
    REQUIRE(!r["blockers"].empty());
    CHECK(text(r["blockers"][0]).starts_with("user_ns: "));
    for (const char* g : {"G1", "G2", "G3", "G6", "G9"}) {
        INFO(g);
        CHECK(check(r, g)["state"] == "unavailable");
    }
    // What needs no namespace is still found.
    CHECK(check(r, "seccomp")["state"] == "ok");
    CHECK(check(r, "clone3")["state"] == "ok");
}

TEST_CASE("Landlock unavailable: a seccomp filter answers landlock_create_ruleset ENOSYS",
          "[host_check]") {
    std::string out = inChild([] {
        sock_filter filter[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_landlock_create_ruleset, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        sock_fprog prog{sizeof(filter) / sizeof(filter[0]), filter};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
            syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
            return "SKIP: " + Error::fromErrno("seccomp(SECCOMP_SET_MODE_FILTER)").describe();
        if (ns::probeLandlock().abi != 0)
            return std::string("SKIP: the filter did not hide Landlock");
        HostCheckRequest request;
        request.landlock = LandlockMode::Required;
        return reportJson(checkHost(request));
    });
    REQUIRE_STATE(!out.starts_with("SKIP"), "Landlock hidden by seccomp: " + out);
    json r = json::parse(out);
    INFO(r.dump(2));
    const json& landlock = check(r, "landlock");
    CHECK(landlock["state"] == "unavailable");
    CHECK(contains(text(landlock["reason"]), "landlock_create_ruleset: ENOSYS"));
    // The filter is the real cause, and the report says one is there.
    CHECK(contains(text(landlock["reason"]), "seccomp filter"));
    CHECK(contains(text(landlock["fix"]), "lsm=landlock"));
    CHECK(check(r, "G10")["state"] == "unavailable");
    CHECK(landlock["required"] == true);
    CHECK(r["can_run"] == false);
    REQUIRE(r["blockers"].size() == 1);
    CHECK(text(r["blockers"][0]).starts_with("landlock: "));
    CHECK(check(r, "seccomp")["state"] == "ok");
    CHECK(check(r, "user_ns")["state"] == "ok");
}

TEST_CASE("dropped from root without exec: the id maps' EACCES is explained",
          "[host_check][root]") {
    REQUIRE_STATE(geteuid() == 0, "dropping root needs root");
    std::string out = inChild([] {
        if (setgroups(0, nullptr) < 0 || setresgid(65534, 65534, 65534) < 0 ||
            setresuid(65534, 65534, 65534) < 0)
            return "SKIP: " + Error::fromErrno("setresuid(65534)").describe();
        if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
            return std::string("SKIP: still dumpable after the uid change (fs.suid_dumpable?)");
        return reportJson(checkHost({}));
    });
    REQUIRE_STATE(!out.starts_with("SKIP"), "a non-dumpable stockade: " + out);
    json r = json::parse(out);
    const json& user = check(r, "user_ns");
    INFO(user.dump(2));
    CHECK(user["state"] == "unavailable");
    CHECK(contains(text(user["reason"]), "not dumpable"));
    CHECK(contains(text(user["reason"]), "EACCES"));
    CHECK(contains(text(user["fix"]), "exec"));
    CHECK(r["can_run"] == false);
}

TEST_CASE("cgroup v2: without systemd as init, the fix is root's delegation, not systemd-run",
          "[host_check]") {
    HostFacts f = healthyFacts(1000);
    f.systemd = false;
    f.cgroup2.controllers = "cpu";
    HostReport r = reportFromFacts(f, {});
    const std::string fix = r.find("cgroup2.memory")->fix;
    CHECK_FALSE(contains(fix, "Delegate=yes"));
    CHECK(contains(fix, "mkdir /sys/fs/cgroup/stockade-1000 && chown -R 1000"));
    CHECK(contains(fix, "/sys/fs/cgroup/cgroup.subtree_control"));
    CHECK(contains(r.find("memory")->fix, "chown -R 1000"));
    CHECK_FALSE(contains(r.find("memory")->fix, "Delegate=yes"));
}

TEST_CASE("cgroup v2: a delegated cgroup shared with other processes cannot enable controllers",
          "[host_check]") {
    HostFacts f = healthyFacts(1000);
    f.cgroup2.other_processes = 2;  // the shell that started stockade, and its terminal
    HostReport r = reportFromFacts(f, {});
    const CheckEntry* v2 = r.find("cgroup2.memory");
    CHECK(v2->state == CheckState::Unavailable);
    CHECK(contains(v2->reason, "holds 2 other process(es) besides stockade"));
    CHECK(contains(v2->fix, "systemd-run --user --scope -p Delegate=yes"));
    CHECK(r.find("memory")->mechanism == "rlimit (RLIMIT_DATA)");

    // Already enabled below it (stockade's own subtree from an earlier run
    // of a stockade that moved out): nothing left to enable.
    f.cgroup2.subtree_control = "memory pids";
    CHECK(reportFromFacts(f, {}).find("cgroup2.memory")->state == CheckState::Ok);
}
