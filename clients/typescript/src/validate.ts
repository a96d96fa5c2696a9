// The runtime check of what comes back from stockade. It reads the published
// schemas (embedded in src/generated/ by the generator) in a small subset of
// JSON Schema: type, const, enum, required, properties, items, $ref into
// $defs, oneOf/anyOf, minimum/maximum and pattern. Fields the schema does not
// name are tolerated (a later v1 may add some); a missing or mistyped field,
// or a record of another schema version, is a StockadeRecordError, never a
// silent undefined.
import {
  benchSchema,
  checkSchema,
  psSchema,
  readySchema,
  resultSchema,
  secret_namesSchema,
  verdictSchema,
} from './generated/index.js';
import type { PsRecord, ResultRecord, VerdictRecord } from './generated/index.js';
import type { BenchReport, HostReport, PsEntry, ReadyEvent, SecretNames } from './records.js';

export type RecordErrorKind = 'not_json' | 'malformed' | 'newer_schema' | 'wrong_schema';

/** A record from stockade that the client cannot vouch for. */
export class StockadeRecordError extends Error {
  override readonly name = 'StockadeRecordError';
  constructor(
    readonly kind: RecordErrorKind,
    /** The record kind expected, e.g. `stockade.result/v1`. */
    readonly expected: string,
    /** JSON path of the first problem, e.g. `$.stdout.sha256`. */
    readonly path: string,
    /** The problem itself, without the record and path. */
    readonly detail: string,
  ) {
    super(`${expected}: ${path}: ${detail}`);
  }
}

type Schema = { readonly [key: string]: unknown };

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeMatches(v: unknown, t: string): boolean {
  const actual = jsonType(v);
  return actual === t || (t === 'number' && actual === 'integer');
}

// The first problem found, as [path, message], or null when VALUE fits.
function problem(v: unknown, s: Schema, root: Schema, at: string): [string, string] | null {
  if (typeof s.$ref === 'string') {
    const m = /^#\/\$defs\/(.+)$/.exec(s.$ref);
    const defs = root.$defs as Record<string, Schema> | undefined;
    const target = m && defs ? defs[m[1] as string] : undefined;
    if (!target) return [at, `unsupported $ref ${s.$ref}`];
    return problem(v, target, root, at);
  }
  for (const key of ['oneOf', 'anyOf'] as const) {
    const options = s[key] as Schema[] | undefined;
    if (options) {
      const found = options.map((o) => problem(v, o, root, at));
      if (!found.some((p) => p === null)) return found[found.length - 1] ?? [at, 'no option fits'];
    }
  }
  if ('const' in s && v !== s.const) return [at, `expected ${JSON.stringify(s.const)}, got ${JSON.stringify(v)}`];
  if (Array.isArray(s.enum) && !s.enum.includes(v as never))
    return [at, `${JSON.stringify(v)} is not one of ${JSON.stringify(s.enum)}`];
  if (s.type !== undefined) {
    const types = (Array.isArray(s.type) ? s.type : [s.type]) as string[];
    if (!types.some((t) => typeMatches(v, t))) return [at, `expected ${types.join(' or ')}, got ${jsonType(v)}`];
  }
  if (typeof v === 'number') {
    if (typeof s.minimum === 'number' && v < s.minimum) return [at, `${v} is below ${s.minimum}`];
    if (typeof s.maximum === 'number' && v > s.maximum) return [at, `${v} is above ${s.maximum}`];
  }
  if (typeof v === 'string' && typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(v))
    return [at, `${JSON.stringify(v)} does not match ${s.pattern}`];
  if (Array.isArray(v) && s.items && typeof s.items === 'object') {
    for (let i = 0; i < v.length; i++) {
      const p = problem(v[i], s.items as Schema, root, `${at}[${i}]`);
      if (p) return p;
    }
  }
  if (jsonType(v) === 'object') {
    const obj = v as Record<string, unknown>;
    for (const key of (s.required as string[] | undefined) ?? [])
      if (!Object.prototype.hasOwnProperty.call(obj, key)) return [`${at}.${key}`, 'required field missing'];
    const props = (s.properties as Record<string, Schema> | undefined) ?? {};
    for (const [key, sub] of Object.entries(props))
      if (Object.prototype.hasOwnProperty.call(obj, key)) {
        const p = problem(obj[key], sub, root, `${at}.${key}`);
        if (p) return p;
      }
  }
  return null;
}

function parseJson(input: unknown, expected: string): unknown {
  if (typeof input !== 'string' && !(input instanceof Uint8Array)) return input;
  const text = typeof input === 'string' ? input : new TextDecoder().decode(input);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new StockadeRecordError('not_json', expected, '$', `not JSON: ${(e as Error).message}`);
  }
}

// Checks the `schema` field first so a stockade.result/v2 is named as newer,
// not reported as whatever field it happens to lack.
function validate<T>(input: unknown, schema: Schema, expected: string): T {
  const value = parseJson(input, expected);
  const expectedId = ((schema.properties as Schema | undefined)?.schema as Schema | undefined)?.const;
  if (typeof expectedId === 'string') {
    const got = jsonType(value) === 'object' ? (value as Record<string, unknown>).schema : undefined;
    if (typeof got !== 'string') throw new StockadeRecordError('malformed', expected, '$.schema', 'no schema name');
    if (got !== expectedId) {
      const [family, version] = expectedId.split('/v');
      const m = /^(.*)\/v(\d+)$/.exec(got);
      if (m && m[1] === family && Number(m[2]) > Number(version))
        throw new StockadeRecordError('newer_schema', expected, '$.schema',
          `${got} is newer than this client understands (${expectedId}); upgrade stockade-client`);
      throw new StockadeRecordError('wrong_schema', expected, '$.schema', `got ${got}`);
    }
  }
  const p = problem(value, schema, schema, '$');
  if (p) throw new StockadeRecordError('malformed', expected, p[0], p[1]);
  return value as T;
}

/** A verdict whose embedded run record has been checked too. */
export type Verdict = Omit<VerdictRecord, 'result'> & { result: ResultRecord | null };

/** Checks a `stockade.result/v1` record (an object, or its JSON text). */
export function parseResult(input: unknown): ResultRecord {
  return validate<ResultRecord>(input, resultSchema, 'stockade.result/v1');
}

/** Checks a `stockade.verdict/v1` record and the run record it embeds. */
export function parseVerdict(input: unknown): Verdict {
  const v = validate<VerdictRecord>(input, verdictSchema, 'stockade.verdict/v1');
  if (v.result === null) return v as Verdict;
  try {
    return { ...v, result: parseResult(v.result) };
  } catch (e) {
    if (e instanceof StockadeRecordError)
      throw new StockadeRecordError(e.kind, 'stockade.verdict/v1', e.path.replace(/^\$/, '$.result'), e.detail);
    throw e;
  }
}

export function parseHostReport(input: unknown): HostReport {
  return validate<HostReport>(input, checkSchema, 'stockade.check/v1');
}

export function parseReadyEvent(input: unknown): ReadyEvent {
  return validate<ReadyEvent>(input, readySchema, 'ready event');
}

export function parsePsList(input: unknown): PsEntry[] {
  // stockade.ps/v1 is an object naming its schema; the list is its servers.
  return validate<PsRecord>(input, psSchema, 'stockade.ps/v1').servers;
}

export function parseSecretNames(input: unknown): SecretNames {
  return validate<SecretNames>(input, secret_namesSchema, 'stockade.secret-names/v1');
}

export function parseBenchReport(input: unknown): BenchReport {
  return validate<BenchReport>(input, benchSchema, 'stockade.bench/v1');
}
