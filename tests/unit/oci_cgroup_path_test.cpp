// linux.cgroupsPath as a cgroupfs path (oci/cgroups.h cgroupfsPath): the
// cgroupfs form as written, and systemd's slice:prefix:name form (the shape
// Kubernetes' kubelet sends with the systemd driver) expanded as runc's
// systemd driver names the unit's cgroup.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "oci/cgroups.h"

using stockade::oci::cgroupfsPath;
using stockade::oci::rootTag;

namespace {

std::string pathOf(const std::string& asked, bool systemd, const std::string& id = "c1") {
    auto p = cgroupfsPath(asked, id, systemd, "/run/stockade-oci");
    REQUIRE(p);
    return *p;
}

std::string refusalOf(const std::string& asked, bool systemd) {
    auto p = cgroupfsPath(asked, "c1", systemd, "/run/stockade-oci");
    REQUIRE_FALSE(p);
    return p.error().describe();
}

}  // namespace

TEST_CASE("oci cgroupsPath: the cgroupfs form is taken as written, default /stockade-oci/ID-TAG",
          "[oci]") {
    CHECK(pathOf("/kubepods/burstable/pod1234/abc", false) == "/kubepods/burstable/pod1234/abc");
    // The default names the state root too: one id under two --root dirs
    // is two containers, never one cgroup.
    CHECK(pathOf("", false, "x9") == "/stockade-oci/x9-" + rootTag("/run/stockade-oci"));
    CHECK(rootTag("/run/stockade-oci").size() == 16);
    CHECK(rootTag("/run/stockade-oci") != rootTag("/run/stockade-oci2"));
    CHECK(rootTag("") == "cbf29ce484222325");   // FNV-1a's offset basis: nothing hashed
    CHECK(rootTag("a") == "af63dc4c8601ec8c");  // FNV-1a 64 of "a", as published
    CHECK(*cgroupfsPath("", "x9", false, "/var/tmp/r") != pathOf("", false, "x9"));
    // An id that begins with ".." is a name like any other (the review's
    // "..x" once read as a ".." component and got no cgroup).
    CHECK(pathOf("", false, "..x") == "/stockade-oci/..x-" + rootTag("/run/stockade-oci"));
    CHECK(pathOf("/a/..b/c", false) == "/a/..b/c");
    // The default cgroups are each one container's: no path given names one.
    CHECK(refusalOf("/stockade-oci", false).find("stockade's default cgroups") !=
          std::string::npos);
    CHECK(refusalOf("//stockade-oci/x9-0123456789abcdef/", false)
              .find("stockade's default cgroups") != std::string::npos);
    CHECK(pathOf("/stockade-oci-mine/a", false) == "/stockade-oci-mine/a");
    // Empty components dropped: the leaf is the last name however spelt (a
    // trailing '/' once made the exclusive device leaf always "exist").
    CHECK(pathOf("/a/", false) == "/a");
    CHECK(pathOf("//a//b/", false) == "/a/b");
    CHECK(refusalOf("relative/path", false).find("absolute") != std::string::npos);
    CHECK(refusalOf("/a/../b", false).find("absolute") != std::string::npos);
    // The root, or a path spelled to be another than written: refused (a
    // container's cgroup may be killed whole).
    CHECK(refusalOf("/", false).find("names the root cgroup") != std::string::npos);
    CHECK(refusalOf("//", false).find("names the root cgroup") != std::string::npos);
    CHECK(refusalOf("/.", false).find("\".\" component") != std::string::npos);
    CHECK(refusalOf("/a/./b", false).find("\".\" component") != std::string::npos);
    // The systemd form without --systemd-cgroup: runc would make a directory
    // of that literal name; the client meant the systemd driver.
    CHECK(refusalOf("kubepods-burstable-pod1.slice:cri-containerd:abc", false)
              .find("needs --systemd-cgroup") != std::string::npos);
}

TEST_CASE("oci cgroupsPath: systemd's slice:prefix:name form expands as runc's systemd driver",
          "[oci]") {
    CHECK(pathOf("kubepods-burstable-pod1234.slice:cri-containerd:abc", true) ==
          "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/"
          "cri-containerd-abc.scope");
    CHECK(pathOf("kubepods.slice:cri-containerd:abc", true) ==
          "/kubepods.slice/cri-containerd-abc.scope");
    // An empty slice is system.slice; -.slice is the root; a name that is a
    // slice is the unit itself (the prefix unused).
    CHECK(pathOf(":runc:abc", true) == "/system.slice/runc-abc.scope");
    CHECK(pathOf("-.slice:p:abc", true) == "/p-abc.scope");
    CHECK(pathOf("user.slice:p:user-1000.slice", true) == "/user.slice/user-1000.slice");
    // The default unit names the state root too: one id under two roots is
    // two units (the review found two roots' containers in one scope).
    CHECK(pathOf("", true, "x9") ==
          "/system.slice/stockade-x9-" + rootTag("/run/stockade-oci") + ".scope");
    CHECK(*cgroupfsPath("", "x9", true, "/var/tmp/r") != pathOf("", true, "x9"));
}

