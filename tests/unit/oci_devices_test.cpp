// linux.devices: the host's node found by type and number, never a link
// taken for it, and a device the host lacks refused by its field.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "oci/devices.h"

using namespace stockade;

namespace {

oci::Device charDevice(std::string path, uint32_t major, uint32_t minor) {
    oci::Device d;
    d.path = std::move(path);
    d.type = 'c';
    d.major = major;
    d.minor = minor;
    return d;
}

}  // namespace

TEST_CASE("oci devices: the node at the same path when it has the numbers asked", "[oci]") {
    auto plan = oci::planDevices({charDevice("/dev/zero", 1, 5)}, {}, false, false);
    REQUIRE(plan.ok());
    REQUIRE(plan->binds.size() == 1);
    CHECK(plan->binds[0].node.path == "/dev/zero");
    CHECK(plan->binds[0].target == "/dev/zero");
    CHECK(plan->notes.empty());
}

TEST_CASE("oci devices: a renamed device is found in /dev by its numbers", "[oci]") {
    auto plan = oci::planDevices({charDevice("/dev/myfull", 1, 7)}, {}, true, false);
    REQUIRE(plan.ok());
    REQUIRE(plan->binds.size() == 1);
    CHECK(plan->binds[0].node.path == "/dev/full");
    CHECK(plan->binds[0].target == "/dev/myfull");
}

TEST_CASE("oci devices: a link at the device's path is not taken for the node", "[oci]") {
    char dir_template[] = "/tmp/stockade-devices-unit-XXXXXX";
    REQUIRE(mkdtemp(dir_template) != nullptr);
    const std::string link = std::string(dir_template) + "/zero";
    REQUIRE(symlink("/dev/zero", link.c_str()) == 0);
    auto plan = oci::planDevices({charDevice(link, 1, 5)}, {}, false, false);
    unlink(link.c_str());
    rmdir(dir_template);
    REQUIRE(plan.ok());
    REQUIRE(plan->binds.size() == 1);
    // The host's own node, found in /dev, never the link.
    CHECK(plan->binds[0].node.path == "/dev/zero");
    CHECK(plan->binds[0].target == link);
}

TEST_CASE("oci devices: a device the host lacks is refused, naming the field", "[oci]") {
    // Major 0 is the kernel's unnamed devices: no node in /dev has 0:77.
    auto plan = oci::planDevices({charDevice("/dev/zero", 1, 5), charDevice("/dev/none", 0, 77)},
                                 {}, false, false);
    REQUIRE_FALSE(plan.ok());
    const std::string message = plan.error().describe();
    INFO(message);
    CHECK(
        message.starts_with("config.json: linux.devices[1]: the host has no character device "
                            "0:77 in /dev"));
    oci::Device block = charDevice("/dev/zero", 1, 5);
    block.type = 'b';  // the numbers of a character device, asked as a block one
    auto wrong_type = oci::planDevices({block}, {}, false, false);
    REQUIRE_FALSE(wrong_type.ok());
    CHECK(wrong_type.error().describe().find("block device 1:5") != std::string::npos);
}

TEST_CASE("oci devices: the nodes stockade makes in its own /dev are left to it", "[oci]") {
    auto plan = oci::planDevices({charDevice("/dev/null", 1, 3), charDevice("/dev/ptmx", 5, 2),
                                  charDevice("/dev/myfull", 1, 7)},
                                 {}, true, false);
    REQUIRE(plan.ok());
    REQUIRE(plan->binds.size() == 1);
    CHECK(plan->binds[0].target == "/dev/myfull");
    // Other numbers at one of those paths: refused, not bound over it.
    auto other = oci::planDevices({charDevice("/dev/null", 1, 5)}, {}, true, false);
    REQUIRE_FALSE(other.ok());
    CHECK(other.error().describe().find("/dev/null is made by stockade") != std::string::npos);
    // A /dev of the image's own (no tmpfs): bound like any other.
    auto image_dev = oci::planDevices({charDevice("/dev/null", 1, 3)}, {}, false, false);
    REQUIRE(image_dev.ok());
    CHECK(image_dev->binds.size() == 1);
}

