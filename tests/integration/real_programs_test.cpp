// Issue 3, "Real programs must keep working": under the default profile
// (held-test, no --profile given), the programs a held test or a build really
// runs: a shell pipeline, coreutils, python3 with subprocess and
// multiprocessing, gcc/g++ compiling and running a program, make, node with
// `node --test`, and git's read-only commands on the worktree. Each runs as
// root and rootless, with the worktree at /repo.
//
// A tool missing from the machine is not a pass: the case FAILs when CI=true
// and warns loudly otherwise. When a program fails here, the fix belongs in
// the sandbox (a missing /etc file, a seccomp denial), not in this file.

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "harness.h"

using namespace stockade::itest;
using namespace std::chrono_literals;

namespace {

// gcc, node and a python Pool take a moment; the bound is for a hang.
constexpr std::chrono::seconds kRealProgramTimeout{120};

// The held-test profile's PATH: where the sandbox will look for a program.
const std::vector<std::string> kSandboxPath = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                               "/usr/bin",        "/sbin",          "/bin"};

bool realProgramsCiMode() {
    const char* ci = std::getenv("CI");
    return ci != nullptr && std::string_view(ci) == "true";
}

// True when every tool is installed where the sandbox's PATH finds it. A
// missing one FAILs the case when CI=true (a program that was not run has not
// been shown to work), else warns; the caller then returns.
bool realProgramsInstalled(const std::vector<std::string>& tools) {
    for (const std::string& tool : tools) {
        bool found = false;
        for (const std::string& dir : kSandboxPath)
            if (::access((dir + "/" + tool).c_str(), X_OK) == 0) found = true;
        if (found) continue;
        const std::string text = "SKIPPED, NOT TESTED: " + tool +
                                 " is not installed in the sandbox's PATH (/usr/bin, /bin, ...)";
        if (realProgramsCiMode()) FAIL(text << " (CI=true turns this skip into a failure)");
        WARN(text);
        return false;
    }
    return true;
}

// Runs `command` in the sandbox with the default profile and checks what any
// real program needs: it ran to exit 0, and the result record agrees.
Completed runRealProgram(const Sandbox& sandbox, const std::vector<std::string>& command) {
    const Completed run = sandbox.run(command, kRealProgramTimeout);
    INFO(run.describe());
    CHECK_FALSE(run.timedOut);
    CHECK(run.exitCode == 0);
    const nlohmann::json result = sandbox.result();
    INFO("result: " << result.dump(2));
    CHECK(result.value("profile", "") == "held-test");
    CHECK(result.value("status", "") == "passed");
    // A denial a program survives is still worth seeing: it names a call the
    // program tried and fell back from.
    if (result.contains("denials") && result["denials"].is_array() && !result["denials"].empty())
        WARN("seccomp denials while running " << command.front() << ": "
                                              << result["denials"].dump());
    return run;
}

// Runs a program on the host as root (the test's own identity), for set-up;
// its output goes to the test's stderr. Returns its exit status.
int runOnHost(const std::vector<std::string>& argv, const std::string& cwd) {
    std::vector<std::string> envStrings = {
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME=/nonexistent",
        "LANG=C.UTF-8",
        // The host's own git configuration must not shape the fixture.
        "GIT_CONFIG_NOSYSTEM=1",
        "GIT_CONFIG_GLOBAL=/dev/null",
        "GIT_AUTHOR_NAME=Stockade Test",
        "GIT_AUTHOR_EMAIL=test@stockade.invalid",
        "GIT_AUTHOR_DATE=2024-01-02T03:04:05Z",
        "GIT_COMMITTER_NAME=Stockade Test",
        "GIT_COMMITTER_EMAIL=test@stockade.invalid",
        "GIT_COMMITTER_DATE=2024-01-02T03:04:05Z",
    };
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<char*> env;
    for (const std::string& e : envStrings) env.push_back(const_cast<char*>(e.c_str()));
    env.push_back(nullptr);
    const pid_t child = ::fork();
    if (child < 0) return -1;
    if (child == 0) {
        if (::chdir(cwd.c_str()) < 0) ::_exit(126);
        ::dup2(STDERR_FILENO, STDOUT_FILENO);
        ::execvpe(args[0], args.data(), env.data());
        ::_exit(127);
    }
    int status = 0;
    if (::waitpid(child, &status, 0) != child) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Hands everything under `path` to the worktree's owner, as a checkout of
// that user would be.
void chownTree(const std::string& path, uid_t uid, gid_t gid) {
    REQUIRE(::lchown(path.c_str(), uid, gid) == 0);
    for (const auto& entry : std::filesystem::recursive_directory_iterator(path))
        REQUIRE(::lchown(entry.path().c_str(), uid, gid) == 0);
}

// The host's view of a file the sandbox wrote into /repo.
void checkWrittenToWorktree(const Sandbox& sandbox, const std::string& relative) {
    const std::string path = sandbox.worktree() + "/" + relative;
    struct stat st {};
    INFO("the sandbox wrote /repo/" << relative);
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    // Through the idmapped mount in root mode: on disk, the file belongs to
    // the worktree's owner, not to whatever uid the sandbox ran as.
    CHECK(st.st_uid == invokingUid(sandbox.mode()));
}

}  // namespace