TEST_CASE("oci cgroupsPath: a malformed systemd form is refused with runc's words or its field",
          "[oci]") {
    CHECK(refusalOf("/kubepods/pod1/abc", true) ==
          "expected cgroupsPath to be of format \"slice:prefix:name\" for systemd cgroups, got "
          "\"/kubepods/pod1/abc\" instead");
    CHECK(refusalOf("a.slice:b", true).find("slice:prefix:name") != std::string::npos);
    CHECK(refusalOf("a.slice:b:c:d", true).find("slice:prefix:name") != std::string::npos);
    for (const char* bad : {"kubepods:p:n", "a--b.slice:p:n", "-a.slice:p:n", "a-.slice:p:n",
                            ".slice:p:n", "a/b.slice:p:n"})
        CHECK(refusalOf(bad, true).find("invalid slice name") != std::string::npos);
    // The unit's parts become one directory name: no '/' (no escape from
    // the slice), not empty, not a dot name.
    for (const char* bad :
         {"a.slice:p:../../etc", "a.slice:../..:n", "a.slice:p:", "a.slice:p:..", "a.slice:p:n\n"})
        CHECK(refusalOf(bad, true).find("linux.cgroupsPath") != std::string::npos);
}

// A v1 host that mounts cpu and cpuacct together (cpu,cpuacct, with a link
// of each name to it, as systemd and Docker-era distributions do): the
// container gets one directory there, named by both, and a create is not
// refused because its second name finds the directory the first made. A
// plain directory stands for the cgroupfs: mkdir of the leaf behaves alike,
// and nothing is written to it without limits asked.
TEST_CASE("oci cgroups: hierarchies mounted together give one directory, named by each", "[oci]") {
    // (Named without "stockade": the integration tests' host snapshots count
    // every such name in /tmp.)
    char tmpl[] = "/tmp/oci-cgroups-comount-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const std::string root = tmpl;
    for (const char* d : {"memory", "pids", "cpu,cpuacct", "blkio"})
        REQUIRE(mkdir((root + "/" + d).c_str(), 0755) == 0);
    REQUIRE(symlink("cpu,cpuacct", (root + "/cpu").c_str()) == 0);
    REQUIRE(symlink("cpu,cpuacct", (root + "/cpuacct").c_str()) == 0);

    stockade::oci::CgroupAsk ask;
    ask.path = "/stockade-oci/c1-0123456789abcdef";
    ask.must_be_new = true;
    ask.must_be_new_why = "a default cgroup";
    auto made = stockade::oci::makeContainerCgroups(ask, root);
    REQUIRE(made);
    std::vector<std::string> want;
    for (const char* d : {"memory", "pids", "cpu", "cpuacct"})
        want.push_back(root + "/" + d + ask.path);
    // blkio, a bare directory here and no cgroup hierarchy, is passed over:
    // cpuacct and blkio only count, and a container goes without either.
    CHECK(made->dirs == want);
    struct stat st {};
    CHECK(stat((root + "/blkio" + ask.path).c_str(), &st) < 0);
    CHECK(stat((root + "/cpu,cpuacct" + ask.path).c_str(), &st) == 0);

    // A second create of the id is refused (its leaf is there); the
    // directory goes once, whichever name removes it first.
    auto again = stockade::oci::makeContainerCgroups(ask, root);
    REQUIRE_FALSE(again);
    CHECK(again.error().describe().find("exists already") != std::string::npos);
    CHECK(stockade::oci::removeContainerCgroups(made->dirs));
    CHECK(stat((root + "/cpu,cpuacct" + ask.path).c_str(), &st) < 0);
    for (const char* d : {"memory", "pids", "cpu,cpuacct", "blkio"}) {
        rmdir((root + "/" + d + "/stockade-oci").c_str());
        CHECK(rmdir((root + "/" + d).c_str()) == 0);
    }
    CHECK(unlink((root + "/cpu").c_str()) == 0);
    CHECK(unlink((root + "/cpuacct").c_str()) == 0);
    CHECK(rmdir(root.c_str()) == 0);
}
