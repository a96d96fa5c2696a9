#include "oracle/report_junit.h"

#include <pugixml.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace stockade::oracle {

namespace {

// The few element operations the reader needs, over pugixml's nodes.
using XMLElement = pugi::xml_node_struct;

pugi::xml_node nodeOf(const XMLElement* element) {
    return pugi::xml_node(const_cast<XMLElement*>(element));
}

const char* nameOf(const XMLElement* element) {
    return nodeOf(element).name();
}

const char* attrOf(const XMLElement* element, const char* name) {
    pugi::xml_attribute attr = nodeOf(element).attribute(name);
    return attr ? attr.value() : nullptr;
}

const XMLElement* elementFrom(pugi::xml_node node, const char* name) {
    for (; node; node = node.next_sibling())
        if (node.type() == pugi::node_element && (!name || std::strcmp(node.name(), name) == 0))
            return node.internal_object();
    return nullptr;
}

const XMLElement* firstElementOf(const XMLElement* element, const char* name = nullptr) {
    return elementFrom(nodeOf(element).first_child(), name);
}

const XMLElement* nextElementOf(const XMLElement* element, const char* name = nullptr) {
    return elementFrom(nodeOf(element).next_sibling(), name);
}

// Line numbers for messages: pugixml keeps each node's offset in the source,
// and the source lives as long as one parseJunit call. The newlines are
// found once: counting them afresh for every case made a report of 100,000
// cases take minutes.
struct SourceText {
    explicit SourceText(std::string_view text) {
        for (size_t at = text.find('\n'); at != std::string_view::npos;
             at = text.find('\n', at + 1))
            newlines.push_back(at);
    }
    std::vector<size_t> newlines;
};
thread_local const SourceText* current_source = nullptr;

int lineAt(std::ptrdiff_t offset) {
    if (!current_source || offset < 0) return 0;
    const std::vector<size_t>& newlines = current_source->newlines;
    auto before = std::lower_bound(newlines.begin(), newlines.end(), static_cast<size_t>(offset));
    return 1 + static_cast<int>(before - newlines.begin());
}

int lineOf(const XMLElement* element) {
    return lineAt(nodeOf(element).offset_debug());
}

enum class Dialect { Generic, Pytest, Node, Catch2, GoogleTest };

const char* dialectName(Dialect dialect) {
    switch (dialect) {
        case Dialect::Pytest:
            return "pytest";
        case Dialect::Node:
            return "node";
        case Dialect::Catch2:
            return "catch2";
        case Dialect::GoogleTest:
            return "googletest";
        case Dialect::Generic:
            break;
    }
    return "junit";
}

// What a subtree holds, counted both ways producers count.
struct Tally {
    uint64_t cases = 0;
    uint64_t cases_failed = 0, failure_elements = 0;
    uint64_t cases_errored = 0, error_elements = 0;
    uint64_t cases_skipped = 0;
    uint64_t cases_not_run = 0;