TEST_CASE("real programs: a shell pipeline", "[real][shell]") {
    STOCKADE_EACH_MODE(mode);
    if (!realProgramsInstalled({"sh", "seq", "sort", "tail"})) return;
    Sandbox sandbox(mode);
    const Completed run = runRealProgram(sandbox, {"sh", "-c", "seq 1 1000 | sort -n | tail -1"});
    CHECK(run.out == "1000\n");
    // Pipes, a subshell, command substitution, a here-document, redirections
    // into /tmp and /repo, background jobs and wait.
    const Completed more =
        runRealProgram(sandbox, {"sh", "-c",
                                 "set -e\n"
                                 "n=$(seq 1 100 | awk '{s+=$1} END {print s}')\n"
                                 "(echo sub; echo shell) | tr a-z A-Z > /tmp/upper\n"
                                 "cat <<EOF > /repo/heredoc.txt\nsum=$n\nEOF\n"
                                 "sleep 0.2 & sleep 0.1 & wait\n"
                                 "cat /tmp/upper /repo/heredoc.txt\n"
                                 "echo done >&2\n"});
    CHECK(more.out == "SUB\nSHELL\nsum=5050\n");
    CHECK(more.err == "done\n");
    checkWrittenToWorktree(sandbox, "heredoc.txt");
}

TEST_CASE("real programs: coreutils and the base tools", "[real][coreutils]") {
    STOCKADE_EACH_MODE(mode);
    if (!realProgramsInstalled(
            {"sh",        "mkdir",   "cp",    "mv",      "ln",   "readlink", "cat",      "wc",
             "sha256sum", "stat",    "chmod", "touch",   "date", "sort",     "uniq",     "paste",
             "basename",  "dirname", "expr",  "mktemp",  "tar",  "gzip",     "find",     "xargs",
             "sed",       "grep",    "diff",  "timeout", "id",   "whoami",   "hostname", "nproc",
             "df",        "env",     "du",    "ls",      "head", "rm"}))
        return;
    Sandbox sandbox(mode);
    const std::string script =
        "set -eu\n"
        "cd \"$(mktemp -d)\"\n"
        "mkdir -p d/e\n"
        "printf 'hello\\n' > d/f\n"
        "cp d/f d/g && mv d/g d/e/h && ln -s f d/l\n"
        "readlink d/l\n"
        "cat d/l d/e/h | wc -l\n"
        "sha256sum d/f | cut -d' ' -f1\n"
        "chmod 600 d/f && stat -c %a d/f\n"
        "touch -d @86400 d/f && date -u -r d/f +%Y-%m-%d\n"
        "printf 'b\\na\\nb\\nc\\n' | sort | uniq | paste -sd, -\n"
        "basename /a/b/c.txt .txt && dirname /a/b/c.txt\n"
        "expr 6 \\* 7\n"
        "tar czf t.tgz d && mkdir x && tar xzf t.tgz -C x && diff -r d x/d && echo same\n"
        "gzip -c d/f | gzip -dc\n"
        "find d -type f | sort | xargs -n1 basename | paste -sd' ' -\n"
        "sed -n 's/hel/HEL/p' d/f | grep -c HEL\n"
        "timeout 5 sleep 0.1 && echo in-time\n"
        "test \"$(id -u)\" = \"$(id -u \"$(whoami)\")\" && echo user-known\n"
        "hostname\n"
        "test \"$(nproc)\" -ge 1 && echo cpus\n"
        "df -P /tmp > /dev/null && du -s d > /dev/null && echo df-du\n"
        "ls -a /repo | grep -c README\n"
        "env | grep -c '^HOME=/tmp$'\n"
        "head -c 5 d/e/h && echo\n"
        "rm -r d && test ! -e d && echo removed\n";
    const Completed run = runRealProgram(sandbox, {"sh", "-c", script});
    CHECK(run.out ==
          "f\n"
          "2\n"
          "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\n"
          "600\n"
          "1970-01-02\n"
          "a,b,c\n"
          "c\n/a/b\n"
          "42\n"
          "same\n"
          "hello\n"
          "h f\n"
          "1\n"
          "in-time\n"
          "user-known\n"
          "stockade\n"
          "cpus\n"
          "df-du\n"
          "1\n"
          "1\n"
          "hello\n"
          "removed\n");
    CHECK(run.err.empty());
}

