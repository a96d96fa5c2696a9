// The command line. The only file that sees Boost.Program_options.
#pragma once

namespace stockade {

int runCli(int argc, char** argv);

}  // namespace stockade