    void add(const Tally& other) {
        cases += other.cases;
        cases_failed += other.cases_failed;
        failure_elements += other.failure_elements;
        cases_errored += other.cases_errored;
        error_elements += other.error_elements;
        cases_skipped += other.cases_skipped;
        cases_not_run += other.cases_not_run;
    }
};

bool named(const XMLElement* element, const char* name) {
    return std::strcmp(nameOf(element), name) == 0;
}

std::string attribute(const XMLElement* element, const char* name) {
    const char* value = attrOf(element, name);
    return value ? value : "";
}

// All the text directly inside an element (text and CDATA children).
std::string textOf(const XMLElement* element) {
    std::string text;
    for (pugi::xml_node child = nodeOf(element).first_child(); child; child = child.next_sibling())
        if (child.type() == pugi::node_pcdata || child.type() == pugi::node_cdata)
            text += child.value();
    return text;
}

std::string trim(std::string text) {
    size_t begin = text.find_first_not_of(" \t\r\n");
    if (begin == std::string::npos) return "";
    size_t end = text.find_last_not_of(" \t\r\n");
    return text.substr(begin, end - begin + 1);
}

std::string firstLine(const std::string& text) {
    std::string trimmed = trim(text);
    return trimmed.substr(0, trimmed.find('\n'));
}

std::string describeElement(const XMLElement* element) {
    std::string text = "<" + std::string(nameOf(element));
    if (const char* name = attrOf(element, "name")) text += " name=\"" + std::string(name) + "\"";
    return text + "> at line " + std::to_string(lineOf(element));
}

Error badAttribute(const XMLElement* element, const char* name, const char* what) {
    return Error::message("line " + std::to_string(lineOf(element)) + ": <" + nameOf(element) +
                          "> " + name + "=\"" + attribute(element, name) + "\" is not " + what);
}

Result<std::optional<uint64_t>> countAttribute(const XMLElement* element, const char* name) {
    const char* value = attrOf(element, name);
    if (value == nullptr) return std::optional<uint64_t>();
    uint64_t count = 0;
    const char* end = value + std::strlen(value);
    auto [ptr, ec] = std::from_chars(value, end, count);
    if (ec != std::errc() || ptr != end || ptr == value)
        return badAttribute(element, name, "a count");
    return std::optional<uint64_t>(count);
}

Result<double> durationOf(const XMLElement* element) {
    const char* value = attrOf(element, "time");
    if (value == nullptr || *value == '\0') return 0.0;
    // strtod would accept "inf", "nan" and hex; a duration is plain decimal.
    for (const char* c = value; *c; ++c)
        if (!std::strchr("0123456789.eE+-", *c)) return badAttribute(element, "time", "a duration");
    char* end = nullptr;
    double seconds = std::strtod(value, &end);
    if (*end != '\0' || !std::isfinite(seconds) || seconds < 0)
        return badAttribute(element, "time", "a duration");
    return seconds;
}

Dialect detectDialect(const XMLElement* root) {
    if (named(root, "testsuites") && attribute(root, "name") == "AllTests")
        return Dialect::GoogleTest;
    for (pugi::xml_node child = nodeOf(root).first_child(); child; child = child.next_sibling())
        if (child.type() == pugi::node_comment && std::strncmp(child.value(), " tests ", 7) == 0)
            return Dialect::Node;
    // Suites are the root itself or its children.
    std::vector<const XMLElement*> suites;
    if (named(root, "testsuite")) suites.push_back(root);
    for (const XMLElement* e = firstElementOf(root, "testsuite"); e;
         e = nextElementOf(e, "testsuite"))
        suites.push_back(e);
    for (const XMLElement* suite : suites) {
        // Catch2 (2 and 3) writes this placeholder hostname into every suite.
        if (attribute(suite, "hostname") == "tbd") return Dialect::Catch2;
        if (attribute(suite, "name") == "pytest") return Dialect::Pytest;
    }
    return Dialect::Generic;
}

class JunitReader {
  public:
    explicit JunitReader(Dialect dialect) : dialect_(dialect) { report_.format = "junit"; }

    // Reads a <testsuites> or <testsuite> and everything in it.
    Result<Tally> readSuite(const XMLElement* suite, const std::string& path) {
        Tally tally;
        std::string inner = path;
        if (named(suite, "testsuite")) {
            std::string name = attribute(suite, "name");
            inner = path.empty() ? name : path + " > " + name;
        }
        for (const XMLElement* child = firstElementOf(suite); child; child = nextElementOf(child)) {
            if (named(child, "testsuite")) {
                Result<Tally> sub = readSuite(child, inner);
                if (!sub.ok()) return sub.error();
                tally.add(*sub);
            } else if (named(child, "testcase")) {
                Result<Tally> one = readCase(child, inner);
                if (!one.ok()) return one.error();
                tally.add(*one);
            } else if (named(child, "testsuites")) {
                return Error::message("line " + std::to_string(lineOf(child)) +
                                      ": <testsuites> inside " + describeElement(suite));
            }
            // <properties>, <system-out>, <system-err> carry nothing judged.
        }
        Result<DeclaredCounts> declared = checkDeclared(suite, tally);
        if (!declared.ok()) return declared.error();
        declared_by_[suite] = *declared;
        return tally;
    }