TEST_CASE("real programs: python3 with subprocess and multiprocessing", "[real][python]") {
    STOCKADE_EACH_MODE(mode);
    if (!realProgramsInstalled({"python3"})) return;
    Sandbox sandbox(mode);
    // A file, not `python3 -c`: the spawn and forkserver start methods
    // re-import __main__ in each worker, by path.
    sandbox.scratch().writeFile("worktree/pool_check.py",
                                "import multiprocessing, os, subprocess, sys\n"
                                "\n"
                                "def square(x):\n"
                                "    return x * x\n"
                                "\n"
                                "def child_pid(_):\n"
                                "    return os.getpid()\n"
                                "\n"
                                "if __name__ == '__main__':\n"
                                "    out = subprocess.run(['sh', '-c', 'echo sub $0', 'arg'],\n"
                                "                         capture_output=True, text=True, "
                                "check=True)\n"
                                "    print(out.stdout.strip())\n"
                                "    print(subprocess.check_output([sys.executable, '-c', "
                                "'print(6*7)'], text=True).strip())\n"
                                "    for method in ('fork', 'spawn', 'forkserver'):\n"
                                "        ctx = multiprocessing.get_context(method)\n"
                                "        with ctx.Pool(3) as pool:\n"
                                "            total = sum(pool.map(square, range(100)))\n"
                                "            pids = set(pool.map(child_pid, range(30)))\n"
                                "        q = ctx.Queue()\n"
                                "        p = ctx.Process(target=q.put, args=(method,))\n"
                                "        p.start(); got = q.get(timeout=30); p.join()\n"
                                "        print(method, total, os.getpid() not in pids, got, "
                                "p.exitcode)\n");
    const Completed run = runRealProgram(sandbox, {"python3", "/repo/pool_check.py"});
    CHECK(run.out ==
          "sub arg\n"
          "42\n"
          "fork 328350 True fork 0\n"
          "spawn 328350 True spawn 0\n"
          "forkserver 328350 True forkserver 0\n");
    CHECK(run.err.empty());
}

