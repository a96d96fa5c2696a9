// namespaces/landlock: the per-ABI masks and the mirror of a MountPlan as
// plain data, then the kernel's own answers. Landlock needs no privilege and
// no namespace, so every enforcement case restricts a forked child exactly as
// the sandbox's command is restricted (no_new_privs, addSandboxRulesInChild,
// restrictSelfInChild) and reports the errno the kernel gave each call. Each
// denial has a control: the same call from an unrestricted child succeeds, so
// the denial is Landlock's and not the host's.
//
// Where the kernel lacks the ABI a case needs, the case WARNs and returns;
// with CI=true it FAILs instead (STYLE.md, habit 7).

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>

#include "base/error.h"
#include "namespaces/landlock.h"
#include "namespaces/landlock_in_child.h"

using namespace stockade;
using namespace stockade::ns;

namespace {

bool ciMode() {
    const char* ci = std::getenv("CI");
    return ci != nullptr && std::string_view(ci) == "true";
}

// True when the kernel has at least `needed`; else reports why not: a FAIL
// under CI=true, a loud WARN otherwise.
bool kernelHasAbi(int needed, const std::string& what) {
    LandlockSupport support = probeLandlock();
    if (support.abi >= needed) return true;
    std::string have =
        support.abi > 0 ? "ABI " + std::to_string(support.abi) : "no Landlock: " + support.reason;
    std::string text = "SKIPPED, NOT TESTED: " + what + " needs Landlock ABI " +
                       std::to_string(needed) + "; this kernel has " + have;
    if (ciMode()) FAIL(text + " (CI=true turns this skip into a failure)");
    WARN(text);
    return false;
}
#define REQUIRE_LANDLOCK_ABI(abi, what) \
    if (!kernelHasAbi(abi, what)) return

// A temporary directory tree, removed when it goes out of scope.
class TempTree {
  public:
    TempTree() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "stockade-landlock-XXXXXX");
        REQUIRE(mkdtemp(tmpl.data()) != nullptr);
        root_ = tmpl;
    }
    ~TempTree() {
        std::error_code ignored;
        std::filesystem::remove_all(root_, ignored);
    }
    TempTree(const TempTree&) = delete;
    TempTree& operator=(const TempTree&) = delete;

    std::string dir(const std::string& name) const {
        std::string path = root_ + "/" + name;
        std::filesystem::create_directories(path);
        return path;
    }
    std::string file(const std::string& name, const std::string& content = "canary\n") const {
        std::string path = root_ + "/" + name;
        std::filesystem::create_directories(std::filesystem::path(path).parent_path());
        std::ofstream(path) << content;
        return path;
    }
    std::string at(const std::string& name) const { return root_ + "/" + name; }

  private:
    std::string root_;
};

LandlockPlan mustBuild(const LandlockRequest& request) {
    Result<LandlockPlan> plan = buildLandlockPlan(request);
    INFO((plan ? plan->unavailable_reason : plan.error().describe()));
    REQUIRE(plan.ok());
    REQUIRE(plan->active());
    return std::move(plan).value();
}

std::string answer(int err) {
    return err == 0 ? "OK" : errnoName(err);
}

// Runs `body` (returning 0 or an errno) in a forked child that first does
// what the sandbox's command does: no_new_privs, the in-sandbox rules,
// restrict_self. With an inactive plan the child is unrestricted: a control.
template <class Body>
std::string inRestrictedChild(const LandlockPlan& plan, Body body) {
    int fds[2];
    REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        int report[2] = {0, 0};  // {failed setup step, errno}
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
            report[0] = 1, report[1] = errno;
        else if (int err = addSandboxRulesInChild(plan))
            report[0] = 2, report[1] = err;
        else if (int err = restrictSelfInChild(plan))
            report[0] = 3, report[1] = err;
        else
            report[1] = body();
        (void)!write(fds[1], report, sizeof(report));
        _exit(0);
    }
    close(fds[1]);
    int report[2] = {-1, 0};
    ssize_t n = read(fds[0], report, sizeof(report));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    REQUIRE(n == static_cast<ssize_t>(sizeof(report)));
    INFO("setup step " << report[0] << ": " << answer(report[1]));
    REQUIRE(report[0] == 0);
    return answer(report[1]);
}

int errnoOf(long result) {
    return result < 0 ? errno : 0;
}

auto openFile(std::string path, int flags) {
    return [path, flags] {
        int fd = open(path.c_str(), flags | O_CLOEXEC, 0644);
        if (fd < 0) return errno;
        close(fd);
        return 0;
    };
}

