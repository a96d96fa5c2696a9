// G3: nothing the sandbox creates on the host carries setuid, setgid or file
// capabilities (issue 14). As root the worktree is root's, shown to the
// sandbox through an idmapped mount, so what it creates is root's on disk:
// a setuid bit there would be a setuid-root program for anyone on the host.
// Each route is tried from inside; the host's side is then walked.
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "harness.h"

namespace stockade::itest {
namespace {

// Every file and directory below `root` (links not followed) with S_ISUID or
// S_ISGID, or a security.capability attribute.
std::vector<std::string> privilegedEntries(const std::string& root) {
    std::vector<std::string> found;
    for (auto it = std::filesystem::recursive_directory_iterator(root);
         it != std::filesystem::recursive_directory_iterator(); ++it) {
        const std::string path = it->path().string();
        struct stat st {};
        if (lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) continue;
        if (st.st_mode & (S_ISUID | S_ISGID)) found.push_back(path + " (mode bits)");
        if (lgetxattr(path.c_str(), "security.capability", nullptr, 0) >= 0)
            found.push_back(path + " (file capabilities)");
    }
    return found;
}

std::string aSetuidHostProgram() {
    for (const char* path : {"/usr/bin/su", "/usr/bin/passwd", "/usr/bin/mount"}) {
        struct stat st {};
        if (stat(path, &st) == 0 && (st.st_mode & S_ISUID) && st.st_uid == 0) return path;
    }
    return "";
}

// The held-test profile with `policy` as its "seccomp" (a file, or "none"),
// written as `name` in `scratch`.
std::string heldTestWithSeccomp(ScratchDir& scratch, const std::string& name,
                                const std::string& policy) {
    std::ifstream in(std::string(STOCKADE_SOURCE_DIR) + "/profiles/held-test.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string from = "\"seccomp\": \"default\"";
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), "\"seccomp\": \"" + policy + "\"");
    return scratch.writeFile(name, text);
}

}  // namespace

TEST_CASE("G3: no system call makes a setuid, setgid or file-capability file in the worktree",
          "[G3][setid]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const ProbeRun run = sandbox.probe({"setid-routes", "/repo"});
    INFO(run.describe());
    REQUIRE(run.result() == "ok");
    for (const char* route :
         {"chmod-setuid", "chmod-setgid", "fchmodat", "fchmodat2", "fchmod", "open-creat",
          "openat-creat", "creat", "mknod", "mknodat", "tmpfile", "chmod-dir-setgid"}) {
        INFO(route);
        CHECK(run.report.get(std::string("route.") + route) == "EPERM");
    }
    CHECK(run.report.get("route.openat2") == "ENOSYS");
    // CAP_SETFCAP is never held: the kernel refuses file capabilities.
    CHECK(run.report.get("route.setxattr-capability") == "EPERM");
    // Nor can it be had as root of a user namespace of the sandbox's own,
    // and io_uring's open, whose mode no rule sees, is not there.
    CHECK(run.report.get("route.userns-setxattr-capability") == "unshare:EPERM");
    CHECK(run.report.get("route.io-uring-openat") == "setup:EPERM");
    CHECK(run.report.get("with-setid-bits") == "0");

    // The host's side: the plain file was made (so the routes reached a
    // writable worktree), and nothing below the worktree has the bits.
    const std::string plain = sandbox.worktree() + "/setid-plain";
    struct stat st {};
    REQUIRE(lstat(plain.c_str(), &st) == 0);
    if (mode == Mode::Root) {
        // What makes the attack real: the worktree is root's, and so, on
        // disk, is what the sandbox made in it.
        CHECK(st.st_uid == 0);
    }
    CHECK(privilegedEntries(sandbox.worktree()).empty());
}

TEST_CASE("G3: tar -p and cp -p of a setuid program keep no setuid bit on the host",
          "[G3][setid]") {
    STOCKADE_EACH_MODE(mode);
    const std::string setuid_program = aSetuidHostProgram();
    REQUIRE(!setuid_program.empty());  // the host's own su, passwd or mount
    Sandbox sandbox(mode);
    // An archive that holds a setuid-root and a setgid file, made by the
    // host's tar from a scratch directory root owns (as root) or not.
    const std::string staging = sandbox.scratch().makeDir("staging");
    sandbox.scratch().writeFile("staging/suid", "#!/bin/sh\nid\n", 0755);
    sandbox.scratch().writeFile("staging/sgid", "#!/bin/sh\nid\n", 0755);
    if (mode == Mode::Root) {
        REQUIRE(chmod((staging + "/suid").c_str(), 04755) == 0);
        REQUIRE(chmod((staging + "/sgid").c_str(), 02755) == 0);
    }
    const std::string archive = sandbox.worktree() + "/payload.tar";
    const std::string tar_command =
        "tar --mode=u+s,g+s -C '" + staging + "' -cf '" + archive + "' suid sgid";
    REQUIRE(std::system(tar_command.c_str()) == 0);
    if (mode == Mode::Rootless) REQUIRE(chown(archive.c_str(), kNobody, kNobody) == 0);

    const Completed done =
        sandbox.run({"/bin/sh", "-c",
                     "mkdir -p /repo/out && cd /repo/out && tar -xpf /repo/payload.tar; cp -p " +
                         setuid_program +
                         " /repo/out/copied; install -m 4755 /repo/out/suid "
                         "/repo/out/installed; ls -l /repo/out; exit 0"});
    INFO(done.describe());
    REQUIRE(done.exitCode == 0);
    // The files arrived; their bits did not.
    CHECK(pathExists(sandbox.worktree() + "/out/suid"));
    CHECK(pathExists(sandbox.worktree() + "/out/copied"));
    CHECK(privilegedEntries(sandbox.worktree()).empty());
}