TEST_CASE("real programs: python3's standard library where it meets the system", "[real][python]") {
    STOCKADE_EACH_MODE(mode);
    if (!realProgramsInstalled({"python3"})) return;
    Sandbox sandbox(mode);
    const Completed run = runRealProgram(
        sandbox,
        {"python3", "-c",
         "import getpass, json, locale, os, socket, sqlite3, ssl, tempfile, threading\n"
         "print(getpass.getuser() != '')\n"
         "with tempfile.NamedTemporaryFile('w', delete=False) as f: f.write('x')\n"
         "print(os.path.dirname(f.name))\n"
         "db = sqlite3.connect(os.path.join(tempfile.mkdtemp(), 'db'))\n"
         "db.execute('create table t (x)'); db.execute('insert into t values (7)')\n"
         "print(db.execute('select x * 6 from t').fetchone()[0])\n"
         "a, b = socket.socketpair(); a.sendall(b'ping'); print(b.recv(4).decode())\n"
         "t = threading.Thread(target=lambda: None); t.start(); t.join(); print('thread')\n"
         "print(ssl.create_default_context().cert_store_stats()['x509_ca'] > 0)\n"
         "print(locale.getpreferredencoding())\n"
         "print(len(os.urandom(16)), os.cpu_count() >= 1)\n"});
    CHECK(run.out ==
          "True\n"
          "/tmp\n"
          "42\n"
          "ping\n"
          "thread\n"
          "True\n"
          "UTF-8\n"
          "16 True\n");
    CHECK(run.err.empty());
}

TEST_CASE("real programs: gcc and g++ compile a program that then runs", "[real][gcc]") {
    STOCKADE_EACH_MODE(mode);
    if (!realProgramsInstalled({"gcc", "g++", "sh"})) return;
    Sandbox sandbox(mode);
    sandbox.scratch().writeFile("worktree/src/threads.c",
                                "#include <pthread.h>\n"
                                "#include <stdio.h>\n"
                                "#include <sys/wait.h>\n"
                                "#include <unistd.h>\n"
                                "static void* work(void* arg) { *(int*)arg *= 2; return 0; }\n"
                                "int main(void) {\n"
                                "    int v = 21; pthread_t t;\n"
                                "    pthread_create(&t, 0, work, &v); pthread_join(t, 0);\n"
                                "    pid_t child = fork();\n"
                                "    if (child == 0) _exit(v);\n"
                                "    int status = 0; waitpid(child, &status, 0);\n"
                                "    printf(\"c %d\\n\", WEXITSTATUS(status));\n"
                                "    return 0;\n"
                                "}\n");
    sandbox.scratch().writeFile("worktree/src/list.cpp",
                                "#include <algorithm>\n"
                                "#include <filesystem>\n"
                                "#include <iostream>\n"
                                "#include <numeric>\n"
                                "#include <thread>\n"
                                "#include <vector>\n"
                                "int main() {\n"
                                "    std::vector<int> v(10);\n"
                                "    std::iota(v.begin(), v.end(), 1);\n"
                                "    int sum = 0;\n"
                                "    std::thread([&] { sum = std::accumulate(v.begin(), "
                                "v.end(), 0); }).join();\n"
                                "    std::vector<std::string> names;\n"
                                "    for (auto& e : std::filesystem::directory_iterator(\"/repo/"
                                "src\"))\n"
                                "        names.push_back(e.path().filename().string());\n"
                                "    std::sort(names.begin(), names.end());\n"
                                "    std::cout << \"c++ \" << sum;\n"
                                "    for (auto& n : names) std::cout << ' ' << n;\n"
                                "    std::cout << '\\n';\n"
                                "}\n");
    // C into /tmp (the sandbox's tmpfs), C++ into /repo (the worktree).
    const Completed run = runRealProgram(
        sandbox, {"sh", "-c",
                  "set -e\n"
                  "gcc -O2 -Wall -Werror -pthread -o /tmp/threads /repo/src/threads.c\n"
                  "/tmp/threads\n"
                  "g++ -std=c++20 -O2 -Wall -Werror -pthread -o /repo/list /repo/src/list.cpp\n"
                  "/repo/list\n"});
    CHECK(run.out ==
          "c 42\n"
          "c++ 55 list.cpp threads.c\n");
    checkWrittenToWorktree(sandbox, "list");
}

