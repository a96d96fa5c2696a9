#include "cli/cli.h"

#include <signal.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/text_safety.h"
#include "cli/bench_command.h"
#include "cli/isolate_command.h"
#include "cli/run_command.h"
#include "oci/commands.h"
#include "oracle/oracle_run.h"
#include "runtime/policy/environment.h"
#include "runtime/supervisor/cancel_hold.h"
#include "serve/serve_command.h"

namespace stockade {

namespace po = boost::program_options;

namespace {

constexpr int kUsageError = 125;

const char* kTopHelp = R"(stockade: run untrusted commands in a sandbox, with no container engine.

Usage:
  stockade run     [OPTIONS] -- COMMAND [ARG...]   run a command once, with no network
  stockade serve   [OPTIONS] --port N [--detach] -- COMMAND [ARG...]
                                                  a dev server on the host's 127.0.0.1:N only,
                                                  with no way out
  stockade stop    NAME | --port N                stop a dev server (exit 0 if already gone)
  stockade ps      [--json]                       list your running dev servers
  stockade logs    NAME [--follow] [--raw]        a dev server's output
  stockade profile show NAME|FILE                 print a profile with defaults filled in
  stockade profile check FILE                     validate a profile
  stockade profile secret-names [--json]          the secret-shaped env names --env refuses
  stockade check   [--json] [--profile P]         what this host can enforce, and why not
  stockade bench   [--runs N] [--json] [--compare bwrap]  what each isolation layer costs
  stockade oracle  [OPTIONS] --worktree DIR --held DIR [--report junit|tap]
                   [--expect FILE] [--verdict FILE] -- COMMAND [ARG...]
                                                  a verdict the code under test cannot forge
  stockade --version

Example:
  stockade run --worktree . --result ../result.json -- make test

Run `stockade run --help` for every option.
)";

const char* kRunUsage = R"(Usage: stockade run [OPTIONS] -- COMMAND [ARG...]

Runs COMMAND in a fresh sandbox: its own user, mount, PID, network (only lo),
IPC, UTS and cgroup namespaces; no capabilities; no_new_privs; the system
directories read-only; the worktree at /repo with /repo/.git read-only.

Example:
  stockade run --worktree ~/src/app --env CI=1 --result out.json -- npm test

Options)";

int usageError(const std::string& message) {
    std::fprintf(stderr, "stockade: %s\n", escapeForTerminal(message).c_str());
    return kUsageError;
}

