// stockade-client: the three jobs of stockade (run, serve, oracle) and its
// host check as typed calls for harnesses on Node 18 and later.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { ResultRecord } from './generated/index.js';
import type { HostReport, PsEntry, ReadyEvent } from './records.js';
import {
  binaryOf,
  oracleArgs,
  runArgs,
  serveArgs,
  spawnEnvironment,
  StockadeOptionsError,
  type CommonOptions,
  type OracleOptions,
  type RunOptions,
  type ServeOptions,
} from './options.js';
import {
  parseHostReport,
  parsePsList,
  parseReadyEvent,
  parseResult,
  parseVerdict,
  StockadeRecordError,
  type Verdict,
} from './validate.js';

export * from './options.js';
export * from './validate.js';
export type * from './records.js';
export * from './generated/index.js';

/** stockade ended without a record the client could read (a refusal, exit 125, or a crash). */
export class StockadeError extends Error {
  override readonly name = 'StockadeError';
  constructor(
    message: string,
    /** stockade's own exit code, or null when it died of a signal. */
    readonly exitCode: number | null,
    /** The end of what stockade itself wrote on stderr. */
    readonly stderr: string,
    /** The record, when stockade wrote one (a dev server that never got ready). */
    readonly record: ResultRecord | null = null,
  ) {
    super(stderr.trim() ? `${message}: ${stderr.trim().split('\n').slice(-3).join(' | ')}` : message);
  }
}

export type StreamSummary = ResultRecord['stdout'];

export interface RunResult {
  /** The full `stockade.result/v1` record, validated. */
  record: ResultRecord;
  /** stockade's exit code: the command's own, 128+N, 124 timeout, 125 refused, 126, 127. */
  exitCode: number;
  status: ResultRecord['status'];
  /** Byte count, SHA-256 and last 4 KiB of the command's stdout. */
  stdout: StreamSummary;
  stderr: StreamSummary;
  /** True when the run was cancelled through the AbortSignal. */
  aborted: boolean;
  /** The end of stockade's own stderr (its diagnostics, and the command's output when echo is on). */
  diagnostics: string;
}

const KEEP = 64 * 1024;

function tailCollector() {
  let text = '';
  return {
    add(chunk: Buffer | string) {
      text += chunk.toString();
      if (text.length > 2 * KEEP) text = text.slice(-KEEP);
    },
    get value() {
      return text.slice(-KEEP);
    },
  };
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const e = new Error('the operation was aborted');
  e.name = 'AbortError';
  return e;
}

// A private directory for --result/--verdict, outside any worktree: the
// sandbox cannot reach the host's temp dir, and nothing it writes decides
// what the client reads.
async function privateDir(options: CommonOptions): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'stockade-client-'));
  if (options.worktree !== undefined) {
    const rel = path.relative(path.resolve(options.worktree), dir);
    if (!rel.startsWith('..') && !path.isAbsolute(rel)) {
      await rm(dir, { recursive: true, force: true });
      throw new StockadeOptionsError('worktree', `the temp dir ${dir} is inside the worktree; set TMPDIR elsewhere`);
    }
  }
  return dir;
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
}

// stockade's own convention for a death by signal N: 128+N.
function exitCodeOf(exit: { code: number | null; signal: NodeJS.Signals | null }): number {
  if (exit.code !== null) return exit.code;
  return 128 + (exit.signal ? (os.constants.signals[exit.signal] ?? 0) : 0);
}

async function readRecord<T>(file: string, parse: (text: string) => T): Promise<T | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  return parse(text);
}

