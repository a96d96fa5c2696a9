#include "oci/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "base/small_file.h"

namespace stockade::oci {

namespace {

Status checkProfileName(const std::string& value, const std::string& where) {
    if (value == kProfileDefault) return okStatus();
    return Error::message(where + ": \"" + value + "\" is not a stockade profile (only \"" +
                          kProfileDefault + "\")");
}

}  // namespace

Result<std::string> runtimeDefaultProfile(const std::string& flag) {
    if (!flag.empty()) {
        if (flag == "none") return std::string();
        if (auto s = checkProfileName(flag, "--default-profile"); !s) return s.error();
        return flag;
    }
    const char* env = getenv(kRuntimeConfigEnv);
    const std::string path = env && *env ? env : kRuntimeConfigPath;
    auto file = readSmallFile(AT_FDCWD, path.c_str(), path, 64 << 10);
    if (!file) {
        if (file.error().errnum() == ENOENT) return std::string();
        return file.error();
    }
    const struct stat& st = file->st;
    if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 022))
        return Error::message(path +
                              ": must be owned by root or the caller and writable by no one else");
    auto doc = nlohmann::json::parse(file->content, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) return Error::message(path + ": not a JSON object");
    if (!doc.contains("defaultProfile")) return std::string();
    if (!doc["defaultProfile"].is_string())
        return Error::message(path + ": defaultProfile: not a string");
    const std::string value = doc["defaultProfile"].get<std::string>();
    if (value == "none") return std::string();
    if (auto s = checkProfileName(value, path + ": defaultProfile"); !s) return s.error();
    return value;
}

Result<std::string> containerProfile(const Config& config, const std::string& runtime_default) {
    std::string profile = runtime_default;
    auto asked = config.annotations.find(kProfileAnnotation);
    if (asked != config.annotations.end()) {
        if (auto s = checkProfileName(
                asked->second, std::string("config.json: annotations.") + kProfileAnnotation);
            !s)
            return s.error();
        profile = asked->second;
    }
    if (profile.empty()) return profile;
    const Config::CapabilityMasks& c = config.capabilities;
    const uint64_t any = c.bounding | c.effective | c.inheritable | c.permitted | c.ambient;
    if (any) {
        std::string names;
        const std::vector<std::string> known = capabilityNames();
        for (size_t n = 0; n < 64; ++n)
            if (any & (uint64_t{1} << n))
                names += (names.empty() ? "" : ", ") +
                         (n < known.size() ? known[n] : "capability " + std::to_string(n));
        return Error::message(
            "config.json: process.capabilities: the stockade profile (" +
            std::string(asked != config.annotations.end() ? "annotation " : "runtime default ") +
            kProfileAnnotation + "=" + profile + ") gives no capabilities, and the spec asks for " +
            names + "; drop them (podman --cap-drop=all) or run without the profile");
    }
    return profile;
}

}  // namespace stockade::oci