    // The report's own totals: the root's, or else the sum over its suites
    // when every one of them declares the number.
    void settleDeclared(const XMLElement* root) {
        const DeclaredCounts& own = declared_by_[root];
        if (own.tests || own.failures || own.errors || own.skipped || named(root, "testsuite")) {
            report_.declared = own;
            return;
        }
        auto sum = [&](std::optional<uint64_t> DeclaredCounts::*field) {
            std::optional<uint64_t> total = 0;
            bool any = false;
            for (const XMLElement* child = firstElementOf(root); child;
                 child = nextElementOf(child)) {
                if (named(child, "testcase")) return std::optional<uint64_t>();
                if (!named(child, "testsuite")) continue;
                any = true;
                const std::optional<uint64_t>& value = declared_by_[child].*field;
                if (!value) return std::optional<uint64_t>();
                *total += *value;
            }
            return any ? total : std::optional<uint64_t>();
        };
        report_.declared.tests = sum(&DeclaredCounts::tests);
        report_.declared.failures = sum(&DeclaredCounts::failures);
        report_.declared.errors = sum(&DeclaredCounts::errors);
        report_.declared.skipped = sum(&DeclaredCounts::skipped);
    }

    TestReport take() {
        report_.dialect = dialectName(dialect_);
        return std::move(report_);
    }

  private:
    Result<Tally> readCase(const XMLElement* element, const std::string& suite) {
        const char* name = attrOf(element, "name");
        if (name == nullptr)
            return Error::message("line " + std::to_string(lineOf(element)) +
                                  ": <testcase> has no name");
        Result<double> duration = durationOf(element);
        if (!duration.ok()) return duration.error();
        TestCase test;
        test.name = name;
        test.classname = attribute(element, "classname");
        test.suite = suite;
        test.duration_s = *duration;
        test.line = lineOf(element);

        Tally tally;
        tally.cases = 1;
        std::vector<const XMLElement*> failures, errors, skips;
        for (const XMLElement* child = firstElementOf(element); child;
             child = nextElementOf(child)) {
            if (named(child, "failure")) failures.push_back(child);
            if (named(child, "error")) errors.push_back(child);
            if (named(child, "skipped")) skips.push_back(child);
        }
        tally.failure_elements = failures.size();
        tally.error_elements = errors.size();
        tally.cases_failed = failures.empty() ? 0 : 1;
        tally.cases_errored = errors.empty() ? 0 : 1;
        tally.cases_skipped = skips.empty() ? 0 : 1;
        bool not_run = attribute(element, "status") == "notrun";
        tally.cases_not_run = not_run ? 1 : 0;

        bool todo = !skips.empty() && attribute(skips.front(), "type") == "todo";
        if (!errors.empty() && !todo) {
            test.status = TestCase::Status::Errored;
            describeOutcome(errors, test);
        } else if (!failures.empty() && !todo) {
            test.status = TestCase::Status::Failed;
            describeOutcome(failures, test);
        } else if (!skips.empty()) {
            test.status = TestCase::Status::Skipped;
            describeOutcome(skips, test);
            if (todo) test.message = "TODO " + test.message;
        } else if (not_run) {
            test.status = TestCase::Status::Skipped;
            test.message = "not run (disabled)";
        }
        report_.cases.push_back(std::move(test));
        return tally;
    }

    static void describeOutcome(const std::vector<const XMLElement*>& elements, TestCase& test) {
        for (const XMLElement* element : elements) {
            std::string body = trim(textOf(element));
            std::string message = attrOf(element, "message")
                                      ? firstLine(attribute(element, "message"))
                                      : firstLine(body);
            if (!message.empty()) test.message += (test.message.empty() ? "" : "\n") + message;
            if (!body.empty()) test.details += (test.details.empty() ? "" : "\n\n") + body;
        }
    }

