#include "oracle/report_tap.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace stockade::oracle {

namespace {

struct TestLine {
    bool ok = false;
    std::optional<uint64_t> number;
    std::string description;
    bool skip = false;
    bool todo = false;
    std::string reason;  // of the directive
};

struct PlanLine {
    uint64_t count = 0;
    bool skip_all = false;
};

bool startsWith(std::string_view text, std::string_view prefix) {
    return text.substr(0, prefix.size()) == prefix;
}

bool startsWithNoCase(std::string_view text, std::string_view prefix) {
    if (text.size() < prefix.size()) return false;
    for (size_t i = 0; i < prefix.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
    return true;
}

std::string_view trimSpaces(std::string_view text) {
    size_t begin = text.find_first_not_of(" \t");
    if (begin == std::string_view::npos) return {};
    size_t end = text.find_last_not_of(" \t");
    return text.substr(begin, end - begin + 1);
}

std::optional<uint64_t> parseNumber(std::string_view& text) {
    size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits == 0) return std::nullopt;
    uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, value);
    if (ec != std::errc()) return std::nullopt;
    text.remove_prefix(digits);
    return value;
}

// "# SKIP reason" / "# TODO reason" after the first unescaped '#'.
void parseDirective(std::string_view directive, TestLine& test) {
    directive = trimSpaces(directive);
    // The directive word may be longer ("skipped", "Skipping"), as Test::More
    // and TAP::Parser accept.
    size_t word = 0;
    while (word < directive.size() && std::isalpha(static_cast<unsigned char>(directive[word])))
        ++word;
    if (startsWithNoCase(directive.substr(0, word), "skip"))
        test.skip = true;
    else if (startsWithNoCase(directive.substr(0, word), "todo"))
        test.todo = true;
    else
        return;
    test.reason = std::string(trimSpaces(directive.substr(word)));
}

std::optional<TestLine> parseTestLine(std::string_view text) {
    TestLine test;
    if (startsWith(text, "ok")) {
        test.ok = true;
        text.remove_prefix(2);
    } else if (startsWith(text, "not ok")) {
        text.remove_prefix(6);
    } else {
        return std::nullopt;
    }
    if (!text.empty() && text[0] != ' ' && text[0] != '\t' && text[0] != '#') return std::nullopt;
    text = trimSpaces(text);
    test.number = parseNumber(text);
    text = trimSpaces(text);
    if (startsWith(text, "-")) text = trimSpaces(text.substr(1));
    std::string description;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == '#' || text[i + 1] == '\\')) {
            description.push_back(text[++i]);
        } else if (text[i] == '#') {
            parseDirective(text.substr(i + 1), test);
            break;
        } else {
            description.push_back(text[i]);
        }
    }
    test.description = std::string(trimSpaces(description));
    return test;
}

std::optional<PlanLine> parsePlanLine(std::string_view text) {
    if (!startsWith(text, "1..")) return std::nullopt;
    text.remove_prefix(3);
    std::optional<uint64_t> count = parseNumber(text);
    if (!count) return std::nullopt;
    PlanLine plan;
    plan.count = *count;
    text = trimSpaces(text);
    if (!text.empty() && text[0] != '#') return std::nullopt;
    if (!text.empty() && startsWithNoCase(trimSpaces(text.substr(1)), "skip")) plan.skip_all = true;
    return plan;
}

// The few YAML scalars a diagnostic block needs, by key, at the block's own
// indentation: plain, 'single', "double" (common escapes) and block (| or >)
// scalars. Anything subtler is kept as written.
std::map<std::string, std::string> readYamlScalars(const std::vector<std::string>& lines,
                                                   size_t indent) {
    std::map<std::string, std::string> values;
    for (size_t i = 0; i < lines.size(); ++i) {
        std::string_view line = lines[i];
        if (line.size() <= indent ||
            line.substr(0, indent).find_first_not_of(' ') != std::string_view::npos ||
            line[indent] == ' ')
            continue;
        line.remove_prefix(indent);
        size_t colon = line.find(": ");
        if (colon == std::string_view::npos) {
            if (line.empty() || line.back() != ':') continue;
            colon = line.size() - 1;
        }
        std::string key(line.substr(0, colon));
        std::string_view value = trimSpaces(line.substr(colon + 1));
        std::string text;
        if (!value.empty() && (value[0] == '|' || value[0] == '>')) {
            size_t block_indent = std::string::npos;
            for (; i + 1 < lines.size(); ++i) {
                std::string_view next = lines[i + 1];
                size_t spaces = next.find_first_not_of(' ');
                if (spaces == std::string_view::npos) {
                    text += "\n";
                    continue;
                }
                if (spaces <= indent) break;
                if (block_indent == std::string::npos) block_indent = spaces;
                if (!text.empty()) text += "\n";
                text += next.substr(std::min(block_indent, spaces));
            }
            while (!text.empty() && text.back() == '\n') text.pop_back();
        } else if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') {
            value = value.substr(1, value.size() - 2);
            for (size_t j = 0; j < value.size(); ++j) {
                text.push_back(value[j]);
                if (value[j] == '\'' && j + 1 < value.size() && value[j + 1] == '\'') ++j;
            }
        } else if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
            value = value.substr(1, value.size() - 2);
            for (size_t j = 0; j < value.size(); ++j) {
                if (value[j] != '\\' || j + 1 == value.size()) {
                    text.push_back(value[j]);
                    continue;
                }
                char escaped = value[++j];
                text.push_back(escaped == 'n' ? '\n' : escaped == 't' ? '\t' : escaped);
            }
        } else {
            text = std::string(value);
        }
        values[key] = text;
    }
    return values;
}

