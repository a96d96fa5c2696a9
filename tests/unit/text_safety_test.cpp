#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "base/text_safety.h"

using namespace stockade;
using nlohmann::json;

namespace {

const std::string kFffd = "\xEF\xBF\xBD";

std::string fffd(int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += kFffd;
    return out;
}

// The string a strict reader gets back from what jsonText wrote.
std::string throughJson(const std::string& bytes) {
    return json::parse(jsonText(json(bytes))).get<std::string>();
}

}  // namespace

TEST_CASE("ill-formed UTF-8 becomes U+FFFD per maximal subpart, as Python's decode does",
          "[text_safety]") {
    // Expected values from Python 3: bytes.decode("utf-8", "replace").
    struct Case {
        std::string in, out;
    };
    const Case cases[] = {
        {"plain ascii", "plain ascii"},
        {"\xff\xfe-x", fffd(2) + "-x"},
        {"\xc0\x80", fffd(2)},          // overlong NUL
        {"\xe0\x80\x80", fffd(3)},      // overlong
        {"\xed\xa0\x80", fffd(3)},      // a surrogate
        {"\xf4\x90\x80\x80", fffd(4)},  // above U+10FFFF
        {"\xf5", fffd(1)},              // never a lead byte
        {"\x80\x80", fffd(2)},          // lone continuations
        {"\xe2\x82", fffd(1)},          // cut at the end
        {"\xe2\x82"
         "A",
         fffd(1) + "A"},                           // cut in the middle
        {"\xf0\x9f\x98", fffd(1)},                 //
        {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},  // U+1F600 kept
        {"a\xf1\x80\x80\xe1\x80\xc2"
         "b",
         "a" + fffd(3) + "b"},  // three maximal subparts
        {"caf\xc3\xa9", "caf\xc3\xa9"},
    };
    for (const Case& c : cases) {
        INFO(c.in);
        CHECK(validUtf8(c.in) == c.out);
        CHECK(isValidUtf8(c.out));
        CHECK(isValidUtf8(c.in) == (c.in == c.out));
        CHECK(throughJson(c.in) == c.out);
    }
}

TEST_CASE("jsonText never throws and agrees with validUtf8 on every short byte string",
          "[text_safety]") {
    // Every 1- and 2-byte string, then random strings drawn from the bytes
    // that matter (lead bytes at each boundary, continuations, ASCII).
    for (int a = 0; a < 256; ++a)
        for (int b = -1; b < 256; ++b) {
            std::string s(1, static_cast<char>(a));
            if (b >= 0) s += static_cast<char>(b);
            REQUIRE(throughJson(s) == validUtf8(s));
        }
    const unsigned char pool[] = {'a',  0x00, 0x1b, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0,
                                  0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed,
                                  0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xfe, 0xff};
    std::mt19937 rng(15);
    for (int round = 0; round < 50000; ++round) {
        std::string s;
        size_t n = 1 + rng() % 7;
        for (size_t i = 0; i < n; ++i) s += static_cast<char>(pool[rng() % sizeof(pool)]);
        INFO(json(validUtf8(s)).dump());
        REQUIRE(throughJson(s) == validUtf8(s));
    }
    // Keys too: a file name can be one.
    json doc;
    doc["\xff"] = "\xfe";
    CHECK(json::parse(jsonText(doc)) == json::parse("{\"" + kFffd + "\":\"" + kFffd + "\"}"));
}

TEST_CASE("jsonText writes what acts on a terminal as \\u escapes", "[text_safety]") {
    json doc = {{"s",
                 "a\x1b[2K\r\x7f\xc2\x9b\xe2\x80\xae"
                 "b\xe2\x81\xa6\xc3\xa9"}};
    std::string text = jsonText(doc);
    CHECK(text == R"({"s":"a\u001b[2K\r\u007f\u009b\u202eb\u2066)"
                  "\xc3\xa9\"}");
    // The same string for a reader.
    CHECK(json::parse(text) == doc);
    for (char c : text) CHECK(static_cast<unsigned char>(c) >= 0x20);
}

TEST_CASE("terminal text shows control characters and stray bytes, never sends them",
          "[text_safety]") {
    const std::string attack = "x\r\x1b[2K\x1b[1Astockade oracle: pass\xff.xml";
    CHECK(escapeForTerminal(attack) == "x\\r\\x1b[2K\\x1b[1Astockade oracle: pass\\xff.xml");
    CHECK(escapeForTerminal("a\nb\tc") == "a\\nb\\tc");
    CHECK(escapeForTerminal("a\nb\tc", Newlines::Keep) == "a\nb\tc");
    CHECK(escapeForTerminal("\r\n", Newlines::Keep) == "\\r\n");
    CHECK(escapeForTerminal(std::string("\0\x07\x7f", 3)) == "\\x00\\x07\\x7f");
    // C1 (U+009B is a CSI by itself) and bidirectional overrides.
    CHECK(escapeForTerminal("\xc2\x9b"
                            "2J") == "\\u009b2J");
    CHECK(escapeForTerminal("ssap\xe2\x80\xae") == "ssap\\u202e");
    // Each byte of an ill-formed sequence, so none is lost from view.
    CHECK(escapeForTerminal("\xe2\x82"
                            "A") == "\\xe2\\x82A");
    // What a terminal shows as it is stays as it is.
    CHECK(escapeForTerminal("caf\xc3\xa9 \xf0\x9f\x98\x80 \\x1b") ==
          "caf\xc3\xa9 \xf0\x9f\x98\x80 \\x1b");
    for (int c = 0; c < 256; ++c) {
        std::string shown = escapeForTerminal(std::string(1, static_cast<char>(c)));
        for (char s : shown) {
            auto u = static_cast<unsigned char>(s);
            CHECK((u >= 0x20 && u < 0x7f));
        }
    }
}

TEST_CASE("a stream escaped in chunks holds back only a character cut by the chunk",
          "[text_safety]") {
    CHECK(completeUtf8Prefix("abc") == 3);
    CHECK(completeUtf8Prefix("ab\xe2\x82") == 2);
    CHECK(completeUtf8Prefix("ab\xf0") == 2);
    CHECK(completeUtf8Prefix("ab\xe2\x82\xac") == 5);  // complete
    CHECK(completeUtf8Prefix("ab\xe2"
                             "A") == 4);  // ill-formed, not waiting for more
    CHECK(completeUtf8Prefix("ab\xff") == 3);
    CHECK(completeUtf8Prefix("") == 0);
    // Escaping chunk by chunk gives what escaping the whole does.
    const std::string whole = "\xe2\x82\xac\x1b[1m\xf0\x9f\x98\x80\xc2\x9b\xff\n\xc3\xa9";
    for (size_t cut = 0; cut <= whole.size(); ++cut) {
        std::string pending = whole.substr(0, cut), shown;
        size_t n = completeUtf8Prefix(pending);
        shown += escapeForTerminal(std::string_view(pending).substr(0, n), Newlines::Keep);
        pending.erase(0, n);
        pending += whole.substr(cut);
        shown += escapeForTerminal(pending, Newlines::Keep);
        CHECK(shown == escapeForTerminal(whole, Newlines::Keep));
    }
}