function startStockade(argv: string[], options: CommonOptions): ChildProcess {
  const [bin, ...args] = argv as [string, ...string[]];
  return spawn(bin, args, {
    env: spawnEnvironment(options),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * A one-shot run (`stockade run`), with no network. Resolves with the record
 * for every ending the command had (passed, failed, timed_out, blocked,
 * cancelled, error); rejects with StockadeError when stockade wrote no record
 * (refused arguments), StockadeOptionsError before spawning, and an AbortError
 * when the signal was aborted before the start. Aborting mid-run sends SIGTERM
 * to stockade, which kills the whole sandbox; the record says `cancelled`.
 */
export async function run(options: RunOptions): Promise<RunResult> {
  runArgs(options); // validate before making anything
  if (options.signal?.aborted) throw abortError(options.signal);
  const dir = options.result === undefined ? await privateDir(options) : null;
  const resultFile = options.result ?? path.join(dir as string, 'result.json');
  try {
    const argv = runArgs({ ...options, result: resultFile });
    const child = startStockade(argv, options);
    const out = tailCollector();
    const err = tailCollector();
    child.stdout?.on('data', out.add);
    child.stderr?.on('data', err.add);
    let aborted = false;
    const onAbort = () => {
      aborted = true;
      child.kill('SIGTERM');
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    let exit;
    try {
      exit = await exitOf(child);
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
    const record = await readRecord(resultFile, parseResult);
    const diagnostics = (out.value + err.value).slice(-KEEP);
    if (!record)
      throw new StockadeError(`stockade run wrote no result (exit ${exit.code ?? exit.signal})`, exit.code, err.value);
    return {
      record,
      exitCode: exitCodeOf(exit),
      status: record.status,
      stdout: record.stdout,
      stderr: record.stderr,
      aborted,
      diagnostics,
    };
  } finally {
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}

export interface DevServer {
  name: string;
  port: number;
  /** The supervisor's pid. */
  pid: number;
  /** `http://127.0.0.1:PORT/`: the only way in. */
  url: string;
  ready: ReadyEvent;
  /** Stops the server (SIGTERM to the supervisor, which kills the sandbox) and returns its record. Idempotent. */
  stop(): Promise<RunResult>;
  /** The server's output, line by line, from the start and then as it comes; ends when the server does or the loop breaks. */
  logs(): AsyncIterableIterator<string>;
  /** This server as `stockade ps --json` lists it, or null once it is gone. */
  ps(): Promise<PsEntry | null>;
  /** Settles when the server ends, however it ends. */
  readonly exited: Promise<RunResult>;
}

// A harness that exits without stop() takes its servers with it (one killed
// by SIGKILL cannot run this; `stockade stop NAME` cleans up then).
const liveServers = new Set<ChildProcess>();
function stopLiveServers(): void {
  for (const child of liveServers) child.kill('SIGTERM');
}

/**
 * A dev server (`stockade serve`) in the foreground, owned by this process.
 * Resolves on the ready event; rejects with StockadeError (carrying the record)
 * when the server ends before it is ready, and with an AbortError when the
 * signal fires first (the server is then torn down).
 */
export async function serve(options: ServeOptions): Promise<DevServer> {
  serveArgs(options);
  if (options.signal?.aborted) throw abortError(options.signal);
  const dir = options.result === undefined ? await privateDir(options) : null;
  const resultFile = options.result ?? path.join(dir as string, 'result.json');
  const argv = serveArgs({ ...options, result: resultFile });
  const child = startStockade(argv, options);
  const err = tailCollector();
  child.stderr?.on('data', err.add);
  const followers = new Set<ChildProcess>();
  let aborted = false;
  liveServers.add(child);
  if (liveServers.size === 1) process.once('exit', stopLiveServers);

  const exited: Promise<RunResult> = (async () => {
    try {
      const exit = await exitOf(child).finally(() => {
        liveServers.delete(child);
        if (liveServers.size === 0) process.removeListener('exit', stopLiveServers);
      });
      for (const f of followers) f.kill('SIGTERM');
      const record = await readRecord(resultFile, parseResult);
      if (!record)
        throw new StockadeError(`stockade serve wrote no result (exit ${exit.code ?? exit.signal})`, exit.code, err.value);
      return {
        record,
        exitCode: exitCodeOf(exit),
        status: record.status,
        stdout: record.stdout,
        stderr: record.stderr,
        aborted,
        diagnostics: err.value,
      };
    } finally {
      if (dir) await rm(dir, { recursive: true, force: true });
    }
  })();
  exited.catch(() => {}); // observed through ready or stop()

  const stop = async (): Promise<RunResult> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    return exited;
  };
  const onAbort = () => {
    aborted = true;
    void stop();
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  void exited.finally(() => options.signal?.removeEventListener('abort', onAbort)).catch(() => {});

  const ready = await new Promise<ReadyEvent>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    let settled = false;
    lines.on('line', (line) => {
      if (settled || !line.trim().startsWith('{')) return;
      try {
        const event = parseReadyEvent(line);
        settled = true;
        resolve(event);
      } catch (e) {
        if (e instanceof StockadeRecordError && e.kind === 'malformed' && e.path === '$.event') return;
        settled = true;
        void stop();
        reject(e);
      }
    });
    exited.then(
      (r) => {
        if (settled) return;
        settled = true;
        if (aborted) reject(abortError(options.signal!));
        else reject(new StockadeError(`the dev server ended before it was ready (${r.record.status}, ${r.record.reason})`, r.exitCode, err.value, r.record));
      },
      (e) => {
        if (settled) return;
        settled = true;
        reject(aborted ? abortError(options.signal!) : e);
      },
    );
  });

  const binary = binaryOf(options);
  return {
    name: ready.name,
    port: ready.port,
    pid: ready.pid,
    url: `http://127.0.0.1:${ready.port}/`,
    ready,
    stop,
    exited,
    async ps() {
      const list = await ps({ binary });
      return list.find((e) => e.name === ready.name && e.pid === ready.pid) ?? null;
    },
    logs() {
      const follower = spawn(binary, ['logs', ready.name, '--follow'], {
        env: spawnEnvironment(),
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      followers.add(follower);
      follower.once('close', () => followers.delete(follower));
      const lines = createInterface({ input: follower.stdout! })[Symbol.asyncIterator]();
      const finish = () => {
        follower.kill('SIGTERM');
        followers.delete(follower);
      };
      return {
        [Symbol.asyncIterator]() {
          return this;
        },
        async next() {
          const r = await lines.next();
          if (r.done) finish();
          return r;
        },
        async return() {
          finish();
          await lines.return?.();
          return { done: true, value: undefined };
        },
      };
    },
  };
}

/**
 * A verdict the code under test cannot forge (`stockade oracle`). Resolves
 * with the validated verdict whatever it says (pass, fail, error, timeout,
 * blocked); rejects with StockadeError when stockade wrote none.
 */
export async function oracle(options: OracleOptions): Promise<Verdict> {
  oracleArgs(options);
  if (options.signal?.aborted) throw abortError(options.signal);
  const dir = options.verdict === undefined ? await privateDir(options) : null;
  const verdictFile = options.verdict ?? path.join(dir as string, 'verdict.json');
  try {
    const child = startStockade(oracleArgs({ ...options, verdict: verdictFile }), options);
    const err = tailCollector();
    child.stderr?.on('data', err.add);
    child.stdout?.resume();
    const onAbort = () => child.kill('SIGTERM');
    options.signal?.addEventListener('abort', onAbort, { once: true });
    let exit;
    try {
      exit = await exitOf(child);
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
    const verdict = await readRecord(verdictFile, parseVerdict);
    if (!verdict)
      throw new StockadeError(`stockade oracle wrote no verdict (exit ${exit.code ?? exit.signal})`, exit.code, err.value);
    return verdict;
  } finally {
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}

async function capture(binary: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(binary, args, { env: spawnEnvironment(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  const err = tailCollector();
  child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr?.on('data', err.add);
  const { code } = await exitOf(child);
  return { code, stdout, stderr: err.value };
}

/** What this host can enforce for this user (`stockade check --json`); resolves whether or not it can run. */
export async function check(options: { binary?: string; profile?: string } = {}): Promise<HostReport> {
  const args = ['check', '--json'];
  if (options.profile !== undefined) args.push(`--profile=${options.profile}`);
  const r = await capture(binaryOf(options), args);
  if (!r.stdout.trim()) throw new StockadeError('stockade check printed no report', r.code, r.stderr);
  return parseHostReport(r.stdout);
}

/** The dev servers this user runs (`stockade ps --json`). */
export async function ps(options: { binary?: string } = {}): Promise<PsEntry[]> {
  const r = await capture(binaryOf(options), ['ps', '--json']);
  if (r.code !== 0) throw new StockadeError('stockade ps failed', r.code, r.stderr);
  return parsePsList(r.stdout);
}