po::options_description runOptionsDescription(RunOptions& o, const char* usage = kRunUsage,
                                              const char* default_profile = "held-test",
                                              bool with_result = true) {
    po::options_description d(usage);
    auto text = [](std::optional<std::string>& target) {
        return po::value<std::string>()->notifier([&target](const std::string& v) { target = v; });
    };
    if (with_result)
        d.add_options()("result", text(o.result),
                        "FILE to write the result JSON to (default: none); the sandbox must not "
                        "be able to write its directory");
    d.add_options()("profile", po::value<std::string>(&o.profile)->default_value(default_profile),
                    "profile NAME (installed or built in) or FILE (contains '/' or ends in .json)")(
        "worktree", text(o.worktree), "DIR bound at /repo, writable; /repo/.git read-only")(
        "mount", po::value<std::vector<std::string>>(&o.mounts)->composing(),
        "SRC:DST[:rw] extra bind mount, read-only unless :rw (repeatable)")(
        "rootfs", text(o.rootfs), "DIR to take the system directories from instead of /")(
        "follow-symlinks", po::bool_switch(&o.follow_symlinks),
        "let --worktree, --mount, --rootfs and --held go through symlinks (resolved once, "
        "then held); refused by default")(
        "env", po::value<std::vector<std::string>>(&o.env)->composing(),
        "KEY=VALUE to set, or KEY to copy from the caller (repeatable)")(
        "allow-secret", po::value<std::vector<std::string>>(&o.allow_secret)->composing(),
        "KEY: allow --env KEY to copy a secret-shaped name (repeatable)")(
        "workdir", text(o.workdir), "DIR to start in (default /repo with a worktree, else /tmp)")(
        "user", text(o.user), "UID[:GID] inside the sandbox")(
        "map-subids", po::bool_switch(&o.map_subids),
        "rootless: also map the ids /etc/subuid and /etc/subgid grant the caller (newuidmap)")(
        "name", text(o.name), "NAME recorded in the result (serve: default dev-PORT)")(
        "stdin", po::value<std::string>(&o.stdin_mode)->default_value("null"), "null|inherit")(
        "quiet", po::bool_switch(&o.quiet),
        "do not echo the command's output (stockade's own lines still show)")(
        "memory", text(o.memory), "SIZE memory limit, e.g. 512m, 2g (default: the profile's)")(
        "pids", text(o.pids), "N process limit (default: the profile's)")(
        "cpu-time", text(o.cpu_time), "SEC of CPU time (default: the profile's)")(
        "timeout", text(o.timeout),
        "SEC of wall-clock time (default: the profile's; none for serve)")(
        "output-limit", text(o.output_limit),
        "SIZE of stdout+stderr before the sandbox is killed; serve: the log's size (default: "
        "the profile's)")("tmp-size", text(o.tmp_size),
                          "SIZE of /tmp and /var/tmp (default: the profile's)")(
        "require", po::value<std::vector<std::string>>(&o.require)->composing(),
        "LIST of guarantees that must hold, e.g. memory,pids")(
        "min-tier", text(o.min_tier),
        "full|landlock: the lowest sandbox accepted where user namespaces are refused "
        "(default: the profile's, full)")(
        "show", po::value<std::vector<std::string>>(&o.show)->composing(),
        "PATTERN of worktree names not to hide, e.g. .env.example (repeatable)")(
        "writable", po::value<std::vector<std::string>>(&o.writable)->composing(),
        "PATTERN of worktree names not to keep read-only, e.g. AGENTS.md (repeatable)")(
        "log-level", po::value<std::string>()->notifier([](const std::string& v) {
            LogLevel level;
            if (!parseLogLevel(v, level))
                throw po::error("--log-level: expected error, info or debug, got \"" + v + "\"");
            setLogLevel(level);
        }),
        "error|info|debug: debug logs each setup step with its duration (default info)")(
        "help,h", "show this help");
    return d;
}

// What a Docker user types, and what stockade has instead.
std::optional<std::string> dockerHabit(const std::string& option) {
    static const std::pair<const char*, const char*> habits[] = {
        {"--rm", "nothing to ask for: every sandbox is removed when its command ends"},
        {"-v", "use --mount SRC:DST[:rw] (read-only unless :rw), or --worktree DIR for /repo"},
        {"--volume",
         "use --mount SRC:DST[:rw] (read-only unless :rw), or --worktree DIR for /repo"},
        {"-e", "use --env KEY=VALUE, or --env KEY to copy it from your environment"},
        {"-p", "a dev server publishes one port on the host's loopback: stockade serve --port N"},
        {"--publish",
         "a dev server publishes one port on the host's loopback: stockade serve --port N"},
        {"--network",
         "run has no network at all and serve only its --port on loopback; there is "
         "no other network to choose"},
        {"--net",
         "run has no network at all and serve only its --port on loopback; there is no "
         "other network to choose"},
        {"--pids-limit", "use --pids N"},
        {"-m", "use --memory SIZE"},
        {"-w", "use --workdir DIR"},
        {"-u", "use --user UID[:GID]"},
        {"-i", "use --stdin inherit"},
        {"-t", "there is no terminal in the sandbox; use --stdin inherit for input"},
        {"-it", "there is no terminal in the sandbox; use --stdin inherit for input"},
        {"--interactive", "use --stdin inherit"},
        {"--cap-drop", "nothing to ask for: the sandbox has no capabilities at all"},
        {"--security-opt", "nothing to ask for: no_new_privs and a seccomp filter always hold"},
        {"--read-only", "nothing to ask for: the root is always read-only"},
        {"-d", "serve --detach runs a dev server on in the background; run always waits"},
        {"--detach", "only serve detaches (stockade serve --detach); run always waits"},
    };
    for (const auto& [docker, hint] : habits)
        if (option == docker) return std::string(hint);
    return std::nullopt;
}

