// `stockade bench`: what each isolation layer costs (issue 7, SPEC §9).
#pragma once

#include <optional>
#include <string>

namespace stockade {

// As given on the command line, unvalidated (benchCommand checks them).
struct BenchOptions {
    std::string runs = "100";
    std::string warmup = "20";
    bool json = false;
    std::optional<std::string> compare;  // "bwrap"
};

// Returns the exit code: 0, 125 for bad options, 1 when a level failed.
int benchCommand(const BenchOptions& options);

}  // namespace stockade