TEST_CASE("real programs: make builds and runs a small project", "[real][make]") {
    STOCKADE_EACH_MODE(mode);
    if (!realProgramsInstalled({"make", "gcc"})) return;
    Sandbox sandbox(mode);
    sandbox.scratch().writeFile("worktree/Makefile",
                                "CFLAGS = -O2 -Wall -Werror\n"
                                "OBJS = main.o add.o\n"
                                ".PHONY: check\n"
                                "check: adder\n"
                                "\t./adder 40 2 > out.txt\n"
                                "\t@cat out.txt\n"
                                "adder: $(OBJS)\n"
                                "\t$(CC) -o $@ $(OBJS)\n"
                                "%.o: %.c add.h\n"
                                "\t$(CC) $(CFLAGS) -c -o $@ $<\n");
    sandbox.scratch().writeFile("worktree/add.h", "int add(int a, int b);\n");
    sandbox.scratch().writeFile("worktree/add.c",
                                "#include \"add.h\"\nint add(int a, int b) { return a + b; }\n");
    sandbox.scratch().writeFile("worktree/main.c",
                                "#include <stdio.h>\n#include <stdlib.h>\n#include \"add.h\"\n"
                                "int main(int c, char** v) {\n"
                                "    if (c != 3) return 2;\n"
                                "    printf(\"sum %d\\n\", add(atoi(v[1]), atoi(v[2])));\n"
                                "    return 0;\n"
                                "}\n");
    // -j2: make's jobserver (a pipe or a fifo in /tmp) and parallel children.
    const Completed run = runRealProgram(sandbox, {"make", "-s", "-j2", "-C", "/repo", "check"});
    CHECK(run.out == "sum 42\n");
    checkWrittenToWorktree(sandbox, "adder");
    checkWrittenToWorktree(sandbox, "out.txt");
    // Nothing left to do the second time: make read the timestamps it wrote.
    const Completed again =
        runRealProgram(sandbox, {"make", "-j2", "-C", "/repo", "--question", "adder"});
    CHECK(again.exitCode == 0);
}

TEST_CASE("real programs: node -e, with child processes and worker threads", "[real][node]") {
    STOCKADE_EACH_MODE(mode);
    if (!realProgramsInstalled({"node"})) return;
    Sandbox sandbox(mode);
    const Completed run = runRealProgram(
        sandbox,
        {"node", "-e",
         "const cp = require('child_process'), fs = require('fs'), os = require('os');\n"
         "const { Worker } = require('worker_threads');\n"
         "console.log([1, 2, 3].map(x => x * 2).join(','));\n"
         "console.log(cp.execSync('echo from-sh').toString().trim());\n"
         "console.log(cp.spawnSync(process.execPath, ['-p', '6*7']).stdout.toString().trim());\n"
         "const tmp = fs.mkdtempSync(os.tmpdir() + '/n-');\n"
         "fs.writeFileSync(tmp + '/f', 'data'); console.log(fs.readFileSync(tmp + '/f', "
         "'utf8'));\n"
         "console.log(require('crypto').createHash('sha256').update('x').digest('hex')"
         ".slice(0, 8));\n"
         "new Worker('require(\"worker_threads\").parentPort.postMessage(42)', { eval: true })\n"
         "  .on('message', m => {\n"
         "    console.log('worker', m);\n"
         "    fs.promises.readdir('/repo').then(e => console.log(e.includes('README')));\n"
         "  });\n"});
    CHECK(run.out ==
          "2,4,6\n"
          "from-sh\n"
          "42\n"
          "data\n"
          "2d711642\n"
          "worker 42\n"
          "true\n");
    CHECK(run.err.empty());
}

