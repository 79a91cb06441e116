/**
 * `npm run bench:privacy`: memory of a privacy download, one run (embedded stores, in process).
 *
 * Stores BENCH_PRIVACY_EVENTS (default 1,000,000) events of one person in a DuckDB file, then
 * reads the access download (privacy/download.ts: engine pages of 5000) to the end, sampling the
 * process's RSS every 50 ms. Prints the RSS before and the peak while streaming, beside the size
 * of the NDJSON produced: a download built in memory would grow RSS by at least that size.
 * `--json` prints one line of figures.
 */
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import { DuckDbEventStore } from '../apps/server/src/ports/events/duckdb.js';
import { openMetadataStore, migrateMetadataStore } from '../apps/server/src/ports/metadata/knex.js';
import { downloadStream } from '../apps/server/src/privacy/download.js';
import type { Deps } from '../apps/server/src/deps.js';
import type { StoredEvent } from '../apps/server/src/ports/events/port.js';
import { eventPropLists } from '../apps/server/src/ingestion/records.js';

const N = Number(process.env.BENCH_PRIVACY_EVENTS ?? 1_000_000);
const json = process.argv.includes('--json');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-privacy-'));
const events = new DuckDbEventStore(path.join(dir, 'events.duckdb'));
const db = openMetadataStore({ dataDir: dir, sqliteFile: path.join(dir, 'meta.sqlite') });
try {
  await events.migrate();
  await migrateMetadataStore(db);
  const t0 = Date.UTC(2024, 0, 1);
  for (let start = 0; start < N; start += 50_000) {
    const rows: StoredEvent[] = [];
    for (let i = start; i < Math.min(N, start + 50_000); i++) {
      const props = { page: `/p/${i % 100}`, country: 'fr' };
      rows.push({ project_id: 1, id: i + 1, event: i % 3 ? 'view' : 'buy', distinct_id: 'the-person', time: t0 + i * 1000, insert_id: `ins-${i}`,
        ...eventPropLists(props), received_at: t0 + i * 1000 });
    }
    await events.writeEvents(1, rows);
  }
  (globalThis as { gc?: () => void }).gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 50);
  const started = Date.now();
  let bytes = 0;
  let lines = 0;
  const stream = downloadStream({ db, events } as unknown as Deps, { project_id: 1, cluster_ids: ['the-person'] } as never);
  for await (const chunk of stream) {
    const s = String(chunk);
    bytes += Buffer.byteLength(s);
    for (let i = s.indexOf('\n'); i >= 0; i = s.indexOf('\n', i + 1)) lines++;
  }
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().rss);
  const figures = {
    events: N, lines, ndjson_mb: +(bytes / 1e6).toFixed(1), rss_before_mb: +(before / 1e6).toFixed(1), rss_peak_mb: +(peak / 1e6).toFixed(1),
    rss_growth_mb: +((peak - before) / 1e6).toFixed(1), seconds: +((Date.now() - started) / 1000).toFixed(1), load1: +os.loadavg()[0].toFixed(2),
  };
  if (lines !== N) throw new Error(`expected ${N} lines, got ${lines}`);
  if (json) console.log(JSON.stringify(figures));
  else console.log(figures);
} finally {
  await events.close();
  await db.destroy();
  fs.rmSync(dir, { recursive: true, force: true });
}
