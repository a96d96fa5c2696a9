// process.user.additionalGids (oci/groups.h): read as listed, then taken as
// the host gids the container's gid map gives them, as root only; each
// refusal names its field and says why.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "oci/config.h"
#include "oci/groups.h"

using namespace stockade::oci;
using nlohmann::json;

namespace {

json minimal() {
    return json{
        {"ociVersion", "1.1.0"},
        {"root", {{"path", "rootfs"}}},
        {"process",
         {{"args", {"sh"}},
          {"cwd", "/"},
          {"user", {{"uid", 1000}, {"gid", 1000}, {"additionalGids", {2000, 1000, 3000, 2000}}}}}},
        {"linux", {{"namespaces", {{{"type", "pid"}}, {{"type", "mount"}}}}}}};
}

}  // namespace

TEST_CASE("oci groups: additionalGids are read as listed, duplicates and the own gid kept",
          "[oci]") {
    auto parsed = parseConfig(minimal().dump());
    REQUIRE(parsed);
    CHECK(parsed->additional_gids == std::vector<gid_t>{2000, 1000, 3000, 2000});
    json none = minimal();
    none["process"]["user"].erase("additionalGids");
    auto bare = parseConfig(none.dump());
    REQUIRE(bare);
    CHECK(bare->additional_gids.empty());
}

TEST_CASE("oci groups: as root, each gid becomes the host gid the container's map gives it",
          "[oci]") {
    // A leased block: container 0..65535 are host 300000...
    stockade::ns::IdMapping block{1000, 301000, 1000, 301000, 65536};
    auto extents = gidExtentsOf(block);
    REQUIRE(extents.size() == 1);
    CHECK(
        (extents[0].container_id == 0 && extents[0].host_id == 300000 && extents[0].size == 65536));
    auto host = hostGroupsFor({2000, 1000, 3000}, 1000, extents, true, false, "F");
    REQUIRE(host);
    CHECK(*host == std::vector<gid_t>{302000, 301000, 303000});
    // None asked: none set (root's own are shed).
    auto none = hostGroupsFor({}, 1000, extents, true, false, "F");
    REQUIRE(none);
    CHECK(none->empty());
}

TEST_CASE("oci groups: a gid the map does not hold is refused by name", "[oci]") {
    // One id mapped (a uid or gid past the lease's width, or a size-1 mapping).
    stockade::ns::IdMapping one{70000, 300000, 70000, 300000, 1};
    auto own = hostGroupsFor({70000}, 70000, gidExtentsOf(one), true, false, "F");
    REQUIRE(own);
    CHECK(*own == std::vector<gid_t>{300000});
    auto other = hostGroupsFor({70000, 5}, 70000, gidExtentsOf(one), true, false,
                               "config.json: process.user.additionalGids");
    REQUIRE(!other);
    CHECK(
        other.error().describe().starts_with("config.json: process.user.additionalGids: gid 5 "
                                             "is not mapped"));
    stockade::ns::IdMapping block{0, 300000, 0, 300000, 65536};
    auto past = hostGroupsFor({65536}, 0, gidExtentsOf(block), true, false, "F");
    REQUIRE(!past);
    CHECK(past.error().describe().find("65536 is not mapped") != std::string::npos);
}

TEST_CASE("oci groups: never host gid 0, whatever the map says", "[oci]") {
    std::vector<IdMap> extents{{0, 0, 1}, {1, 500000, 10}};
    auto zero = hostGroupsFor({0}, 1, extents, true, false, "F");
    REQUIRE(!zero);
    CHECK(zero.error().describe().find("host gid 0") != std::string::npos);
    auto fine = hostGroupsFor({3}, 1, extents, true, false, "F");
    REQUIRE(fine);
    CHECK(*fine == std::vector<gid_t>{500002});
}

TEST_CASE("oci groups: rootless, only the process's own gid, else refused saying why", "[oci]") {
    stockade::ns::IdMapping caller{0, 65534, 0, 65534, 1};
    auto own = hostGroupsFor({0, 0}, 0, gidExtentsOf(caller), false, false, "F");
    REQUIRE(own);
    CHECK(own->empty());
    auto other = hostGroupsFor({0, 10}, 0, gidExtentsOf(caller), false, false,
                               "config.json: process.user.additionalGids");
    REQUIRE(!other);
    const std::string why = other.error().describe();
    CHECK(why.starts_with("config.json: process.user.additionalGids: gid 10: "));
    CHECK(why.find("rootless") != std::string::npos);
    CHECK(why.find("setgroups") != std::string::npos);
}

TEST_CASE("oci groups: run.oci.keep_original_groups, rootless only", "[oci]") {
    CHECK(keepsOriginalGroups({{"run.oci.keep_original_groups", "1"}}));
    CHECK(keepsOriginalGroups({{"run.oci.keep_original_groups", "true"}}));
    CHECK(!keepsOriginalGroups({{"run.oci.keep_original_groups", "0"}}));
    CHECK(!keepsOriginalGroups({}));
    stockade::ns::IdMapping caller{0, 65534, 0, 65534, 1};
    auto kept = hostGroupsFor({10, 20}, 0, gidExtentsOf(caller), false, true, "F");
    REQUIRE(kept);
    CHECK(kept->empty());
    stockade::ns::IdMapping block{0, 300000, 0, 300000, 65536};
    auto root = hostGroupsFor({10}, 0, gidExtentsOf(block), true, true, "F");
    REQUIRE(!root);
    CHECK(root.error().describe().starts_with(
        "config.json: annotations.run.oci.keep_original_groups: refused as root"));
}

TEST_CASE("oci groups: a gid_map read as the host reads it", "[oci]") {
    auto map = parseGidMap("         0     300000      65536\n");
    REQUIRE(map);
    REQUIRE(map->size() == 1);
    CHECK(((*map)[0].container_id == 0 && (*map)[0].host_id == 300000 && (*map)[0].size == 65536));
    auto two = parseGidMap("0 1000 1\n         5 200000 10\n");
    REQUIRE(two);
    CHECK(two->size() == 2);
    auto host = hostGroupsFor({7}, 0, *two, true, false, "F");
    REQUIRE(host);
    CHECK(*host == std::vector<gid_t>{200002});
    CHECK(!parseGidMap("0 x 1\n"));
    CHECK(!parseGidMap("0 1\n"));
    auto empty = parseGidMap("");
    REQUIRE(empty);
    CHECK(empty->empty());
}

TEST_CASE(
    "oci groups: setgroups is left allowed only for a privileged writer, without the "
    "stockade profile, and without deny asked",
    "[oci]") {
    const std::map<std::string, std::string> none;
    CHECK(*setgroupsAllowed(none, "", true));
    CHECK_FALSE(*setgroupsAllowed(none, "", false));        // one id rootless: the kernel's deny
    CHECK_FALSE(*setgroupsAllowed(none, "default", true));  // the stockade profile
    CHECK_FALSE(*setgroupsAllowed({{kSetgroupsAnnotation, "deny"}}, "", true));
    CHECK(*setgroupsAllowed({{kSetgroupsAnnotation, "allow"}}, "", true));
    CHECK_FALSE(*setgroupsAllowed({{kSetgroupsAnnotation, "allow"}}, "default", true));
    auto bad = setgroupsAllowed({{kSetgroupsAnnotation, "yes"}}, "", true);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().describe().find("run.oci.stockade.setgroups") != std::string::npos);
}
