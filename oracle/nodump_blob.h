// The object the oracle preloads into the held command to make it
// non-dumpable (oracle/nodump_preload.c), embedded at build time so that
// stockade needs no installed file for it.
#pragma once

#include <string_view>

namespace stockade {

std::string_view nodumpPreloadObject();

}  // namespace stockade
