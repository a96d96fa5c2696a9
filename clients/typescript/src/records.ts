// The names the client has always exported for the records besides the
// result and the verdict, now each a view of a type generated from its
// published schema in docs/ (check, ps, ready, secret-names, bench), so the
// binary, the schemas and these types cannot drift apart: the suite validates
// the binary's real records against the same schemas
// (tests/schema/validate_records.py).
import type {
  BenchRecord,
  CheckRecord,
  PsRecord,
  ReadyRecord,
  SecretNamesRecord,
} from './generated/index.js';

/** The line `stockade serve` prints on stdout once the server is ready (docs/ready.schema.json). */
export type ReadyEvent = ReadyRecord;

/** One running dev server, as `stockade ps --json` lists it (docs/ps.schema.json). */
export type PsEntry = PsRecord['servers'][number];

/** What this host can enforce for this user: `stockade check --json` (docs/check.schema.json). */
export type HostReport = CheckRecord;

/** One guarantee, feature, mechanism or limit of the host report. */
export type HostCheck = CheckRecord['checks'][number];

/** SPEC §5's secret-shaped names, as the binary matches them (docs/secret-names.schema.json). */
export type SecretNames = SecretNamesRecord;

/** `stockade bench --json` (docs/bench.schema.json). */
export type BenchReport = BenchRecord;
