#include "runtime/policy/environment.h"

#include <algorithm>
#include <cctype>

extern char** environ;

namespace stockade {

namespace {

// Substrings and exact names from SPEC §5; compared on the upper-cased name so
// `github_token` is caught as well as `GITHUB_TOKEN`.
constexpr std::string_view kSecretSubstrings[] = {"TOKEN",      "SECRET",  "PASSWORD", "PASSWD",
                                                  "CREDENTIAL", "PRIVATE", "API_KEY",  "APIKEY",
                                                  "ACCESS_KEY", "AUTH",    "COOKIE",   "SESSION"};
constexpr std::string_view kSecretNames[] = {
    "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "GOOGLE_APPLICATION_CREDENTIALS",
    "NPM_TOKEN",     "GITHUB_TOKEN",   "KUBECONFIG"};
constexpr std::string_view kSecretPrefixes[] = {"AWS_", "ANTHROPIC_", "OPENAI_", "DOCKER_"};
constexpr std::string_view kSecretSuffixes[] = {"_KEY"};

bool validName(std::string_view name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
}

void setVar(std::vector<std::string>& env, const std::string& key, const std::string& value) {
    std::string prefix = key + "=";
    auto it = std::find_if(env.begin(), env.end(),
                           [&](const std::string& e) { return e.starts_with(prefix); });
    if (it != env.end())
        *it = prefix + value;
    else
        env.push_back(prefix + value);
}

}  // namespace

bool isSecretShaped(std::string_view name) {
    std::string upper(name);
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    for (auto s : kSecretSubstrings)
        if (upper.find(s) != std::string::npos) return true;
    for (auto s : kSecretNames)
        if (upper == s) return true;
    for (auto s : kSecretPrefixes)
        if (upper.starts_with(s)) return true;
    for (auto s : kSecretSuffixes)
        if (upper.ends_with(s)) return true;
    return false;
}

SecretShapes secretShapes() {
    return {kSecretSubstrings, kSecretNames, kSecretPrefixes, kSecretSuffixes};
}

Result<std::vector<std::string>> buildEnvironment(
    const EnvironmentRequest& request, const std::map<std::string, std::string>& caller) {
    std::vector<std::string> env;
    for (const auto& [key, value] : request.set) setVar(env, key, value);
    auto copy = [&](const std::string& key) {
        if (auto it = caller.find(key); it != caller.end()) setVar(env, key, it->second);
    };
    // The profile's own pass list is trusted (it names LANG, TERM), so it does
    // not go through the secret check; --env KEY does.
    for (const auto& key : request.pass) copy(key);
    if (request.interactive)
        for (const auto& key : request.pass_interactive) copy(key);
    auto allowed = [&](const std::string& key) {
        return std::find(request.allow_secret.begin(), request.allow_secret.end(), key) !=
               request.allow_secret.end();
    };
    for (const auto& item : request.cli_env) {
        auto eq = item.find('=');
        std::string key = item.substr(0, eq);
        if (!validName(key))
            return Error::message("--env " + item + ": \"" + key +
                                  "\" is not a valid environment variable name");
        if (eq != std::string::npos) {
            setVar(env, key, item.substr(eq + 1));
            continue;
        }
        if (isSecretShaped(key) && !allowed(key))
            return Error::message("--env " + key +
                                  ": refusing to copy a secret-shaped variable "
                                  "into the sandbox (pass --allow-secret " +
                                  key + " if it must go in)");
        auto it = caller.find(key);
        if (it == caller.end())
            return Error::message("--env " + key + ": not set in the caller's environment");
        setVar(env, key, it->second);
    }
    return env;
}

std::map<std::string, std::string> callerEnvironment() {
    std::map<std::string, std::string> out;
    for (char** e = environ; e && *e; ++e) {
        std::string entry(*e);
        auto eq = entry.find('=');
        if (eq == std::string::npos) continue;
        out.emplace(entry.substr(0, eq), entry.substr(eq + 1));
    }
    return out;
}

}  // namespace stockade
