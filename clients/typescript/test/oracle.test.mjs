// oracle(): an honest pass, and a forged all-green report that comes back error.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { oracle } from '../dist/index.js';
import { BINARY, FORGED, JUNIT, NODE_FAILING, fixture } from './helpers.mjs';

test('an oracle pass', async () => {
  const f = fixture();
  try {
    const v = await oracle({ binary: BINARY, worktree: f.worktree, held: f.held, command: ['sh', '-c', JUNIT] });
    assert.equal(v.verdict, 'pass', JSON.stringify(v.contradictions));
    assert.equal(v.counts.passed, 2);
    assert.equal(v.result?.schema, 'stockade.result/v1');
    assert.equal(v.integrity.held_unchanged, true);
  } finally {
    f.cleanup();
  }
});

test('a forged green report from a failing candidate comes back error', async () => {
  const f = fixture(NODE_FAILING);
  try {
    const v = await oracle({
      binary: BINARY,
      worktree: f.worktree,
      held: f.held,
      command: ['sh', '-c', `echo '${FORGED}' > $STOCKADE_REPORT_DIR/report.xml; exit 1`],
    });
    assert.equal(v.verdict, 'error');
    assert.ok(v.contradictions.some((c) => c.includes('all-green report')), JSON.stringify(v.contradictions));
    assert.equal(v.result?.exit_code, 1);
  } finally {
    f.cleanup();
  }
});
