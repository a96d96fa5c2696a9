#include "namespaces/call_note_in_child.h"

namespace stockade::ns {

namespace {

CallNote the_note;
bool noted = false;

}  // namespace

void CallNote::append(const char* s) noexcept {
    for (; s != nullptr && *s != '\0' && len_ + 1 < kCallNoteSize; ++s) text_[len_++] = *s;
    text_[len_] = '\0';
}

void CallNote::separate() noexcept {
    if (!first_) append(", ");
    first_ = false;
}

CallNote& CallNote::path(const char* p) noexcept {
    separate();
    append("\"");
    append(p);
    append("\"");
    return *this;
}

CallNote& CallNote::to(const char* p) noexcept {
    append(" -> \"");
    append(p);
    append("\"");
    return *this;
}

CallNote& CallNote::arg(const char* text) noexcept {
    separate();
    append(text);
    return *this;
}

CallNote& CallNote::number(long value) noexcept {
    char digits[24];
    int n = 0;
    const bool negative = value < 0;
    unsigned long v =
        negative ? 0UL - static_cast<unsigned long>(value) : static_cast<unsigned long>(value);
    do {
        digits[n++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v != 0);
    char text[26];
    int at = 0;
    if (negative) text[at++] = '-';
    while (n > 0) text[at++] = digits[--n];
    text[at] = '\0';
    return arg(text);
}

int CallNote::done(int err) noexcept {
    append(")");
    return err;
}

CallNote& noteCallInChild(const char* name) noexcept {
    the_note.len_ = 0;
    the_note.first_ = true;
    the_note.text_[0] = '\0';
    the_note.append(name);
    the_note.append("(");
    noted = true;
    return the_note;
}

const char* notedCallInChild() noexcept {
    return noted ? the_note.text() : "";
}

void clearCallNoteInChild() noexcept {
    noted = false;
}

}  // namespace stockade::ns