struct Level {
    size_t indent = 0;
    std::optional<PlanLine> plan;
    int plan_line = 0;
    bool plan_after_tests = false;
    uint64_t tests = 0;
    std::vector<size_t> cases;  // every leaf case beneath, nested ones too
    bool failed = false;        // a leaf beneath failed or errored
    bool had_subtests = false;
    int first_line = 0;
};

class TapReader {
  public:
    TapReader() {
        report_.format = "tap";
        report_.dialect = "tap";
    }

    Result<TestReport> read(std::string_view text) {
        std::vector<std::string> lines;
        while (!text.empty()) {
            size_t end = text.find('\n');
            std::string line(text.substr(0, end));
            text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
            if (!line.empty() && line.back() == '\r') line.pop_back();
            lines.push_back(std::move(line));
        }
        levels_.push_back(Level{});
        for (size_t i = 0; i < lines.size() && !report_.bailed_out; ++i) {
            int number = static_cast<int>(i + 1);
            const std::string& line = lines[i];
            size_t indent = line.find_first_not_of(' ');
            if (indent == std::string::npos) continue;
            std::string_view content = std::string_view(line).substr(indent);

            if (content == "---" && last_case_indent_ && indent == *last_case_indent_ + 2) {
                size_t close = i + 1;
                std::string closing = std::string(indent, ' ') + "...";
                while (close < lines.size() && lines[close] != closing) ++close;
                if (close == lines.size())
                    return Error::message("TAP report: line " + std::to_string(number) +
                                          ": the YAML block opened here is never closed");
                std::vector<std::string> block(lines.begin() + static_cast<long>(i) + 1,
                                               lines.begin() + static_cast<long>(close));
                applyYaml(readYamlScalars(block, indent));
                i = close;
                last_case_indent_.reset();
                continue;
            }
            if (startsWith(content, "Bail out!")) {
                saw_tap_ = true;
                report_.bailed_out = true;
                std::string reason(trimSpaces(content.substr(9)));
                report_.problems.push_back("line " + std::to_string(number) + ": Bail out!" +
                                           (reason.empty() ? "" : " " + reason));
                break;
            }
            if (content[0] == '#') {
                // Diagnostics after a failed test that had no YAML block
                // (Test::More's "#   Failed test ..."), kept as its details.
                if (last_failed_case_ && !startsWith(content, "# Subtest")) {
                    std::string& details = report_.cases[*last_failed_case_].details;
                    details += (details.empty() ? "" : "\n") + std::string(content.substr(1));
                }
                continue;
            }
            if (indent == 0 && startsWith(content, "TAP version ")) {
                saw_tap_ = true;
                continue;
            }
            std::optional<TestLine> test = parseTestLine(content);
            std::optional<PlanLine> plan = test ? std::nullopt : parsePlanLine(content);
            if (!test && !plan) continue;  // not TAP: ignored, as the spec says
            saw_tap_ = true;
            last_failed_case_.reset();
            enterLevel(indent, number);
            if (plan) {
                last_case_indent_.reset();
                takePlan(*plan, number);
            } else {
                takeTest(*test, indent, number);
            }
        }
        if (!saw_tap_) return Error::message("TAP report: no plan, no test line, no Bail out!");
        int end = static_cast<int>(lines.size());
        while (levels_.size() > 1) leaveLevel(end);
        dropOrphanedChildren(end);
        finishLevel(levels_.back(), true);
        if (!levels_.back().had_subtests && levels_.back().plan)
            report_.declared.tests = levels_.back().plan->count;
        return std::move(report_);
    }

  private:
    // Lines indented deeper than the current level open a subtest level;
    // shallower ones close levels until the indentation matches.
    void enterLevel(size_t indent, int line) {
        while (indent < levels_.back().indent && levels_.size() > 1) leaveLevel(line);
        if (indent > levels_.back().indent) {
            dropOrphanedChildren(line);
            Level level;
            level.indent = indent;
            level.first_line = line;
            levels_.push_back(level);
        }
    }

    void leaveLevel(int line) {
        Level done = std::move(levels_.back());
        levels_.pop_back();
        finishLevel(done, false);
        Level& parent = levels_.back();
        parent.had_subtests = true;
        parent.cases.insert(parent.cases.end(), done.cases.begin(), done.cases.end());
        parent.failed = parent.failed || done.failed;
        dropOrphanedChildren(line);
        pending_children_ = std::move(done);
    }

