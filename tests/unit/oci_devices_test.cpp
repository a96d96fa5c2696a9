// linux.devices: the host's node found by type and number, never a link
// taken for it, and a device the host lacks refused by its field.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

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
    auto plan = oci::planDevices({charDevice("/dev/zero", 1, 5)}, false);
    REQUIRE(plan.ok());
    REQUIRE(plan->binds.size() == 1);
    CHECK(plan->binds[0].host_path == "/dev/zero");
    CHECK(plan->binds[0].target == "/dev/zero");
    CHECK(plan->notes.empty());
}

TEST_CASE("oci devices: a renamed device is found in /dev by its numbers", "[oci]") {
    auto plan = oci::planDevices({charDevice("/dev/myfull", 1, 7)}, true);
    REQUIRE(plan.ok());
    REQUIRE(plan->binds.size() == 1);
    CHECK(plan->binds[0].host_path == "/dev/full");
    CHECK(plan->binds[0].target == "/dev/myfull");
}

TEST_CASE("oci devices: a link at the device's path is not taken for the node", "[oci]") {
    char dir_template[] = "/tmp/stockade-devices-unit-XXXXXX";
    REQUIRE(mkdtemp(dir_template) != nullptr);
    const std::string link = std::string(dir_template) + "/zero";
    REQUIRE(symlink("/dev/zero", link.c_str()) == 0);
    auto plan = oci::planDevices({charDevice(link, 1, 5)}, false);
    unlink(link.c_str());
    rmdir(dir_template);
    REQUIRE(plan.ok());
    REQUIRE(plan->binds.size() == 1);
    // The host's own node, found in /dev, never the link.
    CHECK(plan->binds[0].host_path == "/dev/zero");
    CHECK(plan->binds[0].target == link);
}

TEST_CASE("oci devices: a device the host lacks is refused, naming the field", "[oci]") {
    // Major 0 is the kernel's unnamed devices: no node in /dev has 0:77.
    auto plan =
        oci::planDevices({charDevice("/dev/zero", 1, 5), charDevice("/dev/none", 0, 77)}, false);
    REQUIRE_FALSE(plan.ok());
    const std::string message = plan.error().describe();
    INFO(message);
    CHECK(
        message.starts_with("config.json: linux.devices[1]: the host has no character device "
                            "0:77 in /dev"));
    oci::Device block = charDevice("/dev/zero", 1, 5);
    block.type = 'b';  // the numbers of a character device, asked as a block one
    auto wrong_type = oci::planDevices({block}, false);
    REQUIRE_FALSE(wrong_type.ok());
    CHECK(wrong_type.error().describe().find("block device 1:5") != std::string::npos);
}

TEST_CASE("oci devices: the nodes stockade makes in its own /dev are left to it", "[oci]") {
    auto plan = oci::planDevices({charDevice("/dev/null", 1, 3), charDevice("/dev/ptmx", 5, 2),
                                  charDevice("/dev/myfull", 1, 7)},
                                 true);
    REQUIRE(plan.ok());
    REQUIRE(plan->binds.size() == 1);
    CHECK(plan->binds[0].target == "/dev/myfull");
    // Other numbers at one of those paths: refused, not bound over it.
    auto other = oci::planDevices({charDevice("/dev/null", 1, 5)}, true);
    REQUIRE_FALSE(other.ok());
    CHECK(other.error().describe().find("/dev/null is made by stockade") != std::string::npos);
    // A /dev of the image's own (no tmpfs): bound like any other.
    auto image_dev = oci::planDevices({charDevice("/dev/null", 1, 3)}, false);
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
    auto same = oci::planDevices({d}, false);
    REQUIRE(same.ok());
    CHECK(same->notes.empty());
    d.file_mode = S_IFCHR | 0600;
    d.uid = 1000;
    auto differs = oci::planDevices({d}, false);
    REQUIRE(differs.ok());
    REQUIRE(differs->notes.size() == 2);
    CHECK(differs->notes[0].find("keeps the host node's mode") != std::string::npos);
    CHECK(differs->notes[1].find("keeps the host node's owner") != std::string::npos);
}
