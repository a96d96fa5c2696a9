#include <catch2/catch.hpp>

#include "base/units.h"

using namespace stockade;

TEST_CASE("sizes take binary suffixes and reject nonsense", "[units]") {
    CHECK(*parseSize("512m") == 512ull << 20);
    CHECK(*parseSize("268435456") == 268435456ull);
    CHECK(*parseSize("2G") == 2ull << 30);
    CHECK(*parseSize("4k") == 4096ull);
    for (const char* bad : {"", "0", "-1", "12x", "m", "1.5g", "99999999999999999999", "16777216t"})
        CHECK_FALSE(parseSize(bad).ok());
    CHECK(parseSize("-1").error().describe() ==
          "expected a size like \"512m\" or a byte count, got \"-1\"");
}

TEST_CASE("seconds allow fractions and round up to milliseconds", "[units]") {
    CHECK(*parseSecondsAsMs("30") == 30000);
    CHECK(*parseSecondsAsMs("1.5") == 1500);
    CHECK(*parseSecondsAsMs("0.0001") == 1);
    for (const char* bad : {"", "0", "-2", "abc", "1s", "inf", "nan"})
        CHECK_FALSE(parseSecondsAsMs(bad).ok());
}

TEST_CASE("counts are positive integers", "[units]") {
    CHECK(*parseCount("512") == 512);
    for (const char* bad : {"", "0", "-5", "5.0", "x"}) CHECK_FALSE(parseCount(bad).ok());
}