sockaddr_in loopback(uint16_t port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return addr;
}

auto tcpCall(uint16_t port, bool do_bind) {
    return [port, do_bind] {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return errno;
        sockaddr_in addr = loopback(port);
        auto* sa = reinterpret_cast<sockaddr*>(&addr);
        int err = errnoOf(do_bind ? bind(fd, sa, sizeof(addr)) : connect(fd, sa, sizeof(addr)));
        close(fd);
        return err;
    };
}

// A TCP listener on 127.0.0.1 that the test owns; never any other address.
struct LoopbackListener {
    UniqueFd fd;
    uint16_t port = 0;
};
LoopbackListener listenOnLoopback() {
    LoopbackListener l;
    l.fd.reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    REQUIRE(l.fd.valid());
    sockaddr_in addr = loopback(0);
    REQUIRE(bind(l.fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(listen(l.fd.get(), 8) == 0);
    socklen_t len = sizeof(addr);
    REQUIRE(getsockname(l.fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    l.port = ntohs(addr.sin_port);
    return l;
}

socklen_t abstractAddress(const std::string& name, sockaddr_un& addr) {
    addr = {};
    addr.sun_family = AF_UNIX;
    REQUIRE(name.size() + 1 < sizeof(addr.sun_path));
    name.copy(addr.sun_path + 1, name.size());
    return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

UniqueFd listenAbstract(const std::string& name) {
    UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    REQUIRE(fd.valid());
    sockaddr_un addr;
    socklen_t len = abstractAddress(name, addr);
    REQUIRE(bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) == 0);
    REQUIRE(listen(fd.get(), 8) == 0);
    return fd;
}

auto connectAbstract(std::string name) {
    return [name] {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return errno;
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        name.copy(addr.sun_path + 1, name.size());
        auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
        int err = errnoOf(connect(fd, reinterpret_cast<sockaddr*>(&addr), len));
        close(fd);
        return err;
    };
}

std::string uniqueName(const char* prefix) {
    return std::string(prefix) + "-" + std::to_string(getpid()) + "-" + std::to_string(std::rand());
}

// A request that grants nothing on the filesystem and leaves TCP alone, for
// the cases about one other right.
LandlockRequest emptyRequest() {
    LandlockRequest r;
    r.network = LandlockNetwork::Unrestricted;
    r.scope_ipc = false;
    return r;
}

}  // namespace

// --- Plain data: what each ABI handles -------------------------------------

TEST_CASE("landlock: handled rights follow the ABI (best effort)", "[landlock]") {
    CHECK(landlockHandledFs(0) == 0);
    CHECK(landlockHandledFs(1) == 0x1fff);  // EXECUTE .. MAKE_SYM
    CHECK(landlockHandledFs(2) == 0x3fff);  // + REFER
    CHECK(landlockHandledFs(3) == 0x7fff);  // + TRUNCATE
    CHECK(landlockHandledFs(4) == 0x7fff);
    CHECK(landlockHandledFs(5) == 0xffff);  // + IOCTL_DEV
    CHECK(landlockHandledFs(7) == 0xffff);
    for (int abi = 0; abi < 4; ++abi) CHECK(landlockHandledNet(abi) == 0);
    CHECK(landlockHandledNet(4) == (kLandlockNetBindTcp | kLandlockNetConnectTcp));
    for (int abi = 0; abi < 6; ++abi) CHECK(landlockScopes(abi) == 0);
    CHECK(landlockScopes(6) == (kLandlockScopeAbstractUnixSocket | kLandlockScopeSignal));

    for (int abi = 1; abi <= 7; ++abi) {
        INFO("abi " << abi);
        for (LandlockAccess a : {LandlockAccess::List, LandlockAccess::Read,
                                 LandlockAccess::ReadWrite, LandlockAccess::Devices})
            CHECK((landlockAllowedFs(a, abi) & ~landlockHandledFs(abi)) == 0);
        uint64_t rw = landlockAllowedFs(LandlockAccess::ReadWrite, abi);
        CHECK((rw & (kLandlockFsMakeChar | kLandlockFsMakeBlock | kLandlockFsIoctlDev)) == 0);
        CHECK((rw & kLandlockFsRefer) == (abi >= 2 ? kLandlockFsRefer : 0));
        uint64_t ro = landlockAllowedFs(LandlockAccess::Read, abi);
        CHECK(ro == (kLandlockFsExecute | kLandlockFsReadFile | kLandlockFsReadDir));
        uint64_t dev = landlockAllowedFs(LandlockAccess::Devices, abi);
        CHECK((dev & kLandlockFsTruncate) == (abi >= 3 ? kLandlockFsTruncate : 0));
        CHECK((dev & kLandlockFsIoctlDev) == (abi >= 5 ? kLandlockFsIoctlDev : 0));
        CHECK((dev & (kLandlockFsMakeReg | kLandlockFsMakeDir)) == 0);
    }
}

TEST_CASE("landlock: the mirror of a MountPlan", "[landlock]") {
    MountPlan mounts;
    auto add = [&](MountKind kind, std::string target, std::string source = "",
                   bool writable = false) {
        MountOp op;
        op.kind = kind;
        op.target = std::move(target);
        op.source = std::move(source);
        op.writable = writable;
        mounts.ops.push_back(op);
    };
    add(MountKind::Symlink, "bin");
    add(MountKind::BindFromHost, "usr", "/usr");
    add(MountKind::Directory, "etc");
    add(MountKind::File, "etc/passwd");
    add(MountKind::CopyFromHost, "etc/hosts", "/etc/hosts");
    add(MountKind::BindFromHost, "etc/ssl", "/etc/ssl");
    add(MountKind::File, "motd");
    add(MountKind::BindFromHost, "repo", "/home/u/proj", true);
    add(MountKind::ReadOnlyBeneath, "repo/.git");
    add(MountKind::BindFromHost, "data", "/srv/data", true);
    add(MountKind::Tmpfs, "tmp");
    add(MountKind::Tmpfs, "var/tmp");
    add(MountKind::Proc, "proc");
    add(MountKind::MaskWithNull, "proc/kcore");
    add(MountKind::ReadOnlyInPlace, "proc/sys");
    add(MountKind::Tmpfs, "dev");
    add(MountKind::BindFromHost, "dev/null", "/dev/null", true);
    add(MountKind::Tmpfs, "dev/shm");
    add(MountKind::AttachPrepared, "work", "", true);

    LandlockRequest request;
    mirrorMountPlan(mounts, request);
    std::map<std::string, LandlockAccess> host, inside;
    for (const LandlockPath& p : request.host_paths) host[p.path] = p.access;
    for (const LandlockPath& p : request.sandbox_paths) inside[p.path] = p.access;
    using A = LandlockAccess;
    CHECK(host == std::map<std::string, A>{{"/usr", A::Read},
                                           {"/etc/ssl", A::Read},
                                           {"/home/u/proj", A::ReadWrite},
                                           {"/srv/data", A::ReadWrite},
                                           {"/dev/null", A::Devices}});
    // /etc/passwd and /etc/hosts are covered by /etc; /motd has no directory.
    CHECK(inside == std::map<std::string, A>{{"/", A::List},
                                             {"/etc", A::Read},
                                             {"/motd", A::Read},
                                             {"/tmp", A::ReadWrite},
                                             {"/var/tmp", A::ReadWrite},
                                             {"/proc", A::ReadWrite},
                                             {"/dev", A::Devices},
                                             {"/dev/shm", A::ReadWrite},
                                             {"/work", A::ReadWrite}});
    CHECK(request.read_only_within_writable == std::vector<std::string>{"/repo/.git"});
}

// --- The kernel ------------------------------------------------------------

TEST_CASE("landlock: landlockAbi() agrees with the kernel", "[landlock]") {
    long raw = syscall(SYS_landlock_create_ruleset, nullptr, 0, kLandlockCreateRulesetVersion);
    int err = errno;
    LandlockSupport support = probeLandlock();
    if (raw > 0) {
        CHECK(landlockAbi() == raw);
        CHECK(support.abi == raw);
        CHECK(support.reason.empty());
    } else {
        INFO("landlock_create_ruleset(VERSION): " << errnoName(err));
        CHECK(landlockAbi() == 0);
        CHECK_FALSE(support.reason.empty());
        REQUIRE_LANDLOCK_ABI(1, "any test of Landlock");
    }
}

TEST_CASE("landlock: plans that cannot be built, and ABI 1", "[landlock]") {
    LandlockRequest port_zero = emptyRequest();
    port_zero.network = LandlockNetwork::BindPortOnly;
    CHECK_FALSE(buildLandlockPlan(port_zero).ok());

    LandlockRequest relative = emptyRequest();
    relative.sandbox_paths.push_back({"tmp", LandlockAccess::ReadWrite});
    CHECK_FALSE(buildLandlockPlan(relative).ok());

    REQUIRE_LANDLOCK_ABI(2, "building a ruleset");
    TempTree tree;
    LandlockRequest missing = emptyRequest();
    missing.host_paths.push_back({tree.at("absent"), LandlockAccess::Read});
    Result<LandlockPlan> plan = buildLandlockPlan(missing);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.error().errnum() == ENOENT);
    CHECK_THAT(plan.error().describe(), Catch::Contains(tree.at("absent")));
    missing.host_paths.back().optional = true;
    CHECK(buildLandlockPlan(missing).ok());

    // ABI 1 would deny every cross-directory rename: refused, with the reason.
    LandlockRequest abi1 = emptyRequest();
    abi1.abi_limit = 1;
    Result<LandlockPlan> old = buildLandlockPlan(abi1);
    REQUIRE(old.ok());
    CHECK_FALSE(old->active());
    CHECK(old->enforcedName().empty());
    CHECK_THAT(old->unavailable_reason, Catch::Contains("REFER"));

    // An inactive plan restricts nothing, in the child functions too.
    LandlockPlan inactive;
    CHECK(addSandboxRulesInChild(inactive) == 0);
    CHECK(restrictSelfInChild(inactive) == 0);
}

TEST_CASE("landlock: read-only, read-write and unlisted paths", "[landlock]") {
    REQUIRE_LANDLOCK_ABI(2, "filesystem rules");
    TempTree tree;
    const std::string ro = tree.dir("ro"), rw = tree.dir("rw"), other = tree.dir("other"),
                      inside = tree.dir("inside"), listed = tree.dir("listed");
    const std::string ro_file = tree.file("ro/f"), other_file = tree.file("other/f"),
                      listed_file = tree.file("listed/f"), rw_file = tree.file("rw/f");
    tree.dir("rw/sub");

    LandlockRequest request = emptyRequest();
    request.host_paths = {{ro, LandlockAccess::Read},
                          {rw, LandlockAccess::ReadWrite},
                          {listed, LandlockAccess::List}};
    // Added by the child, as /tmp is after pivot_root.
    request.sandbox_paths = {{inside, LandlockAccess::ReadWrite},
                             {tree.at("not-there"), LandlockAccess::Read, true}};
    LandlockPlan plan = mustBuild(request);
    CHECK(plan.enforcedName() == "abi-" + std::to_string(plan.abi));
    const LandlockPlan control;

    // Read-only: readable, nothing written, created or truncated.
    CHECK(inRestrictedChild(plan, openFile(ro_file, O_RDONLY)) == "OK");
    CHECK(inRestrictedChild(plan, openFile(ro_file, O_WRONLY)) == "EACCES");
    CHECK(inRestrictedChild(control, openFile(ro_file, O_WRONLY)) == "OK");
    CHECK(inRestrictedChild(plan, openFile(ro + "/new", O_WRONLY | O_CREAT)) == "EACCES");
    CHECK(inRestrictedChild(plan, [&] { return errnoOf(mkdir((ro + "/d").c_str(), 0755)); }) ==
          "EACCES");
    CHECK(inRestrictedChild(plan, [&] { return errnoOf(unlink(ro_file.c_str())); }) == "EACCES");
    if (plan.abi >= 3)
        CHECK(inRestrictedChild(plan, [&] { return errnoOf(truncate(ro_file.c_str(), 0)); }) ==
              "EACCES");

    // Read-write: created, written, truncated, renamed across directories.
    CHECK(inRestrictedChild(plan, openFile(rw + "/new", O_WRONLY | O_CREAT)) == "OK");
    CHECK(std::filesystem::exists(rw + "/new"));
    CHECK(inRestrictedChild(plan, openFile(rw_file, O_WRONLY | O_TRUNC)) == "OK");
    CHECK(inRestrictedChild(plan, [&] {
              return errnoOf(rename((rw + "/new").c_str(), (rw + "/sub/new").c_str()));
          }) == "OK");
    CHECK(std::filesystem::exists(rw + "/sub/new"));

    // Not in any rule: not even readable.
    CHECK(inRestrictedChild(plan, openFile(other_file, O_RDONLY)) == "EACCES");
    CHECK(inRestrictedChild(control, openFile(other_file, O_RDONLY)) == "OK");
    CHECK(inRestrictedChild(plan, openFile(other, O_RDONLY | O_DIRECTORY)) == "EACCES");

    // List: the directory's names, not its files' contents.
    CHECK(inRestrictedChild(plan, openFile(listed, O_RDONLY | O_DIRECTORY)) == "OK");
    CHECK(inRestrictedChild(plan, openFile(listed_file, O_RDONLY)) == "EACCES");

    // A rule the child added after the plan was built (an optional missing
    // path skipped on the way).
    CHECK(inRestrictedChild(plan, openFile(inside + "/new", O_WRONLY | O_CREAT)) == "OK");
}

TEST_CASE("landlock: rules on single files, /dev/null among them", "[landlock]") {
    REQUIRE_LANDLOCK_ABI(2, "filesystem rules");
    TempTree tree;
    const std::string file = tree.file("dir/f"), sibling = tree.file("dir/g");
    LandlockRequest request = emptyRequest();
    // ReadWrite and Devices hold directory rights, which a file's rule may
    // not: they are masked off, not refused.
    request.host_paths = {{file, LandlockAccess::ReadWrite},
                          {"/dev/null", LandlockAccess::Devices}};
    LandlockPlan plan = mustBuild(request);

    CHECK(inRestrictedChild(plan, openFile(file, O_WRONLY | O_TRUNC)) == "OK");
    CHECK(inRestrictedChild(plan, openFile(sibling, O_RDONLY)) == "EACCES");
    CHECK(inRestrictedChild(plan, openFile(tree.at("dir/new"), O_WRONLY | O_CREAT)) == "EACCES");
    // Every shell's `> /dev/null`: O_WRONLY|O_CREAT|O_TRUNC on an existing device.
    CHECK(inRestrictedChild(plan, openFile("/dev/null", O_WRONLY | O_CREAT | O_TRUNC)) == "OK");
    CHECK(inRestrictedChild(plan, openFile("/dev/zero", O_RDONLY)) == "EACCES");
}

TEST_CASE("landlock: a missing sandbox path fails the child with its index", "[landlock]") {
    REQUIRE_LANDLOCK_ABI(2, "filesystem rules");
    TempTree tree;
    LandlockRequest request = emptyRequest();
    request.sandbox_paths = {{tree.dir("a"), LandlockAccess::Read},
                             {tree.at("missing"), LandlockAccess::Read}};
    LandlockPlan plan = mustBuild(request);
    size_t failed = 99;
    CHECK(answer(addSandboxRulesInChild(plan, &failed)) == "ENOENT");
    CHECK(failed == 1);
}

TEST_CASE("landlock: cannot make .git read-only inside a writable worktree", "[landlock]") {
    // Landlock rules only add rights: the worktree's rule grants write to all
    // beneath it. The read-only mount of .git is what holds it (G2); the plan
    // says so rather than pretending.
    REQUIRE_LANDLOCK_ABI(2, "filesystem rules");
    TempTree tree;
    const std::string worktree = tree.dir("repo"), dotgit = tree.dir("repo/.git"),
                      extra = tree.dir("repo/vendor");
    LandlockRequest request = emptyRequest();
    request.host_paths = {{worktree, LandlockAccess::ReadWrite}, {extra, LandlockAccess::Read}};
    request.read_only_within_writable = {"/repo/.git"};
    LandlockPlan plan = mustBuild(request);
    CHECK(plan.unexpressed_read_only == std::vector<std::string>{"/repo/.git", extra});
    CHECK(inRestrictedChild(plan, openFile(dotgit + "/config", O_WRONLY | O_CREAT)) == "OK");
    CHECK(inRestrictedChild(plan, openFile(extra + "/x", O_WRONLY | O_CREAT)) == "OK");
}

TEST_CASE("landlock: TCP bind and connect (ABI 4)", "[landlock][network]") {
    REQUIRE_LANDLOCK_ABI(4, "TCP rules");
    LoopbackListener host = listenOnLoopback();
    // A port that was free a moment ago, for the dev server's published port.
    uint16_t published = listenOnLoopback().port;

    LandlockPlan unrestricted = mustBuild(emptyRequest());
    CHECK(unrestricted.handled_net == 0);
    CHECK(inRestrictedChild(unrestricted, tcpCall(host.port, false)) == "OK");
    CHECK(inRestrictedChild(unrestricted, tcpCall(host.port, true)) == "EADDRINUSE");

    SECTION("a one-shot run: no TCP at all") {
        LandlockRequest request = emptyRequest();
        request.network = LandlockNetwork::DenyTcp;
        LandlockPlan plan = mustBuild(request);
        CHECK(inRestrictedChild(plan, tcpCall(host.port, false)) == "EACCES");
        CHECK(inRestrictedChild(plan, tcpCall(host.port, true)) == "EACCES");
        CHECK(inRestrictedChild(plan, tcpCall(published, true)) == "EACCES");
    }
    SECTION("a dev server: bind on the published port, nothing else") {
        LandlockRequest request = emptyRequest();
        request.network = LandlockNetwork::BindPortOnly;
        request.bind_port = published;
        LandlockPlan plan = mustBuild(request);
        CHECK(inRestrictedChild(plan, tcpCall(published, true)) == "OK");
        CHECK(inRestrictedChild(plan, tcpCall(host.port, true)) == "EACCES");
        CHECK(inRestrictedChild(plan, tcpCall(host.port, false)) == "EACCES");
        CHECK(inRestrictedChild(plan, tcpCall(published, false)) == "EACCES");
    }
}

TEST_CASE("landlock: abstract unix sockets are scoped (ABI 6)", "[landlock][ipc]") {
    REQUIRE_LANDLOCK_ABI(6, "abstract unix socket scoping");
    const std::string name = uniqueName("stockade-landlock-test");
    UniqueFd host = listenAbstract(name);
    LandlockRequest request = emptyRequest();
    request.scope_ipc = true;
    LandlockPlan plan = mustBuild(request);
    CHECK(plan.scoped == (kLandlockScopeAbstractUnixSocket | kLandlockScopeSignal));

    CHECK(inRestrictedChild(plan, connectAbstract(name)) == "EPERM");
    CHECK(inRestrictedChild(LandlockPlan{}, connectAbstract(name)) == "OK");
    // A socket made inside the domain stays reachable from inside it.
    const std::string own = uniqueName("stockade-landlock-own");
    CHECK(inRestrictedChild(plan, [&] {
              int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
              sockaddr_un addr{};
              addr.sun_family = AF_UNIX;
              own.copy(addr.sun_path + 1, own.size());
              auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + own.size());
              if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) < 0 || listen(fd, 1) < 0)
                  return errno;
              return connectAbstract(own)();
          }) == "OK");
}