size_t editDistance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = up;
        }
    }
    return row[b.size()];
}

// The known option nearest to a mistyped one, when it is near enough.
std::optional<std::string> nearestOption(const std::string& typed,
                                         const po::options_description& desc) {
    std::string bare = typed;
    while (bare.starts_with("-")) bare.erase(0, 1);
    bare = bare.substr(0, bare.find('='));
    std::optional<std::string> best;
    size_t best_distance = bare.size() <= 4 ? 1 : 2;
    for (const auto& option : desc.options()) {
        const std::string name = option->long_name();
        if (name.empty()) continue;
        size_t d = editDistance(bare, name);
        if (d <= best_distance) {
            best_distance = d;
            best = "--" + name;
        }
    }
    return best;
}

std::string unknownOptionText(const std::string& option, const po::options_description& desc) {
    std::string text = "unknown option " + option;
    if (auto habit = dockerHabit(option)) return text + " (from Docker? " + *habit + ")";
    if (auto near = nearestOption(option, desc)) return text + " (did you mean " + *near + "?)";
    return text + " (stockade " + "run --help lists the options)";
}

// Boost's own messages quote option names oddly; these name the flag plainly.
std::string describe(const po::error& e, const po::options_description& desc) {
    if (auto* syntax = dynamic_cast<const po::invalid_command_line_syntax*>(&e)) {
        if (syntax->kind() == po::invalid_syntax::missing_parameter)
            return syntax->get_option_name() + " needs a value";
    }
    if (auto* unknown = dynamic_cast<const po::unknown_option*>(&e))
        return unknownOptionText(unknown->get_option_name(), desc);
    if (auto* multiple = dynamic_cast<const po::multiple_occurrences*>(&e))
        return multiple->get_option_name() + " given more than once";
    return e.what();
}

// A value that looks like an option ("--result --quiet") is the next option,
// not a value: the flag before it lacks its own. Given as --result=--quiet,
// such a value is taken as meant.
std::optional<std::string> optionLookingValue(const po::parsed_options& parsed) {
    for (const po::option& opt : parsed.options) {
        if (opt.original_tokens.size() < 2 || opt.value.empty()) continue;
        const std::string& value = opt.value.front();
        if (value.size() > 1 && value[0] == '-' &&
            !std::isdigit(static_cast<unsigned char>(value[1])))
            return "--" + opt.string_key + " needs a value, and \"" + value +
                   "\" looks like an option (write --" + opt.string_key + "=" + value +
                   " if it is meant as the value)";
    }
    return std::nullopt;
}

// Without "--", the first word that is neither an option nor an option's
// value is where the command was meant to start: say that, not that its own
// flags are unknown to stockade ("run --worktree . ls -la").
std::optional<std::string> missingDashDash(const std::vector<std::string>& options,
                                           const po::options_description& desc,
                                           const std::string& command) {
    for (size_t i = 0; i < options.size(); ++i) {
        const std::string& word = options[i];
        if (!word.starts_with("-") || word == "-") {
            std::string rest;
            for (size_t j = i; j < options.size(); ++j) rest += " " + options[j];
            return "missing -- before the command: stockade " + command + " [OPTIONS] --" + rest;
        }
        if (word.find('=') != std::string::npos || word.find_first_not_of('-') == std::string::npos)
            continue;
        const po::option_description* known =
            desc.find_nothrow(word.substr(word.find_first_not_of('-')), false);
        if (!known) return std::nullopt;  // the unknown option is the fault: the parser says so
        if (known->semantic()->max_tokens() > 0) ++i;  // its value
    }
    return std::nullopt;
}

