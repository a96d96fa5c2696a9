// The environment: secret-shaped names refused from the binary's own list,
// and no caller variable crossing even through a spawner that merges
// process.env (the trap a Docker harness fell into).
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { isSecretShaped, parseResult, run, runArgs, secretNames, spawnEnvironment } from '../dist/index.js';
import { BINARY } from './helpers.mjs';

test('the secret-shaped list is the binary\'s own, and refuses before spawning', async () => {
  const fromBinary = JSON.parse(execFileSync(BINARY, ['profile', 'secret-names', '--json'], { encoding: 'utf8' }));
  assert.deepEqual(secretNames(BINARY), fromBinary);
  for (const name of ['GITHUB_TOKEN', 'github_token', 'MY_SESSION_ID', 'AWS_REGION', 'DEPLOY_KEY', 'SSH_AUTH_SOCK', 'OPENAI_ORG'])
    assert.ok(isSecretShaped(name, fromBinary), name);
  for (const name of ['CI', 'NODE_ENV', 'KEYBOARD', 'PATH'])
    assert.ok(!isSecretShaped(name, fromBinary), name);
  process.env.CLIENT_TEST_API_KEY = 'sk-canary';
  await assert.rejects(run({ binary: BINARY, command: ['true'], passEnv: ['CLIENT_TEST_API_KEY'] }), {
    name: 'StockadeOptionsError',
    option: 'passEnv',
  });
  assert.throws(() => runArgs({ binary: BINARY, command: ['true'], env: { GITHUB_TOKEN: 'ghp_x' } }), {
    name: 'StockadeOptionsError',
    option: 'env',
  });
  // Named in allowSecret it goes in, with --allow-secret for the binary.
  const r = await run({
    binary: BINARY,
    command: ['sh', '-c', 'echo "$CLIENT_TEST_API_KEY"'],
    passEnv: ['CLIENT_TEST_API_KEY'],
    allowSecret: ['CLIENT_TEST_API_KEY'],
  });
  assert.equal(r.status, 'passed', r.diagnostics);
  assert.equal(r.stdout.tail, 'sk-canary\n');
  delete process.env.CLIENT_TEST_API_KEY;
});

test('the client and the binary agree, name by name, on what --env KEY refuses', async () => {
  const names = secretNames(BINARY);
  const probe = ['GITHUB_TOKEN', 'x_cookie_jar', 'KUBECONFIG', 'DOCKER_HOST', 'DEPLOY_KEY', 'MONKEY', 'CI', 'NODE_OPTIONS', 'KEY_ID'];
  for (const key of names.names) probe.push(key);
  for (const key of probe) {
    const shaped = isSecretShaped(key, names);
    const out = execFileSync('sh', ['-c', `"$0" run --quiet --env "$1" -- true; echo "exit $?"`, BINARY, key], {
      env: { PATH: process.env.PATH, [key]: 'x' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    assert.equal(out.trim(), shaped ? 'exit 125' : 'exit 0', `${key}: client says ${shaped ? '' : 'not '}secret-shaped`);
  }
});

// The trap: a spawn helper that merges process.env back over what it was given.
function spawnMerged(argv, env = {}) {
  const [bin, ...args] = argv;
  return spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

test('no caller variable crosses: not through run(), not through a spawner that merges process.env', async () => {
  const canary = `canary-${process.pid}-${Math.random().toString(36).slice(2)}`;
  process.env.STOCKADE_CLIENT_CANARY = canary;
  process.env.HARNESS_GH_SECRET_TOKEN = canary;
  try {
    assert.ok(!JSON.stringify(spawnEnvironment()).includes(canary), 'the client would hand the canary to stockade');

    const direct = await run({ binary: BINARY, command: ['env'] });
    assert.equal(direct.status, 'passed', direct.diagnostics);
    assert.match(direct.stdout.tail, /^PATH=/m, 'env printed nothing: the test would prove nothing');
    assert.ok(!direct.stdout.tail.includes(canary), direct.stdout.tail);
    assert.ok(!direct.stdout.tail.includes('STOCKADE_CLIENT_CANARY'));

    const dir = mkdtempSync(path.join(os.tmpdir(), 'client-trap-'));
    try {
      const result = path.join(dir, 'result.json');
      const child = spawnMerged(runArgs({ binary: BINARY, command: ['env'], result, echo: true }), { EXTRA: canary });
      let echoed = '';
      child.stdout.on('data', (c) => (echoed += c));
      const code = await new Promise((resolve) => child.on('close', resolve));
      assert.equal(code, 0);
      assert.match(echoed, /^PATH=/m, 'the echo carried nothing');
      const record = parseResult(readFileSync(result, 'utf8'));
      assert.match(record.stdout.tail, /^PATH=/m);
      assert.ok(record.stdout.bytes < 4096, 'env output was cut: the check below would be partial');
      for (const text of [record.stdout.tail, echoed]) {
        assert.ok(!text.includes(canary), text);
        assert.ok(!text.includes('STOCKADE_CLIENT_CANARY'));
        assert.ok(!text.includes('EXTRA='));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    delete process.env.STOCKADE_CLIENT_CANARY;
    delete process.env.HARNESS_GH_SECRET_TOKEN;
  }
});
