// Text that came from the sandbox (file names, test names, output, a
// command's arguments) on its way into stockade's JSON and onto the
// operator's terminal. Two rules, one place:
//
//  - JSON: every string is valid UTF-8. Each ill-formed sequence (its
//    maximal subpart, Unicode §3.9) becomes one U+FFFD, exactly what Python's
//    bytes.decode("utf-8", "replace") gives, so nothing can make a JSON
//    writer throw and a reader's strict parser always accepts the record.
//    Characters a terminal acts on (C0, DEL, C1, bidirectional controls) are
//    written as \uXXXX escapes: the same string, inert when the JSON itself
//    is printed.
//  - Terminal: stockade's own messages show control characters as visible
//    text (\r, \x1b, \u009b...) and ill-formed bytes as \xNN, never send them,
//    so a name cannot repaint or reorder the line that carries a verdict.
//
// The command's own output echoed live by `run` and `serve` is the command
// talking to its caller and stays as it came (like `docker run`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace stockade {

// The sequence at `text[at]`: a well-formed character, or the maximal
// subpart of an ill-formed one (at least one byte). `truncated` when it is
// ill-formed only because the text ends inside it.
struct Utf8Sequence {
    size_t length = 1;
    bool valid = false;
    bool truncated = false;
    uint32_t code_point = 0;
};
Utf8Sequence utf8SequenceAt(std::string_view text, size_t at);

bool isValidUtf8(std::string_view text);
// Ill-formed sequences replaced by U+FFFD, one per maximal subpart.
std::string validUtf8(std::string_view text);

// The rule above applied to a whole document: never throws for a string's
// bytes. JSON types stay in the files that build JSON; this is for them.
std::string jsonText(const nlohmann::json& doc, int indent = -1);

enum class Newlines { Escape, Keep };
// For a terminal: control characters and bidirectional controls shown as
// escapes, ill-formed bytes as \xNN. Keep leaves \n and \t as they are (a
// log); Escape (one-line messages) shows them too.
std::string escapeForTerminal(std::string_view text, Newlines newlines = Newlines::Escape);

// For a stream escaped chunk by chunk: the length of the prefix that does
// not end inside a character the next chunk may complete.
size_t completeUtf8Prefix(std::string_view text);

}  // namespace stockade