// "OPTIONS -- COMMAND...", split at the first "--".
struct SplitArgs {
    std::vector<std::string> options;
    std::vector<std::string> command;
    bool has_command = false;
};

SplitArgs splitAtDashDash(const std::vector<std::string>& args) {
    SplitArgs out;
    auto dashdash = std::find(args.begin(), args.end(), "--");
    out.options.assign(args.begin(), dashdash);
    out.has_command = dashdash != args.end();
    if (out.has_command) out.command.assign(dashdash + 1, args.end());
    return out;
}

// Parses the options before "--". Returns an exit code when that ends the
// program (help printed, or a usage error), nothing when the caller goes on.
std::optional<int> parseOrExit(const std::vector<std::string>& options,
                               const po::options_description& desc, const std::string& help,
                               const char* command = nullptr, bool has_command = true) {
    if (command && !has_command)
        if (auto missing = missingDashDash(options, desc, command)) return usageError(*missing);
    try {
        po::variables_map vm;
        auto style =
            po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
        po::parsed_options parsed =
            po::command_line_parser(options).options(desc).style(style).run();
        // An option that swallowed the next one is the first fault: its
        // stray value ("--worktree --result r.json") is only a consequence.
        if (auto value = optionLookingValue(parsed)) return usageError(*value);
        for (const auto& opt : parsed.options)
            if (opt.position_key >= 0)
                return usageError("unexpected argument \"" + opt.value.front() +
                                  "\" (the command goes after --)");
        po::store(parsed, vm);
        if (vm.count("help")) {
            std::cout << help << "\n";
            return 0;
        }
        po::notify(vm);
    } catch (const po::required_option& e) {
        return usageError(e.get_option_name() + " is required");
    } catch (const po::error& e) {
        return usageError(describe(e, desc));
    }
    return std::nullopt;
}

// Options plus at most one positional NAME (bound to "name" in `hidden`).
template <class Then>
int parseNamed(const std::vector<std::string>& args, const po::options_description& desc,
               const po::options_description& hidden, const char* command, Then then) {
    po::options_description all;
    all.add(desc).add(hidden);
    po::positional_options_description positional;
    if (hidden.find_nothrow("name", false)) positional.add("name", 1);
    try {
        po::variables_map vm;
        auto style =
            po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
        po::store(
            po::command_line_parser(args).options(all).positional(positional).style(style).run(),
            vm);
        if (vm.count("help")) {
            std::cout << desc << "\n";
            return 0;
        }
        po::notify(vm);
        return then(vm.count("name") > 0);
    } catch (const po::too_many_positional_options_error&) {
        return usageError(std::string(command) + ": too many arguments");
    } catch (const po::error& e) {
        return usageError(describe(e, desc));
    }
}

int runSubcommand(const std::vector<std::string>& args) {
    RunOptions run;
    SplitArgs split = splitAtDashDash(args);
    run.command = split.command;
    po::options_description desc = runOptionsDescription(run);
    std::ostringstream help;
    help << desc;
    if (auto code = parseOrExit(split.options, desc, help.str(), "run", split.has_command))
        return *code;
    if (!split.has_command)
        return usageError("missing -- before the command (stockade run [OPTIONS] -- COMMAND)");
    if (run.command.empty()) return usageError("missing command after --");
    return runCommand(run);
}

