#include <catch2/catch.hpp>

#include "runtime/policy/environment.h"

using namespace stockade;

TEST_CASE("every secret shape of SPEC §5 is recognized, name by name", "[environment]") {
    for (const char* name : {"GITHUB_TOKEN",       "MY_TOKEN_X",
                             "CLIENT_SECRET",      "DB_PASSWORD",
                             "FTP_PASSWD",         "AZURE_CREDENTIALS",
                             "PRIVATE_THING",      "STRIPE_API_KEY",
                             "SERVICE_APIKEY",     "S3_ACCESS_KEY_ID",
                             "BASIC_AUTH",         "AUTHORIZATION",
                             "COOKIE_JAR",         "SESSION_ID",
                             "SIGNING_KEY",        "SSH_AUTH_SOCK",
                             "GPG_AGENT_INFO",     "AWS_REGION",
                             "AWS_PROFILE",        "GOOGLE_APPLICATION_CREDENTIALS",
                             "ANTHROPIC_BASE_URL", "OPENAI_ORG",
                             "NPM_TOKEN",          "DOCKER_HOST",
                             "KUBECONFIG",         "github_token"})
        CHECK(isSecretShaped(name));
    for (const char* name : {"PATH", "HOME", "LANG", "TERM", "CI", "NODE_ENV", "KEYBOARD", "MONKEY",
                             "USER", "PWD", "DOCKERFILE_PATH"})
        CHECK_FALSE(isSecretShaped(name));
}

TEST_CASE("the environment is the allowlist plus --env", "[environment]") {
    EnvironmentRequest req;
    req.set = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/tmp"}, {"LANG", "C.UTF-8"}};
    req.pass = {"LANG"};
    req.pass_interactive = {"TERM"};
    std::map<std::string, std::string> caller = {
        {"LANG", "en_US.UTF-8"}, {"TERM", "xterm"}, {"GITHUB_TOKEN", "ghp_x"}, {"CI", "true"}};

    SECTION("nothing else of the caller's crosses") {
        auto env = buildEnvironment(req, caller);
        REQUIRE(env.ok());
        CHECK_THAT(*env, Catch::Matchers::UnorderedEquals(std::vector<std::string>{
                             "PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=en_US.UTF-8"}));
    }
    SECTION("TERM only when interactive") {
        req.interactive = true;
        auto env = buildEnvironment(req, caller);
        REQUIRE(env.ok());
        CHECK(std::find(env->begin(), env->end(), "TERM=xterm") != env->end());
    }
    SECTION("--env KEY copies, --env KEY=VALUE sets") {
        req.cli_env = {"CI", "FOO=bar=baz"};
        auto env = buildEnvironment(req, caller);
        REQUIRE(env.ok());
        CHECK(std::find(env->begin(), env->end(), "CI=true") != env->end());
        CHECK(std::find(env->begin(), env->end(), "FOO=bar=baz") != env->end());
    }
    SECTION("a secret-shaped copy is refused unless allowed") {
        req.cli_env = {"GITHUB_TOKEN"};
        auto refused = buildEnvironment(req, caller);
        REQUIRE_FALSE(refused.ok());
        CHECK_THAT(refused.error().describe(), Catch::Contains("--allow-secret GITHUB_TOKEN"));
        req.allow_secret = {"GITHUB_TOKEN"};
        auto allowed = buildEnvironment(req, caller);
        REQUIRE(allowed.ok());
        CHECK(std::find(allowed->begin(), allowed->end(), "GITHUB_TOKEN=ghp_x") != allowed->end());
    }
    SECTION("bad names and unset copies are errors") {
        req.cli_env = {"1BAD=x"};
        CHECK_FALSE(buildEnvironment(req, caller).ok());
        req.cli_env = {"NOT_SET_ANYWHERE"};
        CHECK_FALSE(buildEnvironment(req, caller).ok());
    }
}
