// git's ignore rules: wildmatch against cases of git's own t3070, and
// pattern lists against what they mean in gitignore(5). The whole, with
// .gitignore files at several depths, is checked against the real `git add
// -A` in oracle_git_objects_test.cpp.
#include <catch2/catch.hpp>

#include "oracle/git_ignore.h"

using namespace stockade;
using namespace stockade::oracle;
using Match = IgnoreList::Match;

TEST_CASE("wildmatch agrees with git's own cases", "[oracle][git]") {
    // From git's t/t3070-wildmatch.sh, with WM_PATHNAME ("pathmatch" column).
    struct Case {
        const char* text;
        const char* pattern;
        bool pathname;
        bool match;
    };
    const Case cases[] = {
        {"foo", "foo", true, true},
        {"foo", "bar", true, false},
        {"foo", "???", true, true},
        {"foo", "??", true, false},
        {"foo", "*", true, true},
        {"foo", "f*", true, true},
        {"foo", "*f", true, false},
        {"foo", "*foo*", true, true},
        {"foobar", "*ob*a*r*", true, true},
        {"aaaaaaabababab", "*ab", true, true},
        {"foo*", "foo\\*", true, true},
        {"foobar", "foo\\*bar", true, false},
        {"f\\oo", "f\\\\oo", true, true},
        {"ball", "*[al]?", true, true},
        {"ten", "[ten]", true, false},
        {"ten", "**[!te]", true, true},
        {"ten", "**[!ten]", true, false},
        {"ten", "t[a-g]n", true, true},
        {"ten", "t[!a-g]n", true, false},
        {"ton", "t[!a-g]n", true, true},
        {"ton", "t[^a-g]n", true, true},
        {"a]b", "a[]]b", true, true},
        {"a-b", "a[]-]b", true, true},
        {"a]b", "a[]-]b", true, true},
        {"aab", "a[]a-]b", true, true},
        {"]", "]", true, true},
        {"foo/baz/bar", "foo*bar", true, false},
        {"foo/baz/bar", "foo**bar", true, false},
        {"foo/baz/bar", "foo*bar", false, true},
        {"foobazbar", "foo**bar", true, true},
        {"foo/baz/bar", "foo/**/bar", true, true},
        {"foo/baz/bar", "foo/**/**/bar", true, true},
        {"foo/b/a/z/bar", "foo/**/bar", true, true},
        {"foo/bar", "foo/**/bar", true, true},
        {"foo/bar", "foo/**/**/bar", true, true},
        {"foo/bar", "foo?bar", true, false},
        {"foo/bar", "foo[/]bar", true, false},
        {"foo/bar", "f[^eiu][^eiu][^eiu][^eiu][^eiu]r", true, false},
        {"foo-bar", "f[^eiu][^eiu][^eiu][^eiu][^eiu]r", true, true},
        {"foo", "**/foo", true, true},
        {"XXX/foo", "**/foo", true, true},
        {"bar/baz/foo", "**/foo", true, true},
        {"bar/baz/foo", "*/foo", true, false},
        {"foo/bar/baz", "**/bar*", true, false},
        {"deep/foo/bar/baz", "**/bar/*", true, true},
        {"deep/foo/bar/baz/", "**/bar/*", true, false},
        {"deep/foo/bar/baz/", "**/bar/**", true, true},
        {"deep/foo/bar", "**/bar/*", true, false},
        {"deep/foo/bar/", "**/bar/**", true, true},
        {"foo/bar/baz", "**/bar**", true, false},
        {"foo/bar/baz/x", "*/bar/**", true, true},
        {"deep/foo/bar/baz/x", "*/bar/**", true, false},
        {"deep/foo/bar/baz/x", "**/bar/*/*", true, true},
        {"acrt", "a[c-c]st", true, false},
        {"acrt", "a[c-c]rt", true, true},
        {"]", "[!]-]", true, false},
        {"a", "[!]-]", true, true},
        {"", "\\", true, false},
        {"\\", "\\", true, false},
        {"XXX/\\", "*/\\", true, false},
        {"XXX/\\", "*/\\\\", true, true},
        {"foo", "foo", true, true},
        {"@foo", "@foo", true, true},
        {"foo", "@foo", true, false},
        {"[ab]", "\\[ab]", true, true},
        {"[ab]", "[[]ab]", true, true},
        {"[ab]", "[[:]ab]", true, true},
        {"[ab]", "[[::]ab]", true, false},
        {"[ab]", "[[:digit]ab]", true, true},
        {"[ab]", "[\\[:]ab]", true, true},
        {"?a?b", "\\??\\?b", true, true},
        {"abc", "\\a\\b\\c", true, true},
        {"a1B", "[[:alpha:]][[:digit:]][[:upper:]]", true, true},
        {"a", "[[:digit:][:upper:][:space:]]", true, false},
        {"A", "[[:digit:][:upper:][:space:]]", true, true},
        {"1", "[[:digit:][:upper:][:spaci:]]", true, false},
        {".", "[[:punct:]]", true, true},
        {"5", "[[:xdigit:]]", true, true},
        {"-adobe-courier-bold-o-normal--12-120-75-75-m-70-iso8859-1",
         "-*-*-*-*-*-*-12-*-*-*-m-*-*-*", true, true},
        {"-adobe-courier-bold-o-normal--12-120-75-75-X-70-iso8859-1",
         "-*-*-*-*-*-*-12-*-*-*-m-*-*-*", true, false},
        {"XXX/adobe/courier/bold/o/normal//12/120/75/75/m/70/iso8859/1",
         "XXX/*/*/*/*/*/*/12/*/*/*/m/*/*/*", true, true},
        {"abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txt", "**/*a*b*g*n*t", true, true},
        {"abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txtz", "**/*a*b*g*n*t", true, false},
        {"foo", "*/*/*", true, false},
        {"foo/bar", "*/*/*", true, false},
        {"foo/bba/arr", "*/*/*", true, true},
        {"foo/bb/aa/rr", "*/*/*", true, false},
        {"foo/bb/aa/rr", "**/**/**", true, true},
        {"abcXdefXghi", "*X*i", true, true},
        {"ab/cXd/efXg/hi", "*X*i", true, false},
        {"ab/cXd/efXg/hi", "*/*X*/*/*i", true, true},
        {"ab/cXd/efXg/hi", "**/*X*/**/*i", true, true},
        {"-", "[a-e-n]", true, true},
        {"j", "[a-e-n]", true, false},
        {"ab", "a[]b", true, false},
        {"a[]b", "a[]b", true, false},
        {"ab", "[!", true, false},
        {"-", "[--A]", true, true},
        {"5", "[--A]", true, true},
        {"aaabbb", "b*a", true, false},
        {"aabcaa", "*ba*", true, false},
        {"foo/bba/arr", "foo/*", true, false},
        {"foo/bba/arr", "foo/**", true, true},
        {"foo/bba/arr", "foo/**arr", true, false},
        {"foo/bar/baz/to", "**/t[o]", true, true},
    };
    for (const Case& c : cases) {
        INFO("text \"" << c.text << "\" pattern \"" << c.pattern << "\" pathname " << c.pathname);
        CHECK(wildmatch(c.pattern, c.text, c.pathname) == c.match);
    }
}

