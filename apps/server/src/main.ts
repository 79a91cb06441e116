import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import v8 from 'node:v8';
import { loadConfig, type Config } from './config.js';
import { runMain, stopOnSignals } from './process.js';

/**
 * The service's process entry (`@tally-analytics/server/main`). `npm start` runs every role in one
 * process on the embedded stores; Kubernetes runs it as `api` or `worker` (first argument or ROLE).
 * The image's `operator` role is the operator package's own entry (bin/tally.ts picks).
 */
type Role = 'all' | 'api' | 'worker';

/** SUPERADMIN_KEY, or one generated once and kept in DATA_DIR (printed at start). */
function resolveSuperadminKey(config: Config): { key: string; generated: boolean } {
  if (config.superadminKey) return { key: config.superadminKey, generated: false };
  const file = path.join(config.dataDir, 'superadmin.key');
  fs.mkdirSync(config.dataDir, { recursive: true });
  if (fs.existsSync(file)) return { key: fs.readFileSync(file, 'utf8').trim(), generated: true };
  const key = 'sa_' + randomBytes(24).toString('base64url');
  fs.writeFileSync(file, key + '\n', { mode: 0o600 });
  return { key, generated: true };
}

/**
 * How far V8 lets the old generation grow past what survived its last full collection
 * (HEAP_GROWING_PERCENT; 0 keeps V8's own). V8 picks that factor from the heap's upper limit, up
 * to 4× with the default limit on a machine with gigabytes of RAM, so a service churning through
 * ingestion batches held several times its live data: the single-process service peaked about
 * 100 MiB higher (docs/performance.md). Its default is 40 there; the Kubernetes roles keep V8's
 * (the pipeline's worker showed no memory to gain). Read by V8 at each collection, so setting it
 * here, before the stores open, applies to the whole run.
 */
function limitHeapGrowth(role: Role): void {
  const raw = process.env.HEAP_GROWING_PERCENT;
  const percent = raw === undefined || raw === '' ? (role === 'all' ? 40 : 0) : Number(raw);
  if (!Number.isInteger(percent) || percent < 0) throw new Error(`HEAP_GROWING_PERCENT: must be a whole number ≥ 0, got ${raw}`);
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}

async function main() {
  const role = (process.argv[2] ?? process.env.ROLE ?? 'all') as Role;
  if (!['all', 'api', 'worker'].includes(role)) throw new Error(`unknown role ${role}: use all, api or worker (the role operator is the operator package's, started by bin/tally)`);
  limitHeapGrowth(role);
  const config = loadConfig();
  const { key, generated } = resolveSuperadminKey(config);
  config.superadminKey = key;
  // Loaded after the heap setting above, so that it applies to everything the stores allocate.
  const { buildDeps, startService } = await import('./app.js');
  const deps = await buildDeps(config);
  const service = await startService(deps, { roles: role === 'all' ? ['api', 'worker'] : [role] });
  const stores = `metadata: ${config.databaseUrl ? 'PostgreSQL' : 'SQLite'}, events: ${config.clickhouse ? 'ClickHouse' : 'DuckDB'}, buffer: ${deps.buffer.kind}`;
  if (service.url) console.log(`analytics service (${role}) listening on ${service.url.replace('127.0.0.1', config.host === '0.0.0.0' ? 'localhost' : config.host)}  [${stores}]`);
  else console.log(`analytics service (${role}) running [${stores}]`);
  if (generated && role !== 'worker') console.log(`superadmin key (kept in ${path.join(config.dataDir, 'superadmin.key')}): ${key}`);
  stopOnSignals('draining and stopping', () => service.close());
}

runMain(main);
