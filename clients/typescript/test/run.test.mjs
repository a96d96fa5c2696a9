// run(): held tests that pass and fail, a timeout, cancellation mid-run.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import os from 'node:os';
import { test } from 'node:test';
import { run, runArgs } from '../dist/index.js';
import { BINARY, NODE_FAILING, fixture, processesWith } from './helpers.mjs';

const tempEntries = () => readdirSync(os.tmpdir()).filter((n) => n.startsWith('stockade-client-'));

test('a passing held test: passed, exit 0, the output hashed, the private result dir removed', async () => {
  const f = fixture();
  try {
    const before = tempEntries();
    const r = await run({
      binary: BINARY,
      worktree: f.worktree,
      mounts: [{ source: f.held, target: '/held' }],
      command: ['node', '--test', '/held/'],
      timeout: 60,
    });
    assert.equal(r.status, 'passed', r.stdout.tail + r.stderr.tail + r.diagnostics);
    assert.equal(r.record.tier, 'full');
    assert.equal(r.exitCode, 0);
    assert.equal(r.record.exit_code, 0);
    assert.equal(r.record.schema, 'stockade.result/v1');
    assert.match(r.stdout.tail, /pass 2/);
    assert.match(r.stdout.sha256, /^[0-9a-f]{64}$/);
    assert.ok(r.stdout.bytes > 0);
    assert.equal(r.aborted, false);
    assert.deepEqual(tempEntries(), before, 'the client left its result directory behind');
  } finally {
    f.cleanup();
  }
});

test('a failing held test: failed, nonzero_exit, exit 1', async () => {
  const f = fixture(NODE_FAILING);
  try {
    const r = await run({
      binary: BINARY,
      worktree: f.worktree,
      mounts: [{ source: f.held, target: '/held' }],
      command: ['node', '--test', '/held/'],
    });
    assert.equal(r.status, 'failed');
    assert.equal(r.record.reason, 'nonzero_exit');
    assert.equal(r.exitCode, 1);
    assert.match(r.stdout.tail, /fail 1/);
  } finally {
    f.cleanup();
  }
});

test('a timeout: timed_out, exit 124', async () => {
  const t0 = Date.now();
  const r = await run({ binary: BINARY, command: ['sleep', '30'], timeout: 1 });
  assert.equal(r.status, 'timed_out');
  assert.equal(r.record.reason, 'timeout');
  assert.equal(r.exitCode, 124);
  assert.ok(Date.now() - t0 < 15000);
});

test('cancellation mid-run: SIGTERM reaches stockade, the record says cancelled, nothing is left', async () => {
  const token = `client-cancel-${process.pid}-${Date.now()}`;
  const controller = new AbortController();
  const t0 = Date.now();
  const pending = run({
    binary: BINARY,
    command: ['sh', '-c', `sleep 30 & sleep 31; : ${token}`],
    signal: controller.signal,
  });
  // Abort once the sandboxed shell is really there: stockade's own argv
  // holds the token from its first instant, before its signals are set up.
  while (processesWith(token, 'sh').length === 0) {
    assert.ok(Date.now() - t0 < 10000, 'the command never started');
    await new Promise((r) => setTimeout(r, 50));
  }
  controller.abort();
  const r = await pending;
  assert.equal(r.aborted, true);
  assert.equal(r.status, 'cancelled');
  assert.ok(Date.now() - t0 < 15000, 'cancellation took too long');
  assert.deepEqual(processesWith(token), [], 'a sandboxed process outlived the cancelled run');
});

test('a signal aborted before the start spawns nothing', async () => {
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(run({ binary: BINARY, command: ['true'], signal: controller.signal }), { name: 'AbortError' });
});

test('options are checked before anything is spawned', () => {
  assert.throws(() => runArgs({ binary: BINARY, command: [] }), { name: 'StockadeOptionsError', option: 'command' });
  assert.throws(() => runArgs({ binary: BINARY, command: ['true'], timeout: -1 }), { option: 'timeout' });
  assert.throws(() => runArgs({ binary: BINARY, command: ['true'], memory: '12 tb' }), { option: 'memory' });
  assert.throws(() => runArgs({ binary: BINARY, command: ['true'], mounts: [{ source: '/a', target: 'rel' }] }), {
    option: 'mounts[0].target',
  });
  assert.throws(() => runArgs({ binary: BINARY, command: ['true'], env: { 'A-B': 'x' } }), { option: 'env' });
  assert.throws(() => runArgs({ binary: BINARY, command: ['true'], minTier: 'partial' }), { option: 'minTier' });
  assert.ok(runArgs({ binary: BINARY, command: ['true'], minTier: 'landlock' }).includes('--min-tier=landlock'));
  assert.deepEqual(runArgs({ binary: BINARY, command: ['echo', '--x'], memory: '512m', timeout: 2.5, env: { CI: '-1' } }), [
    BINARY, 'run', '--env=CI=-1', '--memory=512m', '--timeout=2.5', '--quiet', '--', 'echo', '--x',
  ]);
  assert.ok(!existsSync('/nonexistent-result'));
});
