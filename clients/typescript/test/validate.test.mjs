// The validator: a real record passes; malformed, newer and foreign ones are
// typed errors. Also the host check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
import {
  check,
  parseBenchReport,
  parseHostReport,
  parseResult,
  parseVerdict,
  run,
  StockadeRecordError,
} from '../dist/index.js';
import { BINARY } from './helpers.mjs';

const real = (await run({ binary: BINARY, command: ['true'] })).record;

function rejects(record, kind, path) {
  assert.throws(() => parseResult(record), (e) => {
    assert.ok(e instanceof StockadeRecordError, String(e));
    assert.equal(e.kind, kind, e.message);
    if (path) assert.equal(e.path, path, e.message);
    return true;
  });
}

test('a real record validates, and a record with an added field still does', () => {
  assert.deepEqual(parseResult(JSON.stringify(real)), real);
  assert.equal(parseResult({ ...real, tier: 'full' }).status, 'passed');
});

test('malformed records are typed errors, not undefined', () => {
  const { stdout, ...noStdout } = real;
  rejects(noStdout, 'malformed', '$.stdout');
  rejects({ ...real, stdout: { ...stdout, bytes: '12' } }, 'malformed', '$.stdout.bytes');
  rejects({ ...real, status: 'succeeded' }, 'malformed', '$.status');
  rejects({ ...real, exit_code: 1.5 }, 'malformed', '$.exit_code');
  rejects({ ...real, enforced: { ...real.enforced, landlock: 'v7' } }, 'malformed', '$.enforced.landlock');
  rejects({ ...real, error: { stage: 'mount' } }, 'malformed');
  rejects('{"schema": "stockade.result/v1", ', 'not_json', '$');
  rejects([], 'malformed', '$.schema');
  rejects(null, 'malformed', '$.schema');
});

test('a record from a newer schema or another one is named as such', () => {
  rejects({ ...real, schema: 'stockade.result/v2' }, 'newer_schema', '$.schema');
  rejects({ ...real, schema: 'stockade.verdict/v1' }, 'wrong_schema', '$.schema');
  assert.throws(() => parseVerdict(real), { name: 'StockadeRecordError', kind: 'wrong_schema' });
});

test('check(): the host report, typed', async () => {
  const report = await check({ binary: BINARY });
  assert.equal(report.schema, 'stockade.check/v1');
  assert.equal(typeof report.can_run, 'boolean');
  assert.ok(report.checks.some((c) => c.id === 'G1'));
  assert.ok(['full', 'landlock', 'none'].includes(report.tier.tier));
  assert.ok(report.setup_steps.length > 0, 'the probe ran the setup table');
});

test('bench --json and the host report validate against their published schemas', () => {
  const bench = parseBenchReport(
    execFileSync(BINARY, ['bench', '--runs', '1', '--warmup', '0', '--json'], { encoding: 'utf8' }),
  );
  assert.equal(bench.schema, 'stockade.bench/v1');
  assert.ok(bench.levels.some((l) => l.name === 'full_profile'));
  const { levels, ...noLevels } = bench;
  assert.throws(() => parseBenchReport(noLevels), { name: 'StockadeRecordError', kind: 'malformed', path: '$.levels' });
  const host = JSON.parse(execFileSync(BINARY, ['check', '--json'], { encoding: 'utf8' }));
  const { checks, ...noChecks } = host;
  assert.throws(() => parseHostReport(noChecks), { name: 'StockadeRecordError', kind: 'malformed', path: '$.checks' });
  assert.throws(() => parseHostReport({ ...host, checks: [{ ...checks[0], state: 'maybe' }] }), {
    name: 'StockadeRecordError',
    path: '$.checks[0].state',
  });
});