TEST_CASE("ignore lists: last match wins, anchors, directories only", "[oracle][git_ignore]") {
    Result<IgnoreList> list = IgnoreList::parse(
        "*.log\n!keep.log\n/root-only\nbuild/\nsub/exact\n  # not a comment\n", "");
    REQUIRE(list.ok());
    CHECK(list->match("a.log", false) == Match::Excluded);
    CHECK(list->match("deep/er/a.log", false) == Match::Excluded);
    CHECK(list->match("keep.log", false) == Match::Included);
    CHECK(list->match("root-only", false) == Match::Excluded);
    CHECK(list->match("x/root-only", false) == Match::None);
    CHECK(list->match("build", true) == Match::Excluded);
    CHECK(list->match("build", false) == Match::None);
    CHECK(list->match("x/build", true) == Match::Excluded);
    CHECK(list->match("sub/exact", false) == Match::Excluded);
    CHECK(list->match("x/sub/exact", false) == Match::None);
    CHECK(list->match("  # not a comment", false) == Match::Excluded);

    // A list from "dir/.gitignore" anchors beneath dir/.
    Result<IgnoreList> nested = IgnoreList::parse("/only-here\nany\n", "dir/");
    REQUIRE(nested.ok());
    CHECK(nested->match("dir/only-here", false) == Match::Excluded);
    CHECK(nested->match("dir/x/only-here", false) == Match::None);
    CHECK(nested->match("dir/x/any", false) == Match::Excluded);
}

TEST_CASE("ignore lists: spaces, escapes, CR, and a bound on patterns", "[oracle][git_ignore]") {
    Result<IgnoreList> list =
        IgnoreList::parse("trailing   \nkept\\ \n\\#hash\n\\!bang\ncrlf\r\n", "");
    REQUIRE(list.ok());
    CHECK(list->match("trailing", false) == Match::Excluded);
    CHECK(list->match("kept ", false) == Match::Excluded);
    CHECK(list->match("#hash", false) == Match::Excluded);
    CHECK(list->match("!bang", false) == Match::Excluded);
    CHECK(list->match("crlf", false) == Match::Excluded);
    CHECK(IgnoreList::parse("", "")->empty());
    CHECK(IgnoreList::parse("# only a comment\n\n", "")->empty());

    Result<IgnoreList> huge = IgnoreList::parse("ok\n" + std::string(5000, '*') + "\n", "");
    REQUIRE_FALSE(huge.ok());
    CHECK(huge.error().describe() == "line 2 holds a pattern of 5000 bytes, more than 4096");
}

TEST_CASE("wildmatch stays fast on patterns made to backtrack", "[oracle][git_ignore]") {
    std::string text(4000, 'a');
    std::string pattern;
    for (int i = 0; i < 200; ++i) pattern += "*a";
    pattern += "*b";
    CHECK(wildmatch(pattern, text, true) == false);
    CHECK(wildmatch(pattern, text, false) == false);
}

TEST_CASE("a match past the budget is unknown, not guessed", "[oracle][git_ignore]") {
    // Many "**/" against a deep path: exponential in git's algorithm.
    std::string pattern;
    for (int i = 0; i < 40; ++i) pattern += "**/";
    pattern += "x";
    std::string path;
    for (int i = 0; i < 60; ++i) path += "d/";
    path += "y";
    CHECK_FALSE(wildmatch(pattern, path, true).has_value());
    Result<IgnoreList> list = IgnoreList::parse(pattern + "\n", "");
    REQUIRE(list.ok());
    CHECK(list->match(path, false) == Match::TooCostly);
}