int oracleSubcommand(const std::vector<std::string>& args) {
    oracle::OracleOptions oracle_options;
    RunOptions& run = oracle_options.run;
    SplitArgs split = splitAtDashDash(args);
    run.command = split.command;
    po::options_description desc =
        runOptionsDescription(run, "Sandbox options (as for stockade run)", "held-test", false);
    po::options_description extra(
        "Usage: stockade oracle [OPTIONS] --worktree DIR --held DIR [--report junit|tap]\n"
        "                       [--expect FILE] [--verdict FILE] -- COMMAND [ARG...]\n\n"
        "Runs a held test (mounted read-only at /held) against the worktree in the\n"
        "held-test sandbox; the test writes its report into $STOCKADE_REPORT_DIR\n"
        "(/report). The verdict (stockade.verdict/v1) needs exit code 0, a parsable\n"
        "report with at least one executed test, no failure, agreeing counts, every\n"
        "expected test passed, and the held files, HEAD and .git unchanged.\n"
        "Exit 0 pass, 1 fail, 2 error, 124 timeout, 125 refused.\n\nOracle options");
    extra.add_options()("held", po::value<std::string>(&oracle_options.held)->required(),
                        "DIR of the held test, mounted read-only at /held")(
        "report", po::value<std::string>(&oracle_options.report_format)->default_value("junit"),
        "junit|tap: the format of the report files (*.xml, *.tap) in /report")(
        "expect", po::value<std::string>()->notifier([&](const std::string& v) {
            oracle_options.expect = v;
        }),
        "FILE listing the test names the author declared, one per line")(
        "verdict", po::value<std::string>()->notifier([&](const std::string& v) {
            oracle_options.verdict = v;
        }),
        "FILE to write the verdict to (default: stdout)");
    std::ostringstream help;
    help << extra << "\n" << desc;
    desc.add(extra);
    po::options_description not_oracle;  // taken only to be refused by name below
    not_oracle.add_options()("result", po::value<std::string>()->notifier(
                                           [&](const std::string& v) { run.result = v; }));
    desc.add(not_oracle);
    if (auto code = parseOrExit(split.options, desc, help.str(), "oracle", split.has_command))
        return *code;
    // Taken by the shared options, but not the oracle's: its one record is
    // the verdict, which holds the run's result.
    if (run.result)
        return usageError(
            "oracle: --result is not an oracle option; the verdict holds the run's result (its "
            "\"result\" field): write it with --verdict FILE");
    if (!split.has_command || run.command.empty())
        return usageError("missing -- and the test command (stockade oracle ... -- COMMAND)");
    return oracle::runOracle(oracle_options);
}

const char* kServeUsage = R"(Usage: stockade serve [OPTIONS] --port N [--ready-pattern RE]
                      [--ready-timeout SEC] [--detach]
                      [--net-backend auto|direct|userspace|veth]
                      -- COMMAND [ARG...]

Runs a dev server in the same sandbox as `run` (profile dev-server): its
network namespace holds only lo, and stockade publishes one port, on the
host's 127.0.0.1:N (and [::1]:N), carrying each connection to the sandbox's
own 127.0.0.1:N (then [::1]:N). So a server that binds localhost, 0.0.0.0
or :: works, and nothing else crosses: no other port, nothing outward.
By default (auto, as --net-backend direct) the server's listen(2) on N gets
stockade's own listener on the host's loopback in place of its socket (bound
to lo, locked so that it can never connect anywhere): no forwarder in
between. Where that listener cannot be confined (rootless, no cgroup v2,
bpf refused) the userspace forwarder serves, and the ready event and
ps --json say so ("backend", "backend_fallback"). A server that listens on
one loopback only still answers on both: the forwarder carries the other
to it ("forwarded_loopbacks" names what it carries). With
--net-backend veth (root only) the sandbox gets an eth0 on a veth pair
instead, guarded by nftables rules on both ends; the port is still published
on the host's loopback only.

Ready when a connection to the port inside succeeds and, with --ready-pattern,
the pattern has matched a word-bounded run of the output; then one JSON line
on stdout: {"event":"ready","name":...,"port":...,"pid":...,"backend":...,
"elapsed_ms":...}.
The output goes to a bounded log (stockade logs NAME), and to stderr too in
the foreground unless --quiet. Serving a NAME that runs stops it first.

Examples:
  stockade serve --worktree . --port 5173 --detach -- npm run dev
  stockade serve --port 8000 -- python3 -m http.server --bind 127.0.0.1 8000
  stockade stop dev-5173

Options)";