TEST_CASE("landlock: signals are scoped (ABI 6)", "[landlock][ipc]") {
    REQUIRE_LANDLOCK_ABI(6, "signal scoping");
    LandlockRequest request = emptyRequest();
    request.scope_ipc = true;
    LandlockPlan plan = mustBuild(request);
    // Signal 0 goes through the same permission check as a real signal
    // (kill(2)) and harms nothing.
    auto killParent = [] { return errnoOf(kill(getppid(), 0)); };
    CHECK(inRestrictedChild(plan, killParent) == "EPERM");
    CHECK(inRestrictedChild(LandlockPlan{}, killParent) == "OK");
    // The command's own children share its domain: signalling them works.
    CHECK(inRestrictedChild(plan, [] {
              pid_t child = fork();
              if (child == 0) {
                  pause();
                  _exit(0);
              }
              if (child < 0) return errno;
              int err = errnoOf(kill(child, SIGKILL));
              waitpid(child, nullptr, 0);
              return err;
          }) == "OK");
}

TEST_CASE("landlock: a lower ABI handles less, and still holds what it handles", "[landlock]") {
    REQUIRE_LANDLOCK_ABI(6, "comparing ABI 3 with ABI 6");
    TempTree tree;
    const std::string ro_file = tree.file("ro/f");
    LoopbackListener host = listenOnLoopback();
    LandlockRequest request = emptyRequest();
    request.host_paths = {{tree.at("ro"), LandlockAccess::Read}};
    request.network = LandlockNetwork::DenyTcp;
    request.scope_ipc = true;
    request.abi_limit = 3;
    LandlockPlan plan = mustBuild(request);
    CHECK(plan.abi == 3);
    CHECK(plan.enforcedName() == "abi-3");
    CHECK(plan.handled_fs == landlockHandledFs(3));
    CHECK(plan.handled_net == 0);
    CHECK(plan.scoped == 0);
    CHECK(inRestrictedChild(plan, openFile(ro_file, O_WRONLY)) == "EACCES");
    CHECK(inRestrictedChild(plan, tcpCall(host.port, false)) == "OK");
    CHECK(inRestrictedChild(plan, [] { return errnoOf(kill(getppid(), 0)); }) == "OK");
}
