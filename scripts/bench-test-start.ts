/**
 * What one test service costs to start on the production backend (PostgreSQL + ClickHouse), and
 * which part of it is the stores: `N` starts of `startTestService` (provision, boot, close, drop)
 * on a PostgreSQL database cloned from the migrated template, alternating with `N` on an empty one
 * the service migrates at boot (as before the template), then the parts on their own: a PostgreSQL database made and migrated from nothing, one cloned
 * from the migrated template (test/support/backends.ts), and a ClickHouse database with its tables.
 *
 *   source /tmp/svc.env   # or: eval "$(bash scripts/services.sh --env)"
 *   npx tsx scripts/bench-test-start.ts [N=20]
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { createClient } from '@clickhouse/client';
import { configuredBackends, postgresTemplate, type Backend } from '../test/support/backends.js';
import { startTestService } from '../test/support/service.js';
import { openMetadataStore, migrateMetadataStore } from '../apps/server/src/ports/metadata/knex.js';
import { openEventStore } from '../apps/server/src/ports/events/index.js';

const N = Number(process.argv[2] ?? 20);
const { TEST_DATABASE_URL: databaseUrl, TEST_CLICKHOUSE_URL: clickhouseUrl } = process.env;
if (!databaseUrl || !clickhouseUrl) throw new Error('TEST_DATABASE_URL and TEST_CLICKHOUSE_URL must be set');
const production = configuredBackends().find((b) => b.name === 'production')!;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const report = (label: string, xs: number[]) =>
  console.log(`${label.padEnd(44)} median ${median(xs).toFixed(0).padStart(5)} ms  total ${(xs.reduce((a, b) => a + b, 0) / 1000).toFixed(1)} s  (n=${xs.length})`);
async function timed<T>(run: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const r = await run();
  return [performance.now() - t0, r];
}
async function admin<T>(run: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try { return await run(c); } finally { await c.end(); }
}
const urlOf = (name: string) => { const u = new URL(databaseUrl); u.pathname = `/${name}`; return u.toString(); };

/** The production backend as it was before the template: an empty PostgreSQL database, migrated by the service at boot. */
const unmigrated: Backend = {
  name: 'production',
  async provision() {
    const name = `t_bench_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    await admin((c) => c.query(`CREATE DATABASE ${name}`));
    return {
      env: { DATABASE_URL: urlOf(name), CLICKHOUSE_URL: clickhouseUrl, CLICKHOUSE_DATABASE: name },
      overrides: {},
      async drop() {
        await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
        const ch = createClient({ url: clickhouseUrl });
        await ch.command({ query: `DROP DATABASE IF EXISTS ${name}` });
        await ch.close();
      },
    };
  },
};

await postgresTemplate(databaseUrl); // made once, outside the figures
const starts: Record<'template' | 'empty', number[]> = { template: [], empty: [] };
for (let i = 0; i < N; i++) {
  for (const [kind, backend] of [['template', production], ['empty', unmigrated]] as const) {
    const [start, t] = await timed(() => startTestService(backend));
    starts[kind].push(start);
    await t.close();
  }
}
report('startTestService, PostgreSQL cloned from template', starts.template);
report('startTestService, PostgreSQL empty (migrated at boot)', starts.empty);

const fresh: number[] = [], cloned: number[] = [], migrateOnClone: number[] = [], ch: number[] = [];
const template = await postgresTemplate(databaseUrl);
for (let i = 0; i < N; i++) {
  const name = `bench_start_${process.pid}_${i}`;
  fresh.push((await timed(async () => {
    await admin((c) => c.query(`CREATE DATABASE ${name}`));
    const db = openMetadataStore({ databaseUrl: urlOf(name), dataDir: '/tmp' });
    await migrateMetadataStore(db);
    await db.destroy();
  }))[0]);
  await admin((c) => c.query(`DROP DATABASE ${name} WITH (FORCE)`));
  cloned.push((await timed(() => admin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`))))[0]);
  migrateOnClone.push((await timed(async () => {
    const db = openMetadataStore({ databaseUrl: urlOf(name), dataDir: '/tmp' });
    await migrateMetadataStore(db); // nothing pending: what a boot on a clone still does
    await db.destroy();
  }))[0]);
  await admin((c) => c.query(`DROP DATABASE ${name} WITH (FORCE)`));
  ch.push((await timed(async () => {
    const events = openEventStore({ clickhouse: { url: clickhouseUrl, database: name }, dataDir: '/tmp' });
    await events.migrate();
    await events.close();
  }))[0]);
  const c = createClient({ url: clickhouseUrl });
  await c.command({ query: `DROP DATABASE IF EXISTS ${name}` });
  await c.close();
}
report('PostgreSQL: CREATE DATABASE + all migrations', fresh);
report('PostgreSQL: CREATE DATABASE .. TEMPLATE', cloned);
report('PostgreSQL: migrator on the clone (no-op)', migrateOnClone);
report('ClickHouse: CREATE DATABASE + tables', ch);
process.exit(0);