int serveSubcommand(const std::vector<std::string>& args) {
    ServeOptions serve;
    RunOptions& run = serve.run;
    SplitArgs split = splitAtDashDash(args);
    run.command = split.command;
    po::options_description desc = runOptionsDescription(run, kServeUsage, "dev-server");
    po::options_description extra("Serve options");
    extra.add_options()("port", po::value<std::string>(&serve.port)->required(),
                        "N: the TCP port published on the host's loopback and used inside")(
        "ready-pattern",
        po::value<std::string>()->notifier([&](const std::string& v) { serve.ready_pattern = v; }),
        "RE (RE2 syntax) that must match a word-bounded run of one line of the output")(
        "ready-timeout", po::value<std::string>(&serve.ready_timeout)->default_value("60"),
        "SEC to become ready before the server is torn down (not_ready)")(
        "detach", po::bool_switch(&serve.detach), "return once ready; the server runs on")(
        "net-backend", po::value<std::string>(&serve.net_backend)->default_value("auto"),
        "auto|direct|userspace|veth: how the port reaches the server; direct hands the server "
        "a listener of the host's loopback, and auto does where it can be confined, else "
        "userspace forwards; veth (root only) puts a veth pair and nftables rules between the "
        "host and the sandbox");
    desc.add(extra);
    std::ostringstream help;
    help << desc;
    if (auto code = parseOrExit(split.options, desc, help.str(), "serve", split.has_command))
        return *code;
    if (!split.has_command || run.command.empty())
        return usageError("missing -- and the server command (stockade serve ... -- COMMAND)");
    return serveCommand(serve);
}

// stop, ps and logs take a name or a switch or two: NAME is positional.
int stopSubcommand(const std::vector<std::string>& args) {
    std::string name;
    std::optional<std::string> port;
    po::options_description desc(
        "Usage: stockade stop NAME | --port N\n\n"
        "Stops a dev server: SIGTERM to its command, SIGKILL to whatever is left in\n"
        "the sandbox 2 s later; returns once it is gone and its port is free. Exit 0\n"
        "when it was not running.\n\n"
        "Examples:\n  stockade stop dev-5173\n  stockade stop --port 5173\n\nOptions");
    desc.add_options()("port",
                       po::value<std::string>()->notifier([&](const std::string& v) { port = v; }),
                       "N: stop the server publishing this port")("help,h", "show this help");
    po::options_description hidden;
    hidden.add_options()("name", po::value<std::string>(&name));
    return parseNamed(args, desc, hidden, "stop", [&](bool has_name) {
        if (has_name == port.has_value())
            return usageError("stop: give a NAME or --port N (one of them)");
        return stopCommand(name, port);
    });
}

int psSubcommand(const std::vector<std::string>& args) {
    bool as_json = false;
    po::options_description desc(
        "Usage: stockade ps [--json]\n\n"
        "Lists your running dev servers: name, port, supervisor pid, uptime, whether\n"
        "ready, command. Stale records of a dead supervisor are removed.\n\n"
        "Example:\n  stockade ps --json | jq -r '.servers[] | \"\\(.name) \\(.port)\"'\n\nOptions");
    desc.add_options()("json", po::bool_switch(&as_json), "print stockade.ps/v1 JSON")(
        "help,h", "show this help");
    po::options_description hidden;
    return parseNamed(args, desc, hidden, "ps", [&](bool has_name) {
        if (has_name) return usageError("ps takes no NAME");
        return psCommand(as_json);
    });
}

