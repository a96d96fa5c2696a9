// Fixtures for the client's tests: worktrees, held tests and ports.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const BINARY = process.env.STOCKADE_BINARY;
if (!BINARY) throw new Error('set STOCKADE_BINARY to the stockade under test');

export const ADD_JS = 'exports.add = (a, b) => a + b;\n';
export const NODE_TEST = `const test = require('node:test'); const assert = require('node:assert');
const { add } = require('/repo/add.js');
test('adds', () => assert.strictEqual(add(2, 3), 5));
test('adds negatives', () => assert.strictEqual(add(-1, 1), 0));
`;
export const NODE_FAILING = NODE_TEST + "test('is wrong', () => assert.strictEqual(add(1, 1), 3));\n";
export const JUNIT =
  'node --test --test-reporter=junit --test-reporter-destination=$STOCKADE_REPORT_DIR/report.xml /held/';
// The all-green report a failing candidate writes for itself
// (tests/oracle/oracle_cases.py).
export const FORGED =
  '<testsuites tests="2" failures="0"><testsuite name="s" tests="2" failures="0">' +
  '<testcase name="adds"/><testcase name="adds negatives"/></testsuite></testsuites>';

// A scratch root with a git worktree (add.js) and a held directory. As root
// the tree stays root-owned, which stockade maps to an unprivileged id
// through an idmapped mount (G3), as tests/oracle/oracle_cases.py does; the
// held directory is world-readable since an extra --mount is not idmapped.
export function fixture(heldTest = NODE_TEST) {
  const root = mkdtempSync(path.join(os.tmpdir(), 'client-fixture-'));
  const worktree = path.join(root, 'wt');
  const held = path.join(root, 'held');
  mkdirSync(worktree);
  mkdirSync(held);
  writeFileSync(path.join(worktree, 'add.js'), ADD_JS);
  writeFileSync(path.join(held, 'add.test.js'), heldTest);
  chmodSync(root, 0o755);
  chmodSync(held, 0o755);
  const env = {
    PATH: process.env.PATH,
    GIT_AUTHOR_NAME: 't',
    GIT_AUTHOR_EMAIL: 't@t',
    GIT_COMMITTER_NAME: 't',
    GIT_COMMITTER_EMAIL: 't@t',
    GIT_CONFIG_GLOBAL: '/dev/null',
  };
  for (const args of [['init', '-q'], ['add', '-A'], ['commit', '-qm', 'init']])
    execFileSync('git', args, { cwd: worktree, env, stdio: 'ignore' });
  return { root, worktree, held, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

// A high port in a random range, loopback only; collisions are unlikely and
// a busy port fails the test loudly rather than passing.
export function randomPort() {
  return 40000 + Math.floor(Math.random() * 20000);
}

// Pids whose command line holds TOKEN: what a cancelled run must not leave.
// Host pids whose argv holds `token`; with `argv0`, only those whose program
// is that (stockade's own argv repeats the command, token and all).
export function processesWith(token, argv0) {
  const found = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmdline.includes(token)) continue;
      if (argv0 === undefined || cmdline.split('\0')[0] === argv0) found.push(Number(pid));
    } catch {
      // gone already
    }
  }
  return found;
}
