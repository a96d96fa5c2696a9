// Fails when src/generated/ is not what the schemas in docs/ generate now:
// regenerates into a temporary directory and compares file by file.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const committed = path.join(here, '..', 'src', 'generated');
const fresh = await mkdtemp(path.join(os.tmpdir(), 'stockade-client-gen-'));
try {
  execFileSync(process.execPath, [path.join(here, 'generate.mjs'), fresh], { stdio: 'inherit' });
  const a = (await readdir(committed)).sort();
  const b = (await readdir(fresh)).sort();
  const stale = [];
  for (const f of new Set([...a, ...b])) {
    const x = a.includes(f) ? await readFile(path.join(committed, f), 'utf8') : null;
    const y = b.includes(f) ? await readFile(path.join(fresh, f), 'utf8') : null;
    if (x !== y) stale.push(f);
  }
  if (stale.length) {
    console.error(`stockade-client: src/generated is stale (${stale.join(', ')}); run npm run generate`);
    process.exit(1);
  }
  console.log(`stockade-client: generated types current (${b.length} files)`);
} finally {
  await rm(fresh, { recursive: true, force: true });
}