int logsSubcommand(const std::vector<std::string>& args) {
    std::string name;
    bool follow = false;
    bool raw = false;
    po::options_description desc(
        "Usage: stockade logs NAME [--follow] [--raw]\n\n"
        "Prints a dev server's output (stdout and stderr, the last --output-limit\n"
        "bytes or more); kept after the server stops. Control characters other\n"
        "than newline and tab are shown as escapes (\\r, \\x1b, \\xNN for a byte\n"
        "that is not UTF-8), so the log cannot drive the terminal; --raw prints\n"
        "the bytes as they came.\n\n"
        "Example:\n  stockade logs dev-5173 --follow\n\nOptions");
    desc.add_options()("follow,f", po::bool_switch(&follow),
                       "keep printing until the server stops")(
        "raw", po::bool_switch(&raw), "print the log's bytes as they are, escapes included")(
        "help,h", "show this help");
    po::options_description hidden;
    hidden.add_options()("name", po::value<std::string>(&name));
    return parseNamed(args, desc, hidden, "logs", [&](bool has_name) {
        if (!has_name) return usageError("logs: missing NAME (stockade ps lists them)");
        return logsCommand(name, follow, raw);
    });
}

int checkSubcommand(const std::vector<std::string>& args) {
    std::string profile = "held-test";
    bool json = false;
    std::vector<std::string> require;
    po::options_description desc(
        "Usage: stockade check [--json] [--profile P] [--require LIST]\n\n"
        "Says, for this host and this user, which guarantees (G1-G10) and limit\n"
        "mechanisms can be enforced, found by trying each in a throwaway child, and\n"
        "for each that cannot, the exact reason and the fix. Exit 0 when the profile\n"
        "can run as required, 1 when it cannot.\n\nOptions");
    desc.add_options()("profile", po::value<std::string>(&profile)->default_value("held-test"),
                       "profile NAME or FILE whose needs are checked")(
        "require", po::value<std::vector<std::string>>(&require)->composing(),
        "LIST of guarantees the run will --require, e.g. memory,pids: judged as run judges "
        "them")("json", po::bool_switch(&json), "print stockade.check/v1 JSON")("help,h",
                                                                                "show this help");
    try {
        po::variables_map vm;
        auto style =
            po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
        po::store(po::command_line_parser(args).options(desc).style(style).run(), vm);
        if (vm.count("help")) {
            std::cout << desc << "\n";
            return 0;
        }
        po::notify(vm);
    } catch (const po::error& e) {
        return usageError(describe(e, desc));
    }
    return checkCommand(profile, json, require);
}

int benchSubcommand(const std::vector<std::string>& args) {
    BenchOptions bench;
    po::options_description desc(
        "Usage: stockade bench [--runs N] [--warmup N] [--json] [--compare bwrap]\n\n"
        "Measures what containment costs: the wall time of one sandboxed /bin/true,\n"
        "built up one layer at a time (bare fork+exec, then each namespace, seccomp,\n"
        "capabilities, Landlock, limits), up to the real `stockade run` with the\n"
        "default profile. Each level adds to the one before; the levels take turns\n"
        "in every round, so a busy moment on the machine hits them all alike.\n"
        "Prints the median, p95, p99 and the overhead over bare fork+exec, then\n"
        "sandboxes per second one after another and with one runner per CPU.\n"
        "Numbers from a busy machine are noisy: run it when the machine is quiet.\n\n"
        "Options");
    desc.add_options()("runs", po::value<std::string>(&bench.runs)->default_value("100"),
                       "N measured runs of each level")(
        "warmup", po::value<std::string>(&bench.warmup)->default_value("20"),
        "N rounds run first and not counted")(
        "compare",
        po::value<std::string>()->notifier([&](const std::string& v) { bench.compare = v; }),
        "bwrap: also run bubblewrap with the same isolation and binds, interleaved, "
        "and print the ratio of medians")("json", po::bool_switch(&bench.json),
                                          "print stockade.bench/v1 JSON")("help,h",
                                                                          "show this help");
    std::ostringstream help;
    help << desc;
    if (auto code = parseOrExit(args, desc, help.str())) return *code;
    return benchCommand(bench);
}

