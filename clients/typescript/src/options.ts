// Options for the three jobs, checked before anything is spawned, and the
// exact argv each becomes. Values go as `--flag=value`, one argv element each,
// so a value that starts with `-` is never read as a flag.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { parseSecretNames } from './validate.js';
import type { SecretNames } from './records.js';

/** Thrown before anything is spawned, naming the option that is wrong. */
export class StockadeOptionsError extends TypeError {
  override readonly name = 'StockadeOptionsError';
  constructor(
    readonly option: string,
    message: string,
  ) {
    super(`${option}: ${message}`);
  }
}

/** A byte count (`268435456`) or one with a binary suffix (`512m`, `2g`). */
export type Size = number | `${number}` | `${number}${'k' | 'K' | 'm' | 'M' | 'g' | 'G'}`;

export interface Mount {
  /** Host path. */
  source: string;
  /** Path inside the sandbox. */
  target: string;
  /** Read-only unless true. Each writable mount is a hole: prefer none. */
  writable?: boolean;
}

export interface CommonOptions {
  /** The stockade binary: default `$STOCKADE_BINARY`, else `stockade` on PATH. */
  binary?: string;
  /** The command and its arguments, run inside the sandbox. */
  command: readonly string[];
  /** `held-test` for run and oracle, `dev-server` for serve, or a profile file. */
  profile?: string;
  /** Bound at /repo, writable; its .git read-only. */
  worktree?: string;
  mounts?: readonly Mount[];
  rootfs?: string;
  /** Variables set inside the sandbox (`--env KEY=VALUE`). */
  env?: Readonly<Record<string, string>>;
  /** Variables copied from this process into the sandbox (`--env KEY`). */
  passEnv?: readonly string[];
  /** Secret-shaped names (SPEC §5) that may go in all the same. */
  allowSecret?: readonly string[];
  workdir?: string;
  /** `65534` or `"1000:1000"`. */
  user?: number | string;
  memory?: Size;
  pids?: number;
  /** Seconds of CPU time. */
  cpuTime?: number;
  /** Seconds of wall-clock time. */
  timeout?: number;
  outputLimit?: Size;
  tmpSize?: Size;
  /** Guarantees that must be enforced, else stockade refuses (exit 125). */
  require?: readonly string[];
  /** The lowest sandbox accepted where no user namespace can be had: 'full' (the default profiles') or 'landlock', a sandbox without namespaces whose losses the record's `degraded` lists (its `tier` says which ran). */
  minTier?: 'full' | 'landlock';
  name?: string;
  /** Where stockade writes the result record; default a private temp dir. */
  result?: string;
  /** Echo the command's output to stockade's stdout/stderr (default false: it is still captured, counted and hashed in the record). */
  echo?: boolean;
  /** Cancels the job: stockade gets SIGTERM and kills the whole sandbox. */
  signal?: AbortSignal;
}

export type RunOptions = CommonOptions;

export interface ServeOptions extends CommonOptions {
  /** The published port, on the host's 127.0.0.1 (and ::1). */
  port: number;
  /** Ready only once this matches a word-bounded run of the output. */
  readyPattern?: string;
  /** Seconds to wait for ready before the server is torn down. */
  readyTimeout?: number;
  /**
   * How the port reaches the server (docs/dev-servers.md): `auto` (the
   * default: `direct` where its listener can be confined, else `userspace`),
   * `direct` (the server's own listener is the host's; where it cannot be,
   * the forwarder serves and the ready event says so in `backend_fallback`;
   * a loopback the server did not listen on is forwarded to it, named in
   * `forwarded_loopbacks`), `userspace` (a forwarder), `veth` (root only).
   */
  netBackend?: 'auto' | 'userspace' | 'direct' | 'veth';
}

export interface OracleOptions extends CommonOptions {
  worktree: string;
  /** The held test, mounted read-only at /held. */
  held: string;
  report?: 'junit' | 'tap';
  /** A file naming the test cases that must have run and passed. */
  expect?: string;
  /** Where stockade writes the verdict; default a private temp dir. */
  verdict?: string;
}

export function binaryOf(options: { binary?: string }): string {
  return options.binary ?? process.env.STOCKADE_BINARY ?? 'stockade';
}

// What the spawned stockade sees: these names from this process and the
// names passEnv asks for, nothing else. Never a merge over process.env: a
// harness's tokens must not reach even the supervisor.
const SPAWN_ALLOWLIST = ['PATH', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'XDG_RUNTIME_DIR'];

