// A held node:test file whose checks run the candidate one level down,
// through STOCKADE_ISOLATE: the candidate cannot reach this process's
// memory, signals or files (docs/oracle.md, "Runners and candidates").
import test from 'node:test';
import assert from 'node:assert';
import { spawnSync } from 'node:child_process';

function candidateAdd(a, b) {
  const run = spawnSync(process.env.STOCKADE_ISOLATE,
                        ['--', 'node', '/repo/add-cli.js', String(a), String(b)],
                        { encoding: 'utf8' });
  assert.strictEqual(run.status, 0, run.stderr);
  return Number(run.stdout.trim());
}

test('adds', () => assert.strictEqual(candidateAdd(2, 3), 5));
test('adds negatives', () => assert.strictEqual(candidateAdd(-1, 1), 0));