// SPEC §5's list as data (stockade.secret-names/v1), so a client refuses the
// same names as --env KEY without a second hand-kept copy. A name is secret-
// shaped when, upper-cased, it contains a substring, equals a name, or starts
// or ends with one of the affixes.
int secretNamesCommand(const std::vector<std::string>& args) {
    bool json = args.size() == 2 && args[1] == "--json";
    if (args.size() > 2 || (args.size() == 2 && !json))
        return usageError("usage: stockade profile secret-names [--json]");
    auto shapes = secretShapes();
    auto list = [](std::span<const std::string_view> items) {
        return std::vector<std::string>(items.begin(), items.end());
    };
    nlohmann::ordered_json out = {{"schema", "stockade.secret-names/v1"},
                                  {"substrings", list(shapes.substrings)},
                                  {"names", list(shapes.names)},
                                  {"prefixes", list(shapes.prefixes)},
                                  {"suffixes", list(shapes.suffixes)}};
    if (json) {
        std::cout << out.dump() << "\n";
        return 0;
    }
    for (const auto& [key, value] : out.items())
        if (value.is_array())
            for (const auto& item : value)
                std::cout << key << " " << item.get<std::string>() << "\n";
    return 0;
}

int profileSubcommand(const std::vector<std::string>& args) {
    if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
        std::cout
            << "Usage: stockade profile show NAME|FILE | check FILE | secret-names [--json]\n";
        return 0;
    }
    if (!args.empty() && args[0] == "secret-names") return secretNamesCommand(args);
    if (args.size() != 2) return usageError("usage: stockade profile show NAME|FILE | check FILE");
    if (args[0] == "show") return profileShowCommand(args[1]);
    if (args[0] == "check") return profileCheckCommand(args[1]);
    return usageError("unknown profile command \"" + args[0] + "\" (expected show or check)");
}

// For the commands that supervise a sandbox (run, serve, oracle, the OCI
// runtime): a reader that goes away (`| head`, a harness that closes its
// pipe, a --result on a FIFO) must give their writes EPIPE, not kill the
// supervisor before it has torn the sandbox down and written the record.
// Set here, per command, not by the library, and not for the others: `logs
// --follow | head` must end as any filter does when its reader leaves, and
// `isolate` passes its caller's dispositions on to the command untouched.
// The sandbox's child resets every disposition before exec.
void superviseWithoutSigpipe() {
    signal(SIGPIPE, SIG_IGN);
}

}  // namespace

int runCli(int argc, char** argv) {
    // Inside a sandbox the oracle mounts this binary as /.stockade/isolate.
    if (argc >= 1 && std::string_view(argv[0]).ends_with("/isolate"))
        return isolateCommand(std::vector<std::string>(argv + 1, argv + argc));
    // Driven by a container engine (podman, containerd's shim): the
    // runc-compatible command line of oci/commands.h.
    if (oci::isOciInvocation(argc, argv)) {
        superviseWithoutSigpipe();
        return oci::ociMain(argc, argv);
    }
    if (argc < 2) {
        std::fputs(kTopHelp, stderr);
        return kUsageError;
    }
    std::string command = argv[1];
    std::vector<std::string> rest(argv + 2, argv + argc);
    if (command == "--help" || command == "-h" || command == "help") {
        std::fputs(kTopHelp, stdout);
        return 0;
    }
    if (command == "--version") {
        std::printf("stockade %s (%s)\n", STOCKADE_VERSION, STOCKADE_GIT_REVISION);
        return 0;
    }
    if (command == "run" || command == "oracle" || command == "serve") superviseWithoutSigpipe();
    if (command == "run") {
        holdCancelUntilSupervised();
        return runSubcommand(rest);
    }
    if (command == "profile") return profileSubcommand(rest);
    if (command == "check") return checkSubcommand(rest);
    if (command == "oracle") return oracleSubcommand(rest);
    if (command == "serve") return serveSubcommand(rest);
    if (command == "stop") return stopSubcommand(rest);
    if (command == "ps") return psSubcommand(rest);
    if (command == "logs") return logsSubcommand(rest);
    if (command == "bench") return benchSubcommand(rest);
    if (command == "isolate") return isolateCommand(rest);
    return usageError("unknown command \"" + command + "\" (try stockade --help)");
}

}  // namespace stockade
