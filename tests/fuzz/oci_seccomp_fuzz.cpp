// libFuzzer target: importOciSeccomp on arbitrary bytes, then compileFilter on
// whatever it accepts. Neither may crash; an accepted policy must hold the
// invariants seccomp/policy.h promises the compiler (errno 0..4095, argument
// index 0..5), and compiling it either succeeds or is refused with an error.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "seccomp/filter.h"
#include "seccomp/oci_import.h"
#include "seccomp/policy.h"

namespace {

using namespace stockade::seccomp;

[[noreturn]] void broken(const char* what, std::string_view input) {
    std::fprintf(stderr, "imported policy breaks an invariant: %s\n--- input ---\n%.*s\n", what,
                 static_cast<int>(input.size()), input.data());
    std::abort();
}

bool errnoInRange(int err) {
    return err >= 0 && err <= 4095;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    // Fixed, so that a crash reproduces on any host: no uname(2), no host arch.
    OciImportOptions options;
    options.arch = "amd64";
    options.kernel = KernelVersion{6, 1};
    stockade::Result<SeccompPolicy> policy = importOciSeccomp(input, options);
    if (!policy) return 0;

    if (policy->default_action == Action::Errno && !errnoInRange(policy->default_errno))
        broken("default errno out of 0..4095", input);
    for (const SyscallRule& rule : policy->rules) {
        if (rule.action == Action::Errno && !errnoInRange(rule.errno_ret))
            broken("rule errno out of 0..4095", input);
        for (const ArgCondition& arg : rule.args)
            if (arg.index > 5) broken("argument index above 5", input);
    }
    stockade::Result<CompiledFilter> compiled = compileFilter(*policy);
    if (compiled && compiled->program.empty()) broken("compiled to an empty program", input);
    return 0;
}
