// A held test run the way a harness would: no network, a worktree, a time
// limit, and a typed record back. Run: STOCKADE_BINARY=/path/to/stockade node held-test.mjs
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { run, StockadeError } from 'stockade-client';

const worktree = mkdtempSync(path.join(os.tmpdir(), 'example-wt-'));
writeFileSync(path.join(worktree, 'add.test.js'),
  "require('node:test')('adds', () => require('node:assert').strictEqual(1 + 1, 2));\n");
try {
  const result = await run({
    worktree,
    command: ['node', '--test', '/repo/'],
    timeout: 60,
    memory: '1g',
    env: { CI: '1' },
  });
  console.log(`held test: ${result.status} (exit ${result.exitCode}), stdout ${result.stdout.bytes} bytes, sha256 ${result.stdout.sha256.slice(0, 12)}…`);
  process.exitCode = result.status === 'passed' ? 0 : 1;
} catch (e) {
  if (e instanceof StockadeError) console.error(`stockade refused: ${e.message}`);
  throw e;
} finally {
  rmSync(worktree, { recursive: true, force: true });
}