    void finishLevel(const Level& level, bool top) {
        std::string where =
            top ? "" : " (subtests from line " + std::to_string(level.first_line) + ")";
        if (report_.bailed_out) return;
        if (!level.plan) {
            report_.problems.push_back(top ? "no plan"
                                           : "no plan for the subtests from line " +
                                                 std::to_string(level.first_line));
            return;
        }
        report_.count_checks.push_back(CountCheck{"plan 1.." + std::to_string(level.plan->count) +
                                                      " at line " +
                                                      std::to_string(level.plan_line) + where,
                                                  "tests", level.plan->count, level.tests});
    }

    void takePlan(const PlanLine& plan, int line) {
        Level& level = levels_.back();
        dropOrphanedChildren(line);
        if (level.plan) {
            report_.problems.push_back("line " + std::to_string(line) +
                                       ": a second plan (the first is at line " +
                                       std::to_string(level.plan_line) + ")");
            return;
        }
        level.plan = plan;
        level.plan_line = line;
        level.plan_after_tests = level.tests > 0;
    }

    void takeTest(const TestLine& test, size_t indent, int line) {
        Level& level = levels_.back();
        ++level.tests;
        std::string at = "line " + std::to_string(line) + ": ";
        if (level.plan && level.plan_after_tests)
            report_.problems.push_back(at + "a test after the plan at line " +
                                       std::to_string(level.plan_line));
        if (test.number && *test.number != level.tests)
            report_.problems.push_back(at + "test number " + std::to_string(*test.number) +
                                       " out of sequence (expected " + std::to_string(level.tests) +
                                       ")");
        last_case_indent_ = indent;
        last_case_.reset();

        bool failed = !test.ok && !test.todo && !test.skip;
        if (pending_children_) {
            // This line sums up the subtests just closed.
            Level children = std::move(*pending_children_);
            pending_children_.reset();
            for (size_t index : children.cases) {
                std::string& suite = report_.cases[index].suite;
                suite = suite.empty() ? test.description : test.description + " > " + suite;
            }
            if (test.ok && !test.todo && children.failed)
                report_.problems.push_back(at + "\"" + test.description +
                                           "\" passed although a subtest failed");
            if (!failed || children.failed) {
                parent_yaml_only_ = true;  // its YAML describes the parent, no case
                return;
            }
        }
        parent_yaml_only_ = false;
        TestCase tc;
        tc.name = test.description;
        tc.line = line;
        if (test.skip) {
            tc.status = TestCase::Status::Skipped;
            tc.message = test.reason;
        } else if (test.todo) {
            // Its author said not to count it, whichever way it went; the
            // same test reads the same through node's JUnit reporter.
            tc.status = TestCase::Status::Skipped;
            tc.message = "TODO " + test.reason;
        } else {
            tc.status = test.ok ? TestCase::Status::Passed : TestCase::Status::Failed;
        }
        report_.cases.push_back(std::move(tc));
        size_t index = report_.cases.size() - 1;
        level.cases.push_back(index);
        last_case_ = index;
        if (failed) {
            level.failed = true;
            last_failed_case_ = index;
        }
    }

    // Subtests whose block closed without a test line summing them up.
    void dropOrphanedChildren(int line) {
        if (!pending_children_) return;
        report_.problems.push_back("line " + std::to_string(line) + ": the subtests from line " +
                                   std::to_string(pending_children_->first_line) +
                                   " have no test line summing them up");
        pending_children_.reset();
    }

    void applyYaml(const std::map<std::string, std::string>& yaml) {
        if (!last_case_ || parent_yaml_only_) return;
        TestCase& test = report_.cases[*last_case_];
        if (auto it = yaml.find("duration_ms"); it != yaml.end()) {
            char* end = nullptr;
            double ms = std::strtod(it->second.c_str(), &end);
            if (end != it->second.c_str() && *end == '\0' && ms >= 0) test.duration_s = ms / 1000;
        }
        if (test.status != TestCase::Status::Failed && test.status != TestCase::Status::Errored)
            return;
        for (const char* key : {"message", "error"}) {
            auto it = yaml.find(key);
            if (it == yaml.end()) continue;
            std::string text = it->second;
            test.message = text.substr(0, text.find('\n'));
            test.details = text;
            if (auto stack = yaml.find("stack"); stack != yaml.end())
                test.details += "\n" + stack->second;
            break;
        }
    }

    TestReport report_;
    std::vector<Level> levels_;
    std::optional<Level> pending_children_;
    std::optional<size_t> last_case_indent_;
    std::optional<size_t> last_case_;
    std::optional<size_t> last_failed_case_;
    bool parent_yaml_only_ = false;
    bool saw_tap_ = false;
};

}  // namespace

Result<TestReport> parseTap(std::string_view text) {
    TapReader reader;
    return reader.read(text);
}

}  // namespace stockade::oracle
