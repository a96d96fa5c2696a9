// HAND-WRITTEN TYPES. These records have no published JSON Schema in docs/
// yet: `stockade check --json` (stockade.check/v1), `stockade ps --json`, the
// dev server's ready event and `stockade profile secret-names --json`
// (stockade.secret-names/v1). They are typed here by hand from the C++ that
// writes them (runtime/host_report_output.cpp, runtime/serve_command.cpp,
// runtime/cli.cpp), each with a schema in the subset validate.ts reads. When a
// schema lands in docs/, `npm run generate` makes a generated type for it and
// the entry here should be deleted.

/** The line `stockade serve` prints on stdout once the server is ready. */
export interface ReadyEvent {
  event: 'ready';
  name: string;
  port: number;
  pid: number;
  /** The way the port reaches the server: `direct` may fall back to `userspace`. */
  backend: 'userspace' | 'direct' | 'veth';
  elapsed_ms: number;
}

/** One running dev server, as `stockade ps --json` lists it. */
export interface PsEntry {
  name: string;
  port: number;
  pid: number;
  sandbox_pid: number;
  ready: boolean;
  uptime_s: number;
  profile: string;
  command: string[];
  /** As in the ready event; empty until ready (and from older binaries). */
  backend?: string;
  log: string;
}

/** One guarantee, feature or mechanism in `stockade check --json`. */
export interface HostCheck {
  id: string;
  kind: 'guarantee' | 'feature' | 'mechanism' | 'limit';
  title: string;
  state: 'ok' | 'degraded' | 'unavailable';
  mechanism: string | null;
  reason: string | null;
  fix: string | null;
  required: boolean;
}

/** What this host can enforce for this user (`stockade check --json`). */
export interface HostReport {
  schema: 'stockade.check/v1';
  uid: number;
  kernel: string;
  can_run: boolean;
  /** Which sandbox this host gives this user: full, landlock (the lower tier, taken only where a profile or --min-tier allows it) or none; why, and the fix per missing piece. Absent from older binaries. */
  tier?: { tier: 'full' | 'landlock' | 'none'; reason: string; fixes: string[] };
  blockers: string[];
  elapsed_us: number;
  probe_us: { [probe: string]: number };
  checks: HostCheck[];
}

/** SPEC §5's secret-shaped names, as the binary matches them (upper-cased). */
export interface SecretNames {
  schema: 'stockade.secret-names/v1';
  substrings: string[];
  names: string[];
  prefixes: string[];
  suffixes: string[];
}

const str = { type: 'string' } as const;
const int = { type: 'integer', minimum: 0 } as const;
const strings = { type: 'array', items: str } as const;
const orNull = { type: ['string', 'null'] } as const;

export const readySchema = {
  type: 'object',
  required: ['event', 'name', 'port', 'pid', 'backend', 'elapsed_ms'],
  properties: {
    event: { const: 'ready' },
    name: str,
    port: { type: 'integer', minimum: 1, maximum: 65535 },
    pid: int,
    backend: { enum: ['userspace', 'direct', 'veth'] },
    elapsed_ms: int,
  },
} as const;

export const psEntrySchema = {
  type: 'object',
  required: ['name', 'port', 'pid', 'sandbox_pid', 'ready', 'uptime_s', 'profile', 'command', 'log'],
  properties: {
    name: str,
    port: { type: 'integer', minimum: 1, maximum: 65535 },
    pid: int,
    sandbox_pid: int,
    ready: { type: 'boolean' },
    uptime_s: int,
    profile: str,
    command: strings,
    backend: str,
    log: str,
  },
} as const;

export const psSchema = { type: 'array', items: psEntrySchema } as const;

export const hostReportSchema = {
  type: 'object',
  required: ['schema', 'uid', 'kernel', 'can_run', 'blockers', 'elapsed_us', 'probe_us', 'checks'],
  properties: {
    schema: { const: 'stockade.check/v1' },
    uid: int,
    kernel: str,
    can_run: { type: 'boolean' },
    tier: {
      type: 'object',
      required: ['tier', 'reason', 'fixes'],
      properties: { tier: { enum: ['full', 'landlock', 'none'] }, reason: str, fixes: strings },
    },
    blockers: strings,
    elapsed_us: int,
    probe_us: { type: 'object' },
    checks: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'kind', 'title', 'state', 'mechanism', 'reason', 'fix', 'required'],
        properties: {
          id: str,
          kind: { enum: ['guarantee', 'feature', 'mechanism', 'limit'] },
          title: str,
          state: { enum: ['ok', 'degraded', 'unavailable'] },
          mechanism: orNull,
          reason: orNull,
          fix: orNull,
          required: { type: 'boolean' },
        },
      },
    },
  },
} as const;

export const secretNamesSchema = {
  type: 'object',
  required: ['schema', 'substrings', 'names', 'prefixes', 'suffixes'],
  properties: {
    schema: { const: 'stockade.secret-names/v1' },
    substrings: strings,
    names: strings,
    prefixes: strings,
    suffixes: strings,
  },
} as const;
