# Writes OUT: a C++ source defining FUNCTION() in namespace stockade, which
# returns the bytes of the file IN (a built object) as a std::string_view.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" length)
math(EXPR bytes "${length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," body "${hex}")
set(text "// Generated from ${IN} by cmake/embed_blob.cmake.\n#include <string_view>\n\nnamespace stockade {\n\nnamespace {\nconstexpr char kBytes[] = {${body}};\n}  // namespace\n\nstd::string_view ${FUNCTION}() { return {kBytes, ${bytes}}; }\n\n}  // namespace stockade\n")
file(WRITE ${OUT}.tmp "${text}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
