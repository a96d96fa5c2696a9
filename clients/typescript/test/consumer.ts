// Compiled by scripts/test.sh against the installed tarball, strict, as an
// outside harness would: the published types must be enough on their own.
import {
  run,
  serve,
  oracle,
  check,
  runArgs,
  parseResult,
  StockadeRecordError,
  StockadeOptionsError,
  type RunResult,
  type DevServer,
  type Verdict,
  type HostReport,
  type ResultRecord,
} from 'stockade-client';

export async function harness(signal: AbortSignal): Promise<void> {
  const argv: string[] = runArgs({ command: ['true'], memory: '512m', timeout: 5 });
  const r: RunResult = await run({ command: argv.slice(-1), signal });
  const status: 'passed' | 'failed' | 'timed_out' | 'blocked' | 'cancelled' | 'error' = r.status;
  const hash: string = r.stdout.sha256;
  const dev: DevServer = await serve({ port: 45678, command: ['python3', '-m', 'http.server'] });
  for await (const line of dev.logs()) if (line) break;
  const stopped: ResultRecord = (await dev.stop()).record;
  const v: Verdict = await oracle({ worktree: '.', held: '/held', command: ['true'] });
  const verdict: 'pass' | 'fail' | 'error' | 'timeout' | 'blocked' = v.verdict;
  const exit: number | null | undefined = v.result?.exit_code;
  const host: HostReport = await check();
  try {
    parseResult('{}');
  } catch (e) {
    if (e instanceof StockadeRecordError) console.log(e.kind, e.path);
    if (e instanceof StockadeOptionsError) console.log(e.option);
  }
  console.log(status, hash, stopped.status, verdict, exit, host.can_run);
}