TEST_CASE("G3: a user's permissive seccomp profile still makes no setuid file",
          "[G3][setid][seccomp]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    // Allow everything: the setuid refusals are stockade's, not the file's.
    const std::string allow_all = sandbox.scratch().writeFile("allow-all.json", R"({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [{"names": ["mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}]
    })");
    // A conditional ALLOW on another argument of chmod (the red team's way
    // past the rules): refused, since it would decide before the mode.
    const std::string conditional = sandbox.scratch().writeFile("conditional.json", R"({
        "defaultAction": "SCMP_ACT_LOG",
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [{"names": ["chmod", "fchmodat"], "action": "SCMP_ACT_ALLOW",
                      "args": [{"index": 0, "value": 0, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]}]
    })");
    auto profileWith = [&](const std::string& name, const std::string& policy) {
        return heldTestWithSeccomp(sandbox.scratch(), name, policy);
    };
    const std::string chmod_it = "cp /bin/true /repo/made && chmod 4755 /repo/made; echo chmod=$?";

    Sandbox permissive(mode);
    permissive.option("--profile", profileWith("permissive.json", allow_all));
    const Completed ran = permissive.run({"sh", "-c", chmod_it});
    INFO(ran.describe());
    CHECK(ran.out.find("chmod=1") != std::string::npos);
    CHECK(pathExists(permissive.worktree() + "/made"));
    CHECK(privilegedEntries(permissive.worktree()).empty());

    Sandbox tricked(mode);
    tricked.option("--profile", profileWith("conditional-profile.json", conditional));
    const Completed refused = tricked.run({"sh", "-c", chmod_it});
    INFO(refused.describe());
    CHECK(refused.exitCode == 125);
    CHECK(refused.err.find("chmod") != std::string::npos);
    CHECK(!pathExists(tricked.worktree() + "/made"));
}

TEST_CASE("G3: an allow-all seccomp profile, and none as root, still make no privileged file",
          "[G3][setid][seccomp]") {
    STOCKADE_EACH_MODE(mode);
    // The routes the default policy closes by refusing them, which a user's
    // policy may allow: a user namespace of the sandbox's own, whose root
    // holds CAP_SETFCAP over the sandbox's files (as root, written through
    // the worktree's idmapped mount, the capability names disk root and
    // holds on the host: seen before 2026-12-06), and io_uring's openat.
    // stockade's guard goes after any user's policy; with none, as root.
    for (const std::string policy : {"allow-all", "none"}) {
        INFO("seccomp " + policy);
        Sandbox sandbox(mode);
        const std::string named =
            policy == "none" ? policy : sandbox.scratch().writeFile("allow-all.json", R"({
                                   "defaultAction": "SCMP_ACT_ALLOW",
                                   "architectures": ["SCMP_ARCH_X86_64"],
                                   "syscalls": []
                               })");
        sandbox.option("--profile", heldTestWithSeccomp(sandbox.scratch(), "profile.json", named));
        const ProbeRun run = sandbox.probe({"setid-routes", "/repo"});
        INFO(run.describe());
        REQUIRE(run.result() == "ok");
        const std::string plain = sandbox.worktree() + "/setid-plain";
        struct stat st {};
        REQUIRE(lstat(plain.c_str(), &st) == 0);
        if (policy == "none" && mode == Mode::Rootless) {
            // Rootless, "none" is no filter at all: the kernel's answers,
            // on files that are the caller's own (threat-model.md).
            CHECK(run.report.get("route.chmod-setuid") == "ok");
            CHECK(run.report.get("route.io-uring-openat") == "ok");
            CHECK(st.st_uid == kNobody);
            CHECK(sandbox.result()["enforced"]["seccomp"].is_null());
            continue;
        }
        for (const char* route : {"chmod-setuid", "fchmod", "open-creat", "creat", "tmpfile"}) {
            INFO(route);
            CHECK(run.report.get(std::string("route.") + route) == "EPERM");
        }
        CHECK(run.report.get("route.userns-setxattr-capability") == "unshare:EPERM");
        CHECK(run.report.get("route.io-uring-openat") == "setup:EPERM");
        CHECK(run.report.get("with-setid-bits") == "0");
        if (mode == Mode::Root) CHECK(st.st_uid == 0);
        CHECK(privilegedEntries(sandbox.worktree()).empty());
        // The record says which filter held: the user's (with the guard,
        // docs/seccomp.md), or the guard alone.
        CHECK(sandbox.result()["enforced"]["seccomp"] ==
              (policy == "none" ? "stockade-guard" : "custom"));
    }
}

}  // namespace stockade::itest
