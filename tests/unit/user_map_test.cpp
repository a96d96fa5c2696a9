// IdMapping::host_root_inside (namespaces/user.h): the extra map line that
// gives host root's ids a place past the block, and its refusals.
#include <catch2/catch.hpp>

#include "namespaces/user.h"

using namespace stockade;

TEST_CASE("user map: host root's line lies past the block, never in it", "[namespaces]") {
    ns::IdMapping block{0, 200000, 0, 200000, 65536};
    CHECK(*ns::hostRootMapLine(block) == "");  // none asked
    block.host_root_inside = 65536;
    CHECK(*ns::hostRootMapLine(block) == "65536 0 1\n");
    block.host_root_inside = 65535;  // the block's own last id
    CHECK_FALSE(ns::hostRootMapLine(block));
    ns::IdMapping from_root{0, 0, 0, 0, 65536};  // a block holding host root already
    from_root.host_root_inside = 65536;
    CHECK_FALSE(ns::hostRootMapLine(from_root));
    ns::IdMapping one{1000, 200000, 1000, 200000, 1};
    one.host_root_inside = 1000;  // the one id itself
    CHECK_FALSE(ns::hostRootMapLine(one));
    one.host_root_inside = 65536;
    CHECK(*ns::hostRootMapLine(one) == "65536 0 1\n");
}