TEST_CASE("oci devices: a mode or owner the bind cannot give is said", "[oci]") {
    struct stat st;
    REQUIRE(stat("/dev/zero", &st) == 0);
    oci::Device d = charDevice("/dev/zero", 1, 5);
    d.file_mode = S_IFCHR | (st.st_mode & 07777);  // as podman sends it: the type bits too
    d.uid = 0;
    d.gid = 0;
    auto same = oci::planDevices({d}, {}, false, false);
    REQUIRE(same.ok());
    CHECK(same->notes.empty());
    d.file_mode = S_IFCHR | 0600;
    d.uid = 1000;
    auto differs = oci::planDevices({d}, {}, false, false);
    REQUIRE(differs.ok());
    REQUIRE(differs->notes.size() == 2);
    CHECK(differs->notes[0].find("keeps the host node's mode") != std::string::npos);
    CHECK(differs->notes[1].find("keeps the host node's owner") != std::string::npos);
}

TEST_CASE(
    "oci devices: rules granting less than rw refuse the device unless a device cgroup holds them",
    "[oci]") {
    auto rule = [](bool allow, char type, std::optional<int64_t> major,
                   std::optional<int64_t> minor, std::string access) {
        oci::DeviceRule r;
        r.allow = allow;
        r.type = type;
        r.major = major;
        r.minor = minor;
        r.access = std::move(access);
        return r;
    };
    const oci::Device zero = charDevice("/dev/myzero", 1, 5);
    // podman's: deny all, then allow the device.
    const std::vector<oci::DeviceRule> rw = {rule(false, 'a', {}, {}, "rwm"),
                                             rule(true, 'c', 1, 5, "rwm")};
    CHECK(oci::deviceAccess(zero, rw) == "rwm");
    CHECK(oci::planDevices({zero}, rw, true, false).ok());
    const std::vector<oci::DeviceRule> read_only = {rule(false, 'a', {}, {}, "rwm"),
                                                    rule(true, 'c', 1, 5, "r")};
    CHECK(oci::deviceAccess(zero, read_only) == "r");
    auto refused = oci::planDevices({zero}, read_only, true, false);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().describe().find("linux.devices[0]: linux.resources.devices gives "
                                          "/dev/myzero \"r\" only") != std::string::npos);
    // Where the container's own device cgroup holds the rules, it is what
    // refuses the write: the node is bound.
    auto held = oci::planDevices({zero}, read_only, true, true);
    REQUIRE(held.ok());
    CHECK(held->binds.size() == 1);
    // Denied outright; a later rule of another device or type changes nothing.
    const std::vector<oci::DeviceRule> denied = {rule(false, 'a', {}, {}, "rwm"),
                                                 rule(true, 'b', 1, 5, "rwm"),
                                                 rule(true, 'c', 1, 7, "rwm")};
    CHECK(oci::deviceAccess(zero, denied).empty());
    CHECK_FALSE(oci::planDevices({zero}, denied, true, false).ok());
    // No rules: the cgroup's default, everything; -1 is any number.
    CHECK(oci::deviceAccess(zero, {}) == "rwm");
    CHECK(oci::deviceAccess(zero, {rule(false, 'a', {}, {}, "w"), rule(true, 'c', 1, -1, "w")}) ==
          "rwm");
}

TEST_CASE("oci devices: the node bound is the node judged, held without a link", "[oci]") {
    auto plan = oci::planDevices({charDevice("/dev/myfull", 1, 7)}, {}, true, false);
    REQUIRE(plan.ok());
    REQUIRE(plan->binds.size() == 1);
    struct stat st;
    REQUIRE(fstat(plan->binds[0].node.get(), &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
    CHECK(st.st_rdev == makedev(1, 7));
    CHECK(plan->binds[0].node.path == "/dev/full");
}
