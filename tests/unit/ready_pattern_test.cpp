#include <catch2/catch.hpp>
#include <string>

#include "serve/ready_pattern.h"

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

namespace {

// Feeds `output` one byte per write, as a server that dribbles would.
bool dribble(ReadyPattern& p, const std::string& output) {
    for (char c : output)
        if (p.feed(&c, 1)) return true;
    return false;
}

ReadyPattern compiled(const std::string& pattern) {
    auto p = ReadyPattern::compile(pattern);
    REQUIRE(p.ok());
    return std::move(*p);
}

}  // namespace

TEST_CASE("a ready pattern takes linear time and bounded work on long and dribbled lines",
          "[serve][ready]") {
    const std::string mega(1 << 20, 'a');
    // Patterns that made std::regex recurse per character (SIGSEGV at ~40 KB)
    // or backtrack exponentially.
    for (const std::string pattern :
         {"listening on .*", ".+x", "a\\s+b", "(a|aa)*b", "(a*)*b", "(?:a+)+$x", "\\w+!"}) {
        INFO(pattern);
        ReadyPattern whole = compiled(pattern);
        CHECK_FALSE(whole.feed(mega.data(), mega.size()));
        CHECK_FALSE(whole.feed("\n", 1));
        // Only the window of the line reached RE2, once.
        CHECK(whole.bytesMatchedForTest() <= ReadyPattern::kWindow);

        ReadyPattern slow = compiled(pattern);
        CHECK_FALSE(dribble(slow, mega + "\n"));
        CHECK(slow.bytesMatchedForTest() <= 3 * ReadyPattern::kWindow);
    }
    // Many short lines dribbled: each byte reaches RE2 at most three times.
    std::string lines;
    while (lines.size() < (1 << 20))
        lines += "compiling module " + std::to_string(lines.size()) + "\n";
    ReadyPattern many = compiled("listening on .*");
    CHECK_FALSE(dribble(many, lines));
    CHECK(many.bytesMatchedForTest() <= 3 * lines.size());
    // settle() looks at most once per growth of the line.
    ReadyPattern settled = compiled("ready");
    CHECK_FALSE(settled.feed("unre", 4));
    const uint64_t before = settled.bytesMatchedForTest();
    for (int i = 0; i < 1000; ++i) CHECK_FALSE(settled.settle());
    CHECK(settled.bytesMatchedForTest() == before);
}

TEST_CASE("a ready pattern looks at the first window of a long line, then at the next line",
          "[serve][ready]") {
    const std::string filler(200 * 1024, 'x');
    // Past the window: not looked at (the header says so).
    CHECK_FALSE(matches("ready", filler + " ready\n"));
    CHECK_FALSE(matches("ready", std::string(ReadyPattern::kWindow, ' ') + "ready\n"));
    // Within it, even on a line of 200 KB.
    CHECK(matches("ready", std::string(ReadyPattern::kWindow - 6, ' ') + "ready " + filler + "\n"));
    CHECK(matches("listening on .*", filler + "\nlistening on 127.0.0.1:3000\n"));
    CHECK(matches("\\s+ready", filler + "\n   ready\n"));
    // Escapes take no room in the window and may straddle writes.
    ReadyPattern p = compiled("ready");
    const std::string colours = "\x1b[1;32m\x1b[0m";
    std::string coloured;
    while (coloured.size() < 4 * ReadyPattern::kWindow) coloured += colours;
    CHECK_FALSE(p.feed(coloured.data(), coloured.size() - 3));
    CHECK_FALSE(p.feed(coloured.data() + coloured.size() - 3, 3));
    CHECK(p.feed("ready\n", 6));
}

TEST_CASE("a dribbled prompt is seen whole, and a stalled one at the next settle()",
          "[serve][ready]") {
    ReadyPattern p = compiled("server started");
    CHECK(dribble(p, " server started!"));  // 16 bytes, no newline: looked at when the 16th came
    ReadyPattern q = compiled("ready in \\d+ ms");
    // Looked at after 1, 2, 4, 8 and 16 bytes: "ready in 300 ms" (15) stops
    // between looks, so feed() alone does not see it.
    CHECK_FALSE(dribble(q, "ready in 300 ms"));
    CHECK(q.settle());
    CHECK(q.matched());
    // An unfinished line is judged as it stands: its end counts as the
    // line's end until more comes.
    ReadyPattern r = compiled("ready");
    CHECK(r.feed("ready", 5));
}

TEST_CASE("a ready pattern's word bounds", "[serve][ready]") {
    CHECK(matches("ready", "ready"));
    CHECK(matches("ready", "(ready)\n"));
    CHECK_FALSE(matches("ready", "ready_\n"));
    CHECK(matches("ready", "ready-set\n"));
    CHECK(matches(":3000", "localhost:3000\n"));  // starts with a non-word character
    CHECK(matches("port:", "port:3000\n"));       // ends with one
    CHECK_FALSE(matches(":300", "localhost:3000\n"));
    // Word characters are ASCII: a letter outside it bounds a word.
    CHECK(matches("ready", "\xc3\xa9ready\n"));
    CHECK(matches("\xc3\xa9", "caf\xc3\xa9\n"));
    CHECK(matches("^caf.$", "caf\xc3\xa9\n"));  // . is one code point
    // The pattern's own anchors and flags keep their meaning inside the guards.
    CHECK(matches("^ready$", "ready\n"));
    CHECK_FALSE(matches("^ready", " ready\n"));
    CHECK(matches("(?i)READY", "Ready\n"));
    CHECK(matches("ready|listening", "now listening\n"));
    CHECK(matches("\\Qa.b", "a.b\n"));  // a \Q left open quotes to the end
    CHECK_FALSE(matches("\\Qa.b", "axb\n"));
}

TEST_CASE("a ready pattern RE2 cannot run, or that any line matches, is refused by name",
          "[serve][ready]") {
    auto refused = [](const std::string& pattern, const std::string& why) {
        auto p = ReadyPattern::compile(pattern);
        INFO(pattern);
        REQUIRE_FALSE(p.ok());
        INFO(p.error().text());
        CHECK(p.error().text().find("--ready-pattern: \"" + pattern + "\"") == 0);
        CHECK(p.error().text().find(why) != std::string::npos);
    };
    refused("(unclosed", "missing )");
    refused("a)(b", "unexpected )");  // not smuggled through the guards
    refused("(a)\\1", "no backreferences");
    refused("ready(?=!)", "no lookaround");
    refused("(?<!un)ready", "no lookaround");
    refused("a{1001}", "up to 1000");
    refused("\\pL{1000}", "MiB");
    auto bytes = ReadyPattern::compile("\xff\x1b");
    REQUIRE_FALSE(bytes.ok());
    CHECK(bytes.error().text().find("--ready-pattern: \"\\xff\\x1b\" is not") == 0);
    CHECK(bytes.error().text().find("UTF-8") != std::string::npos);
    refused(".*", "matches the empty string");
    refused("(ready)?", "matches the empty string");
    refused("ready|", "matches the empty string");
    refused("\\b", "matches the empty string");
    refused("$", "matches the empty string");
    auto empty = ReadyPattern::compile("");
    REQUIRE_FALSE(empty.ok());
    CHECK(empty.error().text().find("empty") != std::string::npos);
    // Ones that need a character are fine.
    CHECK(ReadyPattern::compile(".+").ok());
    CHECK(ReadyPattern::compile("\\bx*y").ok());
}