TEST_CASE("real programs: node --test runs a test file in the worktree", "[real][node]") {
    STOCKADE_EACH_MODE(mode);
    if (!realProgramsInstalled({"node"})) return;
    Sandbox sandbox(mode);
    sandbox.scratch().writeFile("worktree/math.js",
                                "exports.add = (a, b) => a + b;\n"
                                "exports.later = (v) => new Promise(r => setTimeout(() => r(v), "
                                "10));\n");
    sandbox.scratch().writeFile("worktree/test/math.test.js",
                                "const test = require('node:test');\n"
                                "const assert = require('node:assert');\n"
                                "const { add, later } = require('../math.js');\n"
                                "test('adds', () => { assert.strictEqual(add(2, 3), 5); });\n"
                                "test('waits', async () => { assert.strictEqual(await later(7), "
                                "7); });\n"
                                "test('subtests', async (t) => {\n"
                                "  await t.test('one', () => assert.ok(true));\n"
                                "  await t.test('two', () => assert.ok(true));\n"
                                "});\n");
    // No file named: node finds test/**/*.js under the working directory,
    // /repo, and runs each file in a child process.
    const Completed run = runRealProgram(sandbox, {"node", "--test"});
    CHECK_THAT(run.out, Catch::Contains("# tests 5"));
    CHECK_THAT(run.out, Catch::Contains("# pass 5"));
    CHECK_THAT(run.out, Catch::Contains("# fail 0"));
    // And a failing test fails the run, as it must for a held test.
    sandbox.scratch().writeFile("worktree/test/broken.test.js",
                                "require('node:test')('broken', () => "
                                "require('node:assert').strictEqual(1, 2));\n");
    const Completed failing = sandbox.run({"node", "--test"}, kRealProgramTimeout);
    INFO(failing.describe());
    CHECK(failing.exitCode == 1);
    CHECK_THAT(failing.out, Catch::Contains("# fail 1"));
    CHECK(sandbox.result().value("status", "") == "failed");
}

TEST_CASE("real programs: git's read-only commands on the worktree", "[real][git]") {
    STOCKADE_EACH_MODE(mode);
    if (!realProgramsInstalled({"git"})) return;
    Sandbox sandbox(mode);
    const std::string worktree = sandbox.worktree();
    // A real repository in place of the harness's minimal .git, made on the
    // host and then handed to the worktree's owner.
    std::filesystem::remove_all(worktree + "/.git");
    sandbox.scratch().writeFile("worktree/src/lib.txt", "one\ntwo\nthree\n");
    // Root's own for now: git refuses to work in a repository of another
    // owner ("dubious ownership").
    chownTree(worktree, 0, 0);
    REQUIRE(runOnHost({"git", "init", "-q", "-b", "main", "."}, worktree) == 0);
    REQUIRE(runOnHost({"git", "add", "-A"}, worktree) == 0);
    REQUIRE(runOnHost({"git", "commit", "-q", "-m", "first commit"}, worktree) == 0);
    sandbox.scratch().writeFile("worktree/src/lib.txt", "one\n2\nthree\n");
    REQUIRE(runOnHost({"git", "commit", "-q", "-am", "second commit"}, worktree) == 0);
    // Uncommitted work: a change and a new file.
    sandbox.scratch().writeFile("worktree/README", "changed\n");
    sandbox.scratch().writeFile("worktree/new.txt", "new\n");
    chownTree(worktree, invokingUid(mode), invokingGid(mode));
    const std::string headBefore = readFileOrEmpty(worktree + "/.git/HEAD");

    const Completed run =
        runRealProgram(sandbox, {"sh", "-c",
                                 "set -e\n"
                                 "git log --format='%s|%an|%ad' --date=short\n"
                                 "git rev-list --count HEAD\n"
                                 "git status --porcelain=v1\n"
                                 "git diff --stat\n"
                                 "git diff HEAD~1 -- src/lib.txt | grep '^[-+][^-+]'\n"
                                 "git show --format=%s --no-patch HEAD\n"
                                 "git ls-files\n"
                                 "git blame --porcelain src/lib.txt | grep -c '^summary'\n"
                                 "git cat-file -p HEAD:src/lib.txt | wc -l\n"
                                 "git rev-parse --abbrev-ref HEAD\n"});
    CHECK(run.out ==
          "second commit|Stockade Test|2024-01-02\n"
          "first commit|Stockade Test|2024-01-02\n"
          "2\n"
          " M README\n"
          "?? new.txt\n"
          " README | 2 +-\n"
          " 1 file changed, 1 insertion(+), 1 deletion(-)\n"
          "-two\n"
          "+2\n"
          "second commit\n"
          "README\n"
          "src/lib.txt\n"
          "2\n"
          "3\n"
          "main\n");
    // No "dubious ownership", no failed index lock: git had nothing to say.
    CHECK(run.err.empty());
    CHECK(readFileOrEmpty(worktree + "/.git/HEAD") == headBefore);
}
