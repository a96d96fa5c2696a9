#include <catch2/catch.hpp>
#include <string>

#include "runtime/ready_pattern.h"

using namespace stockade;

namespace {

bool matches(const std::string& pattern, const std::string& output) {
    auto p = ReadyPattern::compile(pattern);
    REQUIRE(p.ok());
    return p->feed(output.data(), output.size());
}

}  // namespace

TEST_CASE("a ready pattern matches only a word-bounded run", "[serve][ready]") {
    CHECK_FALSE(matches("ready", "Already exists\n"));
    CHECK_FALSE(matches("ready", "unready\n"));
    CHECK_FALSE(matches("ready", "readyness\n"));
    CHECK(matches("ready", "VITE v5.0.0  ready in 300 ms\n"));
    CHECK(matches("ready", "Already exists, ready\n"));  // the second run counts
    CHECK(matches("Local:", "  Local:   http://localhost:5173/\n"));
    CHECK(matches("listening on port \\d+", "server listening on port 3000\n"));
    CHECK_FALSE(matches("listening on port \\d", "server listening on port 3000\n"));
}

TEST_CASE("a ready pattern sees through colour escapes and split writes", "[serve][ready]") {
    CHECK(matches("ready", "\x1b[32mready\x1b[39m in 5 ms\n"));
    CHECK(matches("ready", "\x1b]0;title\x07ready\n"));
    CHECK(matches("ready in", "ready\r\x1b[2Kready in 5 ms"));  // a prompt with no newline yet
    auto p = ReadyPattern::compile("server started");
    REQUIRE(p.ok());
    CHECK_FALSE(p->feed("server st", 9));
    CHECK(p->feed("arted\n", 6));
    CHECK(p->matched());
    // Lines do not join: a match may not span a newline.
    auto q = ReadyPattern::compile("a b");
    REQUIRE(q.ok());
    CHECK_FALSE(q->feed("a\nb\n", 4));
}

TEST_CASE("a ready pattern that is not a regular expression is refused by name", "[serve][ready]") {
    auto p = ReadyPattern::compile("(unclosed");
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().text().find("--ready-pattern") == 0);
    CHECK_FALSE(ReadyPattern::compile("").ok());
}