    Result<DeclaredCounts> checkDeclared(const XMLElement* suite, const Tally& tally) {
        DeclaredCounts declared;
        struct Quantity {
            const char* attribute;
            std::optional<uint64_t> DeclaredCounts::*field;
            uint64_t counted;
        };
        bool per_element = dialect_ == Dialect::Catch2;
        const Quantity quantities[] = {
            {"tests", &DeclaredCounts::tests, tally.cases},
            {"failures", &DeclaredCounts::failures,
             per_element ? tally.failure_elements : tally.cases_failed},
            {"errors", &DeclaredCounts::errors,
             per_element ? tally.error_elements : tally.cases_errored},
            {"skipped", &DeclaredCounts::skipped, tally.cases_skipped},
            {"disabled", nullptr, tally.cases_not_run},
        };
        for (const Quantity& quantity : quantities) {
            // Catch2's `tests` is its assertion count: nothing to check it by.
            if (per_element && quantity.field == &DeclaredCounts::tests) continue;
            Result<std::optional<uint64_t>> value = countAttribute(suite, quantity.attribute);
            if (!value.ok()) return value.error();
            if (!value->has_value()) continue;
            if (quantity.field) declared.*quantity.field = **value;
            report_.count_checks.push_back(
                CountCheck{describeElement(suite), quantity.attribute, **value, quantity.counted});
        }
        return declared;
    }

    Dialect dialect_;
    TestReport report_;
    std::map<const XMLElement*, DeclaredCounts> declared_by_;
};

// The deepest element nesting, walked without recursion: the reader below
// recurses into nested suites, so a hostile report's depth is bounded first.
size_t elementDepth(pugi::xml_node root) {
    size_t deepest = 0;
    std::vector<std::pair<pugi::xml_node, size_t>> stack = {{root, 1}};
    while (!stack.empty()) {
        auto [node, depth] = stack.back();
        stack.pop_back();
        deepest = std::max(deepest, depth);
        for (pugi::xml_node child = node.first_child(); child; child = child.next_sibling())
            if (child.type() == pugi::node_element) stack.push_back({child, depth + 1});
    }
    return deepest;
}

constexpr size_t kMaxDepth = 256;

}  // namespace

Result<TestReport> parseJunit(std::string_view xml) {
    // pugixml reads no DTD, so entities beyond XML's five are never expanded
    // and a hostile report costs at most its own size; its nesting is bounded
    // below before the recursive reader sees it.
    pugi::xml_document doc;
    pugi::xml_parse_result parsed =
        doc.load_buffer(xml.data(), xml.size(),
                        pugi::parse_default | pugi::parse_comments | pugi::parse_ws_pcdata_single,
                        pugi::encoding_utf8);
    SourceText source(xml);
    current_source = &source;
    struct Reset {
        ~Reset() { current_source = nullptr; }
    } reset;
    if (!parsed)
        return Error::message("JUnit report: line " + std::to_string(lineAt(parsed.offset)) +
                              ": not well-formed XML (" + parsed.description() + ")");
    pugi::xml_node root_node = doc.document_element();
    if (!root_node) return Error::message("JUnit report: no root element");
    if (elementDepth(root_node) > kMaxDepth)
        return Error::message("JUnit report: elements nest deeper than " +
                              std::to_string(kMaxDepth));
    const XMLElement* root = root_node.internal_object();
    if (!named(root, "testsuites") && !named(root, "testsuite"))
        return Error::message("JUnit report: line " + std::to_string(lineOf(root)) +
                              ": the root element is <" + nameOf(root) +
                              ">, not <testsuites> or <testsuite>");
    JunitReader reader(detectDialect(root));
    Result<Tally> tally = reader.readSuite(root, "");
    if (!tally.ok()) return tally.error().withContext("JUnit report");
    reader.settleDeclared(root);
    return reader.take();
}

}  // namespace stockade::oracle