/** The environment the client gives the stockade process it spawns. */
export function spawnEnvironment(options: { passEnv?: readonly string[] } = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of [...SPAWN_ALLOWLIST, ...(options.passEnv ?? [])]) {
    const value = process.env[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

const secretCache = new Map<string, SecretNames>();

/** SPEC §5's list, read from the binary (`stockade profile secret-names --json`), once per binary. */
export function secretNames(binary?: string): SecretNames {
  const bin = binary ?? binaryOf({});
  const cached = secretCache.get(bin);
  if (cached) return cached;
  let out: string;
  try {
    out = execFileSync(bin, ['profile', 'secret-names', '--json'], {
      env: spawnEnvironment(),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (e) {
    throw new StockadeOptionsError('binary', `cannot read the secret-shaped names from ${bin}: ${(e as Error).message}`);
  }
  const names = parseSecretNames(out);
  secretCache.set(bin, names);
  return names;
}

/** True when NAME is secret-shaped by the binary's own list (matched upper-cased, as stockade does). */
export function isSecretShaped(name: string, names: SecretNames): boolean {
  const upper = name.toUpperCase();
  return (
    names.substrings.some((s) => upper.includes(s)) ||
    names.names.includes(upper) ||
    names.prefixes.some((s) => upper.startsWith(s)) ||
    names.suffixes.some((s) => upper.endsWith(s))
  );
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SIZE = /^[0-9]+[kmgKMG]?$/;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

function fail(option: string, message: string): never {
  throw new StockadeOptionsError(option, message);
}

function text(option: string, v: unknown): string {
  if (typeof v !== 'string' || v === '') fail(option, 'must be a non-empty string');
  if (v.includes('\0')) fail(option, 'must not contain a NUL byte');
  return v;
}

function seconds(option: string, v: unknown): string {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) fail(option, 'must be a positive number of seconds');
  return String(v);
}

function count(option: string, v: unknown, max = Number.MAX_SAFE_INTEGER): string {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > max) fail(option, `must be an integer from 1 to ${max}`);
  return String(v);
}

function size(option: string, v: unknown): string {
  if (typeof v === 'number') {
    if (!Number.isInteger(v) || v < 0) fail(option, 'must be a whole number of bytes');
    return String(v);
  }
  if (typeof v !== 'string' || !SIZE.test(v)) fail(option, 'must be bytes, optionally with k, m or g (512m)');
  return v;
}

function hostPath(option: string, v: unknown): string {
  return path.resolve(text(option, v));
}

function common(sub: 'run' | 'serve' | 'oracle', o: CommonOptions): string[] {
  if (o === null || typeof o !== 'object') fail('options', 'must be an object');
  const argv: string[] = [text('binary', binaryOf(o)), sub];
  const flag = (name: string, value: string) => argv.push(`--${name}=${value}`);
  if (!Array.isArray(o.command) || o.command.length === 0) fail('command', 'must be a non-empty array of strings');
  o.command.forEach((c, i) => {
    if (typeof c !== 'string' || c.includes('\0')) fail(`command[${i}]`, 'must be a string without NUL');
  });
  if (o.profile !== undefined) flag('profile', text('profile', o.profile));
  if (o.worktree !== undefined) flag('worktree', hostPath('worktree', o.worktree));
  for (const [i, m] of (o.mounts ?? []).entries()) {
    const src = hostPath(`mounts[${i}].source`, m?.source);
    const dst = text(`mounts[${i}].target`, m?.target);
    if (!dst.startsWith('/')) fail(`mounts[${i}].target`, 'must be an absolute path');
    if (src.includes(':') || dst.includes(':')) fail(`mounts[${i}]`, 'a path with ":" cannot be mounted');
    flag('mount', `${src}:${dst}${m.writable ? ':rw' : ''}`);
  }
  if (o.rootfs !== undefined) flag('rootfs', hostPath('rootfs', o.rootfs));

  const allow = new Set(o.allowSecret ?? []);
  for (const key of allow) if (!ENV_NAME.test(key)) fail('allowSecret', `"${key}" is not an environment variable name`);
  const env = o.env ?? {};
  const pass = o.passEnv ?? [];
  const keys = [...Object.keys(env).map((k) => ['env', k] as const), ...pass.map((k) => ['passEnv', k] as const)];
  const secrets = keys.length ? secretNames(binaryOf(o)) : null;
  // Stricter than the binary, which refuses only copies: a harness that
  // writes GITHUB_TOKEN=… into a held test's environment leaks it just the
  // same, so a set value needs allowSecret too.
  for (const [option, key] of keys) {
    if (typeof key !== 'string' || !ENV_NAME.test(key)) fail(option, `"${String(key)}" is not an environment variable name`);
    if (secrets && isSecretShaped(key, secrets) && !allow.has(key))
      fail(option, `refusing the secret-shaped variable ${key} (SPEC §5); list it in allowSecret if it must go in`);
  }
  for (const key of allow) if (keys.some(([, k]) => k === key)) flag('allow-secret', key);
  for (const [key, value] of Object.entries(env)) {
    if (typeof value !== 'string' || value.includes('\0')) fail(`env.${key}`, 'must be a string without NUL');
    flag('env', `${key}=${value}`);
  }
  for (const key of pass) {
    if (process.env[key] === undefined) fail('passEnv', `${key} is not set in this process`);
    flag('env', key);
  }

  if (o.workdir !== undefined) {
    const w = text('workdir', o.workdir);
    if (!w.startsWith('/')) fail('workdir', 'must be an absolute path inside the sandbox');
    flag('workdir', w);
  }
  if (o.user !== undefined) {
    const u = String(o.user);
    if (!/^[0-9]+(:[0-9]+)?$/.test(u)) fail('user', 'must be UID or "UID:GID"');
    flag('user', u);
  }
  if (o.memory !== undefined) flag('memory', size('memory', o.memory));
  if (o.pids !== undefined) flag('pids', count('pids', o.pids));
  if (o.cpuTime !== undefined) flag('cpu-time', seconds('cpuTime', o.cpuTime));
  if (o.timeout !== undefined) flag('timeout', seconds('timeout', o.timeout));
  if (o.outputLimit !== undefined) flag('output-limit', size('outputLimit', o.outputLimit));
  if (o.tmpSize !== undefined) flag('tmp-size', size('tmpSize', o.tmpSize));
  if (o.require !== undefined) {
    for (const r of o.require) if (typeof r !== 'string' || !/^[a-z0-9_-]+$/.test(r)) fail('require', `"${String(r)}" is not a guarantee name`);
    if (o.require.length) flag('require', o.require.join(','));
  }
  if (o.minTier !== undefined) {
    if (o.minTier !== 'full' && o.minTier !== 'landlock') fail('minTier', `"${String(o.minTier)}" is not a tier (expected full or landlock)`);
    flag('min-tier', o.minTier);
  }
  if (o.name !== undefined) {
    if (!NAME.test(o.name)) fail('name', 'must be letters, digits, ".", "_" or "-"');
    flag('name', o.name);
  }
  if (o.result !== undefined) flag('result', hostPath('result', o.result));
  if (!o.echo) argv.push('--quiet');
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) fail('signal', 'must be an AbortSignal');
  return argv;
}

function finish(argv: string[], o: CommonOptions): string[] {
  return [...argv, '--', ...o.command];
}

/** The exact argv of `stockade run` for these options (argv[0] is the binary). */
export function runArgs(options: RunOptions): string[] {
  return finish(common('run', options), options);
}

/** The exact argv of `stockade serve` (in the foreground: the caller owns the supervisor). */
export function serveArgs(options: ServeOptions): string[] {
  const argv = common('serve', options);
  argv.push(`--port=${count('port', options.port, 65535)}`);
  if (options.readyPattern !== undefined) argv.push(`--ready-pattern=${text('readyPattern', options.readyPattern)}`);
  if (options.readyTimeout !== undefined) argv.push(`--ready-timeout=${seconds('readyTimeout', options.readyTimeout)}`);
  if (options.netBackend !== undefined) {
    if (!['auto', 'userspace', 'direct', 'veth'].includes(options.netBackend))
      fail('netBackend', 'must be "auto", "userspace", "direct" or "veth"');
    argv.push(`--net-backend=${options.netBackend}`);
  }
  return finish(argv, options);
}

/** The exact argv of `stockade oracle`. */
export function oracleArgs(options: OracleOptions): string[] {
  if (options?.worktree === undefined) fail('worktree', 'is required for an oracle run');
  const argv = common('oracle', options);
  argv.push(`--held=${hostPath('held', options.held)}`);
  if (options.report !== undefined) {
    if (options.report !== 'junit' && options.report !== 'tap') fail('report', 'must be "junit" or "tap"');
    argv.push(`--report=${options.report}`);
  }
  if (options.expect !== undefined) argv.push(`--expect=${hostPath('expect', options.expect)}`);
  if (options.verdict !== undefined) argv.push(`--verdict=${hostPath('verdict', options.verdict)}`);
  return finish(argv, options);
}
