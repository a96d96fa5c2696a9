# Writes OUT: contrib/apparmor/stockade.in (IN) with the installed binary's
# path (BIN) in its attachment. Run at install time, when the prefix is
# known (`cmake --install --prefix`, CPack's /usr), and by the profile's
# syntax test.
if(NOT BIN MATCHES "^/[^ \t\n\"{}]*$")
  message(FATAL_ERROR "the AppArmor profile needs an absolute binary path without spaces, quotes or braces, not '${BIN}'")
endif()
file(READ "${IN}" content)
string(REPLACE "@STOCKADE_BIN@" "${BIN}" content "${content}")
file(WRITE "${OUT}" "${content}")
