/**
 * `npm run bench:rate-limits [-- --json]`: what a shared request count costs (docs/hardening.md).
 * On a fresh database of DATABASE_URL (default: TEST_DATABASE_URL of scripts/services.sh), calls
 * SharedCounter directly: ingestion's two windows (20 client IPs, one hot project) and a token
 * bucket (10 keys), sequentially and with 10 calls in flight. Limits are set high so every call
 * takes the PostgreSQL path (refusals are answered from memory and cost nothing). `--json`: one
 * final line with every figure.
 */
import { loadavg } from 'node:os';
import pg from 'pg';
import { migrateMetadataStore, openMetadataStore } from '../apps/server/src/ports/metadata/knex.js';
import { SharedCounter } from '../apps/server/src/http/rate-limit-shared.js';

const base = process.env.DATABASE_URL ?? process.env.TEST_DATABASE_URL;
if (!base) throw new Error('set DATABASE_URL (or eval "$(bash scripts/services.sh --env)")');
const calls = Number(process.env.BENCH_CALLS ?? 3000);
const jsonLine = process.argv.includes('--json');
const figures: Record<string, unknown> = { calls };
const name = `bench_rl_${Date.now()}`;
const admin = new pg.Client({ connectionString: base });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const url = new URL(base);
url.pathname = `/${name}`;
const db = openMetadataStore({ databaseUrl: url.toString(), dataDir: '/tmp' });
try {
  await migrateMetadataStore(db);
  const counter = new SharedCounter(db, 60_000);
  const open = { requests: 1e9, windowMs: 10_000 };
  const phases: Array<[string, (i: number) => Promise<number>]> = [
    ['ingestion windows (IP + project)', (i) => counter.windows([{ key: `ip:10.0.0.${i % 20}`, limit: open }, { key: 'project:1', limit: open }])],
    ['token bucket', (i) => counter.bucket(`query:u1:${i % 10}`, { perSecond: 1e9, burst: 1e9 })],
  ];
  for (const [label, call] of phases) {
    for (let i = 0; i < 200; i++) await call(i); // warm-up
    let t = performance.now();
    for (let i = 0; i < calls; i++) await call(i);
    const sequentialMs = (performance.now() - t) / calls;
    t = performance.now();
    await Promise.all(Array.from({ length: 10 }, async (_, w) => { for (let i = 0; i < calls / 10; i++) await call(i * 10 + w); }));
    const perSecond = calls / ((performance.now() - t) / 1000);
    console.log(`${label}: ${sequentialMs.toFixed(2)} ms per call one at a time, ${Math.round(perSecond)} calls/s with 10 in flight`);
    figures[label.startsWith('token') ? 'bucket' : 'windows'] = { ms_per_call_sequential: +sequentialMs.toFixed(3), calls_per_second_10_in_flight: Math.round(perSecond) };
  }
  console.log(`load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  figures.load1 = +loadavg()[0].toFixed(2);
  if (jsonLine) console.log(JSON.stringify(figures));
} finally {
  await db.destroy();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
