// The idmapped image root's condition (oci/idmapped_root.h): the image is
// idmapped only where no host user but root can reach it.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "base/unique_fd.h"
#include "oci/idmapped_root.h"
#include "tests/unit/oracle_test_support.h"

using namespace stockade;
using oracle_test::TempDir;

namespace {

// A mount a case made, detached whatever the case's end.
struct DetachOnExit {
    std::string at;
    ~DetachOnExit() { umount2(at.c_str(), MNT_DETACH); }
};

bool closed(const std::string& path) {
    UniqueFd fd(open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    std::string why;
    return oci::closedToOthers(fd.get(), why);
}

}  // namespace

TEST_CASE("oci idmapped root: only a tree closed to other users by root counts", "[oci]") {
    TempDir scratch;  // mkdtemp: 0700, the caller's
    const std::string image = scratch / "a/b/rootfs";
    REQUIRE(system(("mkdir -p " + image + " && chmod 755 " + scratch / "a" + " " +
                    scratch / "a/b " + image)
                       .c_str()) == 0);
    REQUIRE(chmod(scratch.path().c_str(), 0711) == 0);
    // The temporary directory's parents are open to all (/tmp, /): only
    // the scratch directory could close the way.
    CHECK_FALSE(closed(image));
    REQUIRE(chmod(scratch.path().c_str(), 0700) == 0);
    // Closed only when root's: a caller that is not root closes nothing.
    CHECK(closed(image) == (geteuid() == 0));
    if (geteuid() != 0) return;
    // Search for root's group only is closed; for another group, open.
    REQUIRE(chmod(scratch.path().c_str(), 0710) == 0);
    CHECK(closed(image));
    REQUIRE(chown(scratch.path().c_str(), 0, 100) == 0);
    CHECK_FALSE(closed(image));
    REQUIRE(chown(scratch.path().c_str(), 0, 0) == 0);
    REQUIRE(chmod(scratch.path().c_str(), 0700) == 0);
    // Any ACL on the closing directory opens it (it could name a user).
    const std::string setfacl = "setfacl -m u:65534:x " + scratch.path() + " 2>/dev/null";
    if (system(setfacl.c_str()) == 0) {
        CHECK_FALSE(closed(image));
        REQUIRE(system(("setfacl -b " + scratch.path()).c_str()) == 0);
        CHECK(closed(image));
    } else {
        oracle_test::skipLoudly("setfacl is missing (the acl package): the ACL case");
    }
    // Owned by another user: not closed, whatever its mode.
    REQUIRE(chown(scratch.path().c_str(), 65534, 0) == 0);
    CHECK_FALSE(closed(image));
    REQUIRE(chown(scratch.path().c_str(), 0, 0) == 0);
}

TEST_CASE("oci idmapped root: a plain directory has no overlay upper directory", "[oci]") {
    TempDir scratch;
    UniqueFd fd(open(scratch.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    CHECK(oci::overlayUpperDir(fd.get()).empty());
}

TEST_CASE("oci idmapped root: an overlay's upper directory is found, its own path", "[oci]") {
    if (geteuid() != 0) {
        oracle_test::skipLoudly("mounting an overlay needs root");
        return;
    }
    TempDir scratch;
    for (const char* d : {"lower", "upper dir", "work", "merged"})
        REQUIRE(mkdir((scratch / d).c_str(), 0755) == 0);
    const std::string options = "lowerdir=" + scratch / "lower" +
                                ",upperdir=" + scratch / "upper dir" +
                                ",workdir=" + scratch / "work";
    REQUIRE(mount("overlay", (scratch / "merged").c_str(), "overlay", 0, options.c_str()) == 0);
    const DetachOnExit unmount{scratch / "merged"};
    UniqueFd fd(open((scratch / "merged").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    // A space in the path is escaped in mountinfo (\040): read back whole.
    CHECK(oci::overlayUpperDir(fd.get()) == scratch / "upper dir");
}

TEST_CASE("oci idmapped root: an image closed by its own mode alone is not idmapped", "[oci]") {
    if (geteuid() != 0) {
        oracle_test::skipLoudly("an idmapped mount needs root");
        return;
    }
    // The image's root would be the container root's to chmod: only an
    // ancestor may close the way.
    TempDir scratch;
    REQUIRE(chmod(scratch.path().c_str(), 0755) == 0);
    const std::string image = scratch / "rootfs";
    REQUIRE(mkdir(image.c_str(), 0700) == 0);
    UniqueFd fd(open(image.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    const ns::IdMapping block{0, 3000000000u, 0, 3000000000u, 65536};
    oci::IdmappedRoot open_image = oci::idmapImageRoot(fd.get(), image, block);
    CHECK_FALSE(open_image.tree.tree);
    CHECK(open_image.not_idmapped.find("closed to other users") != std::string::npos);
    // Closed by its parent: idmapped.
    REQUIRE(chmod(scratch.path().c_str(), 0700) == 0);
    oci::IdmappedRoot closed_image = oci::idmapImageRoot(fd.get(), image, block);
    CHECK(closed_image.tree.tree);
    CHECK(closed_image.not_idmapped.empty());
}

TEST_CASE("oci idmapped root: an image its filesystem shows elsewhere too is not idmapped",
          "[oci]") {
    if (geteuid() != 0) {
        oracle_test::skipLoudly("an idmapped mount needs root");
        return;
    }
    // /var/tmp/...open/image, reachable by all, bound at closed/rootfs: the
    // way through closed/ is closed, the image's own is not.
    TempDir closed_dir;
    TempDir open_dir;
    REQUIRE(chmod(closed_dir.path().c_str(), 0700) == 0);
    REQUIRE(chmod(open_dir.path().c_str(), 0755) == 0);
    REQUIRE(mkdir((open_dir / "image").c_str(), 0755) == 0);
    REQUIRE(mkdir((closed_dir / "rootfs").c_str(), 0755) == 0);
    REQUIRE(mount((open_dir / "image").c_str(), (closed_dir / "rootfs").c_str(), nullptr, MS_BIND,
                  nullptr) == 0);
    const DetachOnExit unmount{closed_dir / "rootfs"};
    UniqueFd fd(open((closed_dir / "rootfs").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    const ns::IdMapping block{0, 3000000000u, 0, 3000000000u, 65536};
    oci::IdmappedRoot bound = oci::idmapImageRoot(fd.get(), closed_dir / "rootfs", block);
    CHECK_FALSE(bound.tree.tree);
    CHECK(bound.not_idmapped.find("also shows it") != std::string::npos);
}

TEST_CASE("oci idmapped root: an image a part of which is bound elsewhere is not idmapped",
          "[oci]") {
    if (geteuid() != 0) {
        oracle_test::skipLoudly("an idmapped mount needs root");
        return;
    }
    // closed/rootfs (0700 above it), its tmp bound at a directory anyone
    // reaches: a setuid file made in the image's /tmp would show there.
    TempDir closed_dir;
    TempDir open_dir;
    REQUIRE(chmod(closed_dir.path().c_str(), 0700) == 0);
    REQUIRE(chmod(open_dir.path().c_str(), 0755) == 0);
    REQUIRE(mkdir((closed_dir / "rootfs").c_str(), 0755) == 0);
    REQUIRE(mkdir((closed_dir / "rootfs/tmp").c_str(), 01777) == 0);
    REQUIRE(mkdir((open_dir / "public").c_str(), 0755) == 0);
    UniqueFd fd(open((closed_dir / "rootfs").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    const ns::IdMapping block{0, 3000000000u, 0, 3000000000u, 65536};
    CHECK(oci::idmapImageRoot(fd.get(), closed_dir / "rootfs", block).tree.tree);
    REQUIRE(mount((closed_dir / "rootfs/tmp").c_str(), (open_dir / "public").c_str(), nullptr,
                  MS_BIND, nullptr) == 0);
    const DetachOnExit unmount{open_dir / "public"};
    oci::IdmappedRoot shown = oci::idmapImageRoot(fd.get(), closed_dir / "rootfs", block);
    CHECK_FALSE(shown.tree.tree);
    CHECK(shown.not_idmapped.find(open_dir / "public") != std::string::npos);
}

TEST_CASE("oci idmapped root: an image file with a link outside the image is not idmapped",
          "[oci]") {
    if (geteuid() != 0) {
        oracle_test::skipLoudly("an idmapped mount needs root");
        return;
    }
    // A bundle made by cp -al from a template others reach: the container's
    // root could rewrite the template's file and make it setuid root.
    TempDir closed_dir;
    TempDir open_dir;
    REQUIRE(chmod(closed_dir.path().c_str(), 0700) == 0);
    REQUIRE(chmod(open_dir.path().c_str(), 0755) == 0);
    REQUIRE(system(("mkdir -p " + closed_dir / "rootfs/bin" + " && echo x > " +
                    closed_dir / "rootfs/bin/tool" + " && ln " + closed_dir / "rootfs/bin/tool" +
                    " " + closed_dir / "rootfs/bin/alias")
                       .c_str()) == 0);
    UniqueFd fd(open((closed_dir / "rootfs").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    const ns::IdMapping block{0, 3000000000u, 0, 3000000000u, 65536};
    // Both links inside: idmapped.
    CHECK(oci::idmapImageRoot(fd.get(), closed_dir / "rootfs", block).tree.tree);
    REQUIRE(link((closed_dir / "rootfs/bin/tool").c_str(), (open_dir / "template-tool").c_str()) ==
            0);
    oci::IdmappedRoot linked = oci::idmapImageRoot(fd.get(), closed_dir / "rootfs", block);
    CHECK_FALSE(linked.tree.tree);
    CHECK(linked.not_idmapped.find("link outside the image") != std::string::npos);
}

TEST_CASE("oci idmapped root: an overlay's layers read back from its mountinfo options", "[oci]") {
    // As the kernel shows a legacy mount: each layer's own string, where a
    // backslash escapes a ':' or ',' of the path, then octal-escaped.
    oci::OverlayLayers legacy = oci::overlayLayersOf(
        "rw,lowerdir=/s/lo\\134:w\\134\\054er\\040a:/s/l2,upperdir=/s/up\\134\\054per,"
        "workdir=/s/work,uuid=on,fsync=volatile,index=on,nfs_export=off");
    CHECK(legacy.lowers == std::vector<std::string>{"/s/lo:w,er a", "/s/l2"});
    CHECK(legacy.upper == "/s/up,per");
    CHECK(legacy.work == "/s/work");
    // Its own index is off, whatever the engine's: the engine's mount holds
    // the upper directory.
    CHECK(legacy.kept ==
          std::vector<std::pair<std::string, std::string>>{{"uuid", "on"}, {"fsync", "volatile"}});
    CHECK(legacy.unsupported.empty());
    // One option a layer each (fsconfig's lowerdir+).
    oci::OverlayLayers appended =
        oci::overlayLayersOf("rw,lowerdir+=/a,lowerdir+=/b\\040c,upperdir=/u,workdir=/w,volatile");
    CHECK(appended.lowers == std::vector<std::string>{"/a", "/b c"});
    CHECK(appended.kept == std::vector<std::pair<std::string, std::string>>{{"volatile", ""}});
    // Data-only layers and an option this does not know are not remade.
    CHECK(oci::overlayLayersOf("rw,lowerdir=/a::/d,upperdir=/u,workdir=/w").unsupported ==
          "data-only lower layers");
    CHECK(oci::overlayLayersOf("rw,lowerdir=/a,upperdir=/u,workdir=/w,newthing=1").unsupported ==
          "the option newthing");
}

TEST_CASE("oci idmapped root: an image shown through another mount by a closed way too is idmapped",
          "[oci]") {
    if (geteuid() != 0) {
        oracle_test::skipLoudly("an idmapped mount needs root");
        return;
    }
    // podman's storage is a bind of its own directory, seen through "/" as
    // well: each way to the image passes the same 0700 directory of root's.
    TempDir outer;
    TempDir other;
    REQUIRE(chmod(outer.path().c_str(), 0700) == 0);
    REQUIRE(chmod(other.path().c_str(), 0755) == 0);
    REQUIRE(mkdir((outer / "store").c_str(), 0755) == 0);
    REQUIRE(mkdir((outer / "store/rootfs").c_str(), 0755) == 0);
    REQUIRE(mkdir((other / "view").c_str(), 0755) == 0);
    REQUIRE(mount((outer / "store").c_str(), (outer / "store").c_str(), nullptr, MS_BIND,
                  nullptr) == 0);
    const DetachOnExit unbind_self{outer / "store"};
    UniqueFd fd(open((outer / "store/rootfs").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    const ns::IdMapping block{0, 3000000000u, 0, 3000000000u, 65536};
    oci::IdmappedRoot both_closed = oci::idmapImageRoot(fd.get(), outer / "store/rootfs", block);
    CHECK(both_closed.tree.tree);
    CHECK(both_closed.not_idmapped == "");
    // A third way, through a directory anyone may search: refused, named.
    REQUIRE(mount((outer / "store").c_str(), (other / "view").c_str(), nullptr, MS_BIND, nullptr) ==
            0);
    const DetachOnExit unbind_view{other / "view"};
    oci::IdmappedRoot opened = oci::idmapImageRoot(fd.get(), outer / "store/rootfs", block);
    CHECK_FALSE(opened.tree.tree);
    CHECK(opened.not_idmapped.find(other / "view") != std::string::npos);
}

TEST_CASE("oci idmapped root: an overlay not remade leaves no work directory behind", "[oci]") {
    if (geteuid() != 0) {
        oracle_test::skipLoudly("mounting an overlay needs root");
        return;
    }
    TempDir closed;  // 0700, root's: the image and its layers are closed to others
    for (const char* d : {"lower", "upper", "work", "merged", "inner", "inner-up", "inner-work",
                          "inner-merged", "merged2", "upper2", "work2"})
        REQUIRE(mkdir((closed / d).c_str(), 0755) == 0);
    const ns::IdMapping block{0, 3000000000u, 0, 3000000000u, 65536};
    std::vector<std::string> recorded;
    const oci::OverlayWork work{"stockade-work-unit", [&](const std::string& path) {
                                    recorded.push_back(path);
                                    return okStatus();
                                }};
    auto no_work_dir_left = [&] {
        for (const char* d : {"", "/upper", "/inner-up"})
            if (access((closed / "" + d + "/" + "stockade-work-unit").c_str(), F_OK) == 0)
                return false;
        return access((closed / "stockade-work-unit").c_str(), F_OK) != 0;
    };
    // Layer paths relative to the mounter's directory (containers/storage
    // when its options outgrow a page): refused before anything is made.
    {
        char cwd[4096];
        REQUIRE(getcwd(cwd, sizeof cwd));
        REQUIRE(chdir(closed.path().c_str()) == 0);
        const int mounted =
            mount("overlay", "merged", "overlay", 0, "lowerdir=lower,upperdir=upper,workdir=work");
        REQUIRE(chdir(cwd) == 0);
        REQUIRE(mounted == 0);
    }
    const DetachOnExit unmount{closed / "merged"};
    UniqueFd fd(open((closed / "merged").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    oci::IdmappedRoot relative = oci::idmapImageRoot(fd.get(), closed / "merged", block, &work);
    CHECK_FALSE(relative.tree.tree);
    CHECK(relative.not_idmapped.find("is relative") != std::string::npos);
    CHECK(recorded.empty());
    // A lower directory that is itself an overlay cannot be idmapped: the
    // work directory was recorded and made, and is gone again.
    REQUIRE(mount("overlay", (closed / "inner-merged").c_str(), "overlay", 0,
                  ("lowerdir=" + closed / "inner" + ",upperdir=" + closed / "inner-up" +
                   ",workdir=" + closed / "inner-work")
                      .c_str()) == 0);
    const DetachOnExit unmount_inner{closed / "inner-merged"};
    REQUIRE(mount("overlay", (closed / "merged2").c_str(), "overlay", 0,
                  ("lowerdir=" + closed / "inner-merged" + ",upperdir=" + closed / "upper2" +
                   ",workdir=" + closed / "work2")
                      .c_str()) == 0);
    const DetachOnExit unmount2{closed / "merged2"};
    UniqueFd fd2(open((closed / "merged2").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd2);
    oci::IdmappedRoot stacked = oci::idmapImageRoot(fd2.get(), closed / "merged2", block, &work);
    CHECK_FALSE(stacked.tree.tree);
    CHECK(stacked.not_idmapped.find("cannot be idmapped") != std::string::npos);
    CHECK(recorded == std::vector<std::string>{closed / "stockade-work-unit"});
    CHECK(access((closed / "stockade-work-unit").c_str(), F_OK) != 0);
    CHECK(no_work_dir_left());
}
