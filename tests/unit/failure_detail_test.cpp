// The record's `detail` (runtime/record/failure_detail.h): layout facts are
// judged from the mount plan alone, met by paths the output names; bounds
// come only from what the supervisor saw, never from text.
#include "runtime/record/failure_detail.h"

#include <signal.h>

#include <catch2/catch.hpp>

#include "namespaces/mount_plan.h"

namespace stockade {
namespace {

using ns::MountKind;

// The shape buildChildPlan gives the default profile, by hand: system
// directories read-only (bin a link to usr/bin), /etc files, the tmpfs
// trees, the worktree with a hidden and a read-only name, /proc, /dev.
std::vector<LayoutEntry> defaultLayout() {
    ns::MountPlan plan;
    auto add = [&](ns::MountOp op) { ns::addOp(plan, std::move(op)); };
    add({.kind = MountKind::BindFromHost, .source = "/usr", .target = "usr"});
    add({.kind = MountKind::Symlink, .target = "bin", .data = "usr/bin"});
    add({.kind = MountKind::Symlink, .target = "lib64", .data = "/usr/lib64"});
    add({.kind = MountKind::Directory, .target = "etc"});
    add({.kind = MountKind::File, .target = "etc/passwd", .data = "x"});
    add({.kind = MountKind::Tmpfs, .target = "tmp", .data = "mode=1777"});
    add({.kind = MountKind::Directory, .target = "tmp/mnt"});  // a mount target in /tmp
    add({.kind = MountKind::Tmpfs, .target = "var/tmp", .data = "mode=1777"});
    add({.kind = MountKind::Directory, .target = "repo"});
    add({.kind = MountKind::AttachPrepared, .target = "repo", .writable = true});
    add({.kind = MountKind::ReadOnlyBeneath, .target = "repo/.git", .anchor = "repo"});
    add({.kind = MountKind::MaskBeneath, .target = "repo/.aws", .anchor = "repo"});
    add({.kind = MountKind::Proc, .target = "proc"});
    add({.kind = MountKind::ReadOnlyInPlace, .target = "proc/sys"});
    add({.kind = MountKind::Tmpfs, .target = "dev", .data = "mode=0755"});
    add({.kind = MountKind::BindFromHost,
         .source = "/dev/null",
         .target = "dev/null",
         .target_is_dir = false,
         .writable = true});
    add({.kind = MountKind::Devpts, .target = "dev/pts"});
    add({.kind = MountKind::Symlink, .target = "dev/ptmx", .data = "pts/ptmx"});
    add({.kind = MountKind::Tmpfs, .target = "dev/shm"});
    add({.kind = MountKind::Symlink, .target = "dev/fd", .data = "/proc/self/fd"});
    return summarizeLayout(plan);
}

std::vector<LayoutDetail> judge(const std::string& text) {
    return layoutEvidence(defaultLayout(), text, "stderr", 4);
}

}  // namespace

TEST_CASE("failure detail: paths are judged against the plan's own layout") {
    const auto layout = defaultLayout();
    auto kind = [&](const std::string& path) {
        auto answer = judgePath(layout, path);
        REQUIRE(answer);
        return std::make_pair(answer->kind, answer->where);
    };
    CHECK(kind("/usr/lib/x") == std::make_pair(LayoutKind::ReadOnlyTree, std::string("/usr")));
    // Through the plan's link, as the kernel would resolve it.
    CHECK(kind("/bin/sh") == std::make_pair(LayoutKind::ReadOnlyTree, std::string("/usr")));
    CHECK(kind("/lib64/ld.so") == std::make_pair(LayoutKind::ReadOnlyTree, std::string("/usr")));
    CHECK(kind("/home/u/.bashrc") == std::make_pair(LayoutKind::Directory, std::string("/")));
    CHECK(kind("/dev/sda") == std::make_pair(LayoutKind::Devices, std::string("/dev")));
    CHECK(kind("/dev/fd/3") == std::make_pair(LayoutKind::OpaqueTree, std::string("/proc")));
    CHECK(kind("/dev/null").first == LayoutKind::WritableTree);
    CHECK(kind("/dev/pts/7").first == LayoutKind::OpaqueTree);
    CHECK(kind("/tmp/mnt/x").first == LayoutKind::WritableTree);  // made inside /tmp
    CHECK(kind("/repo/src/a.c").first == LayoutKind::WritableTree);
    CHECK(kind("/repo/.git/config") ==
          std::make_pair(LayoutKind::ReadOnlyTree, std::string("/repo/.git")));
    CHECK(kind("/repo/.aws/credentials") ==
          std::make_pair(LayoutKind::EmptyTree, std::string("/repo/.aws")));
    CHECK(kind("/proc/sys/kernel/x").first == LayoutKind::ReadOnlyTree);
    CHECK(kind("/proc/self/status").first == LayoutKind::OpaqueTree);
    CHECK(kind("//usr///x") == std::make_pair(LayoutKind::ReadOnlyTree, std::string("/usr")));
    // Not judged: what only the files could answer.
    CHECK_FALSE(judgePath(layout, "usr/x"));
    CHECK_FALSE(judgePath(layout, "/repo/../usr/x"));
    CHECK_FALSE(judgePath(layout, "/tmp/./x"));

    // An image root's contents are its author's: nothing is judged.
    ns::MountPlan image;
    image.root_source = "/bundle/rootfs";
    CHECK(summarizeLayout(image).empty());
    CHECK(layoutEvidence({}, "touch: cannot touch '/usr/x': Read-only file system", "stderr", 4)
              .empty());
}

TEST_CASE("failure detail: the common wordings of EROFS and ENOENT name their path") {
    struct Case {
        const char* line;
        const char* fact;
        const char* path;
        const char* where;
    } cases[] = {
        {"touch: cannot touch '/usr/x': Read-only file system", "read_only", "/usr/x", "/usr"},
        {"touch: cannot touch \xe2\x80\x98/usr/x\xe2\x80\x99: Read-only file system", "read_only",
         "/usr/x", "/usr"},
        {"sh: 1: cannot create /usr/lib/y: Read-only file system", "read_only", "/usr/lib/y",
         "/usr"},
        {"bash: /bin/z: Read-only file system", "read_only", "/bin/z", "/usr"},
        {"OSError: [Errno 30] Read-only file system: '/etc/hosts.new'", "read_only",
         "/etc/hosts.new", "/etc"},
        {"Error: EROFS: read-only file system, open '/opt/x'", "read_only", "/opt/x", "/"},
        {"mkdir: cannot create directory '/home': Read-only file system", "read_only", "/home",
         "/"},
        {"cat: /dev/sda: No such file or directory", "absent", "/dev/sda", "/dev"},
        {"FileNotFoundError: [Errno 2] No such file or directory: '/dev/kvm'", "absent", "/dev/kvm",
         "/dev"},
        {"Error: ENOENT: no such file or directory, open '/home/u/.npmrc'", "absent",
         "/home/u/.npmrc", "/"},
        {"open /repo/.aws/config: no such file or directory", "absent", "/repo/.aws/config",
         "/repo/.aws"},
        // Two paths: the one the layout decides is named.
        {"mv: cannot move '/tmp/a' to '/usr/b': Read-only file system", "read_only", "/usr/b",
         "/usr"},
    };
    for (const Case& c : cases) {
        INFO(c.line);
        auto found = judge(std::string("some output\n") + c.line + "\nmore\n");
        REQUIRE(found.size() == 1);
        CHECK(found[0].fact == c.fact);
        CHECK(found[0].path == c.path);
        CHECK(found[0].layout_path == c.where);
        CHECK(found[0].evidence == "stderr");
        CHECK(found[0].text.find("the command's stderr") != std::string::npos);
    }
}

TEST_CASE("failure detail: output cannot make the record claim a layout fact that is false") {
    // Each names a path the layout does not make read-only or absent: no
    // claim, whatever the text says.
    for (const char* line : {
             "touch: cannot touch '/repo/x': Read-only file system",  // writable
             "touch: cannot touch '/tmp/x': Read-only file system",
             "cannot create /dev/shm/x: Read-only file system",
             "cat: /usr/bin/nothing: No such file or directory",  // content not the plan's
             "cat: /dev/pts/9: No such file or directory",
             "cat: /proc/1234/status: No such file or directory",
             "cat: /dev/null: No such file or directory",  // the plan placed it
             "cat: /dev: No such file or directory",
             "cat: /: No such file or directory",
             "cat: /repo/../dev/sda: No such file or directory",  // not judged lexically
             "cat: relative/dev/sda: No such file or directory",
             "a/dev/sda: No such file or directory",  // not a path's start
             "/usr/x: Permission denied",             // not an error it explains
             "File size limit exceeded",              // bounds come from the supervisor only
             "CPU time limit exceeded",
         }) {
        INFO(line);
        CHECK(judge(line).empty());
    }
    // Many lines: bounded, each path once.
    std::string flood;
    for (int i = 0; i < 50; ++i)
        flood += "cat: /dev/sd" + std::string(1, static_cast<char>('a' + i % 26)) +
                 ": No such file or directory\n";
    CHECK(judge(flood).size() == 4);
    CHECK(judge("cat: /dev/x: No such file or directory\ncat: /dev/x: No such file or directory")
              .size() == 1);
    std::string deep = "cat: /dev/" + std::string(300, 'a') + ": No such file or directory";
    CHECK(judge(deep).empty());
}

TEST_CASE("failure detail: bounds come from what the supervisor saw, and only on failure") {
    Policy policy;
    policy.limits.file_size_bytes = 1 << 20;
    policy.limits.memory_bytes = 64 << 20;
    policy.limits.pids = 32;
    SandboxOutcome o;
    o.layout = defaultLayout();
    o.enforced = {{"memory", "cgroup2"}, {"pids", "cgroup2"}, {"cpu_time", "rlimit"}};
    o.stderr_summary.tail = "touch: cannot touch '/usr/x': Read-only file system\n";

    SECTION("a command that passed has none, whatever it printed") {
        o.ending = Ending::Exited;
        o.exit_code = 0;
        CHECK(explainFailure(policy, o, "").empty());
    }
    SECTION("one that did not run has none") {
        o.ending = Ending::SetupFailed;
        CHECK(explainFailure(policy, o, "sandbox_unavailable").empty());
    }
    SECTION("a failure whose output names a read-only path: a layout fact, no bound") {
        o.ending = Ending::Exited;
        o.exit_code = 1;
        FailureDetail d = explainFailure(policy, o, "nonzero_exit");
        CHECK(d.bounds.empty());
        REQUIRE(d.layout.size() == 1);
        CHECK(d.layout[0].layout_path == "/usr");
    }
    SECTION("SIGXFSZ names the file size bound, from the signal") {
        o.ending = Ending::Signaled;
        o.signal = SIGXFSZ;
        FailureDetail d = explainFailure(policy, o, "signal");
        REQUIRE(d.bounds.size() == 1);
        CHECK(d.bounds[0].limit == "file_size");
        CHECK(d.bounds[0].value == 1u << 20);
        CHECK(d.bounds[0].evidence == "signal");
    }
    SECTION("EFBIG in the output names the file size bound, marked as the output's") {
        o.ending = Ending::Exited;
        o.exit_code = 1;
        o.stderr_summary.tail = "OSError: [Errno 27] File too large\n";
        FailureDetail d = explainFailure(policy, o, "nonzero_exit");
        REQUIRE(d.bounds.size() == 1);
        CHECK(d.bounds[0].limit == "file_size");
        CHECK(d.bounds[0].evidence == "stderr");
        // Without a file size bound there is no bound to name.
        policy.limits.file_size_bytes.reset();
        CHECK(explainFailure(policy, o, "nonzero_exit").bounds.empty());
    }
    SECTION("a shell's words for the signals name no bound") {
        o.ending = Ending::Exited;
        o.exit_code = 153;
        o.stderr_summary.tail = "File size limit exceeded\nCPU time limit exceeded\nKilled\n";
        CHECK(explainFailure(policy, o, "nonzero_exit").bounds.empty());
    }
    SECTION("the cgroups' counters name memory and pids") {
        o.ending = Ending::Signaled;
        o.signal = SIGKILL;
        o.oom_killed = true;
        o.pids_limit_hit = true;
        FailureDetail d = explainFailure(policy, o, "memory_limit");
        REQUIRE(d.bounds.size() == 2);
        CHECK(d.bounds[0].limit == "memory");
        CHECK(d.bounds[0].mechanism == "cgroup2");
        CHECK(d.bounds[0].evidence == "cgroup_events");
        CHECK(d.bounds[1].limit == "pids");
        CHECK(d.bounds[1].value == 32);
    }
    SECTION("SIGKILL alone, or SIGXCPU the command sent itself, names no bound") {
        o.ending = Ending::Signaled;
        o.signal = SIGKILL;
        CHECK(explainFailure(policy, o, "signal").bounds.empty());
        o.signal = SIGXCPU;
        o.cpu_limit_ms = 600000;
        CHECK(explainFailure(policy, o, "signal").bounds.empty());
        FailureDetail d = explainFailure(policy, o, "cpu_time");
        REQUIRE(d.bounds.size() == 1);
        CHECK(d.bounds[0].value == 600);
        CHECK(d.bounds[0].evidence == "cpu_accounting");
    }
    SECTION("the lower tier has no plan of its own: no layout fact") {
        o.ending = Ending::Exited;
        o.exit_code = 1;
        o.layout.clear();
        CHECK(explainFailure(policy, o, "nonzero_exit").empty());
    }
}

}  // namespace stockade
