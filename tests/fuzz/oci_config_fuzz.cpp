// libFuzzer target: oci/config.h parseConfig on arbitrary bytes (an OCI
// bundle's config.json is outside input: the engine writes it from an image
// and a user's flags). It may not crash, throw past its edge or accept a
// config that breaks what the planner relies on: a program to run, absolute
// paths without "..", known mount types, at most one namespace per type.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "oci/config.h"

namespace {

[[noreturn]] void broken(const char* what, std::string_view input) {
    std::fprintf(stderr, "accepted config breaks an invariant: %s\n--- input ---\n%.*s\n", what,
                 static_cast<int>(input.size()), input.data());
    std::abort();
}

bool absoluteClean(const std::string& path) {
    return !path.empty() && path[0] == '/' && path.find("/../") == std::string::npos &&
           !path.ends_with("/..");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    auto config = stockade::oci::parseConfig(input);
    if (!config) return 0;
    if (config->args.empty() || config->args[0].empty()) broken("no program", input);
    if (!absoluteClean(config->cwd)) broken("cwd not absolute and clean", input);
    if (config->root_path.empty()) broken("empty root.path", input);
    for (const auto& m : config->mounts) {
        if (!absoluteClean(m.destination)) broken("mount destination", input);
        static const std::set<std::string> kTypes = {"bind",   "proc",   "tmpfs",
                                                     "devpts", "mqueue", "sysfs"};
        if (!kTypes.count(m.type)) broken("mount type", input);
        if (m.bind && m.source.empty()) broken("bind without a source", input);
    }
    std::set<std::string> types;
    for (const auto& n : config->namespaces)
        if (!types.insert(n.type).second) broken("namespace type twice", input);
    if (!types.count("mount") || !types.count("pid")) broken("no mount or pid namespace", input);
    return 0;
}
