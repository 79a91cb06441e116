/**
 * The benchmarks' generated event dataset (bench:query, bench:console): rows generated inside the
 * engine (DuckDB: range(); ClickHouse: numbers()), the same rows on both, so answers can be compared.
 */
import type { EventStore } from '../apps/server/src/ports/events/index.js';
import { FILL_EVENT_IDS, materializedValue } from '../apps/server/src/ports/events/duckdb.js';
import { PERSON_KEY_SQL } from '../apps/server/src/ports/events/schema.js';
import { foldIdentityLinks } from '../apps/server/src/identity/fold.js';

export interface DatasetShape {
  project: number;
  /** Unix ms of the first visit's earliest time. */
  t0: number;
  /** Visits start within [t0, t0 + spanMs - 8 minutes). */
  spanMs: number;
  /** Identities (users); a fifth of the visits come under an anonymous id linked to its user. */
  ids: number;
}

/** Row generator shared by both engines (only the spelling differs). `i` is the row number. */
export function datasetSql(dialect: 'duckdb' | 'clickhouse', start: number, count: number, shape: DatasetShape): string {
  const ch = dialect === 'clickhouse';
  const i = ch ? 'number' : 'i';
  const str = (e: string) => (ch ? `toString(${e})` : `CAST(${e} AS VARCHAR)`);
  const cat = (...p: string[]) => (ch ? `concat(${p.join(', ')})` : p.join(' || '));
  const mix = (m: number, mod: number, x = i) => `((${x} * ${m} + ${m % 1000}) % ${mod})`;
  // Draws that the user (a function of the row number modulo 200k) does not determine: reduce
  // modulo a number coprime with 200k first.
  const draw = (m: number, mod: number, x = i) => `(((${x} * ${m} + ${m % 1000}) % 40013) % ${mod})`;
  // Visits: 8 consecutive rows (one minute apart) belong to one visit of one user, so identities
  // have varied event names (funnels convert, flows branch) and multi-event sessions.
  const visit = ch ? `intDiv(${i}, 8)` : `(${i} // 8)`;
  const user = mix(2654435761, shape.ids, visit);
  // Names skewed: low numbers more frequent (min of two draws).
  const name = cat(`'e'`, str(`least(${draw(40503, 40)}, ${draw(9973, 40)})`));
  const distinct = `CASE WHEN ${draw(7919, 5, visit)} = 0 THEN ${cat(`'a'`, str(user))} ELSE ${cat(`'u'`, str(user))} END`;
  const time = `${shape.t0} + ${mix(104729, shape.spanMs - 8 * 60_000, visit)} + (${i} % 8) * 60000`;
  const keys = `[${Array.from({ length: 10 }, (_, k) => `'p${k}'`).join(', ')}]`;
  const values = `[${Array.from({ length: 10 }, (_, k) => cat(`'v'`, str(mix(31 + k * 7, 3 + k)))).join(', ')}]`;
  // Properties as the service stores them (the lists and their kinds, no JSON copy). person_id as
  // ingestion writes an anonymous visit before its user is identified (its own id):
  // the links below arrive later, unfolded, and the load folds them (timed).
  const cols = `${shape.project} AS project_id, ${i} AS id, ${name} AS event, ${distinct} AS distinct_id, ${time} AS time,
    ${cat(`'i'`, str(i))} AS insert_id, '' AS properties, ${keys} AS prop_keys, ${values} AS prop_values, 'ssssssssss' AS prop_types, ${time} AS received_at,
    ${distinct} AS person_id, ${PERSON_KEY_SQL[dialect](distinct)} AS person_key`;
  return ch ? `SELECT ${cols} FROM numbers(${start}, ${count})` : `SELECT ${cols} FROM range(${start}, ${start + count}) t(i)`;
}

/** One statement per this many rows: each stays well inside the client's request timeout on a busy machine. */
const LOAD_CHUNK = 1_000_000;

/**
 * Each month merged, as the compaction leaves a quiet month (ClickHouse; DuckDB has nothing to
 * merge). An OPTIMIZE … FINAL of a month whose parts a background merge holds does nothing (at
 * 100M events the inserts' own merges still run when the load ends), so the compaction's merge is
 * repeated, once those merges are done, until it finds no month left to merge.
 */
async function mergeMonths(store: EventStore): Promise<void> {
  const merging = async () => store.dialect === 'clickhouse'
    && Number((await store.query<{ n: number }>(`SELECT count() AS n FROM system.merges WHERE database = currentDatabase() AND table = 'events'`))[0]?.n) > 0;
  for (let rounds = 0; ; rounds++) {
    while (await merging()) await new Promise((resolve) => setTimeout(resolve, 5_000));
    const months = await store.mergeQuietPartitions(0, 1000);
    if (months === 0) return;
    if (rounds === 5) throw new Error(`${months} months of events still unmerged after ${rounds} rounds`);
  }
}

/**
 * Replaces the store's events, links and event ids with `n` generated events and the identities'
 * links, merged (ClickHouse) and filled as the service would have them, then folds the links
 * (identity/fold.ts). Returns how long the load and the fold took and how many links it folded.
 */
export async function seedDataset(store: EventStore, n: number, shape: DatasetShape): Promise<{ loadMs: number; foldMs: number; folded: number }> {
  const started = Date.now();
  const emptied = store.dialect === 'clickhouse' ? (t: string) => `TRUNCATE TABLE ${t}` : (t: string) => `DELETE FROM ${t}`;
  // event_ids too: ClickHouse's view filled it from the previous load (another size).
  for (const t of ['events', 'identity_links', 'event_ids']) await store.command(emptied(t));
  for (let start = 0; start < n; start += LOAD_CHUNK) {
    await store.command(`INSERT INTO events (project_id, id, event, distinct_id, time, insert_id, properties, prop_keys, prop_values, prop_types, received_at, person_id, person_key)
      ${datasetSql(store.dialect, start, Math.min(LOAD_CHUNK, n - start), shape)}`);
  }
  const links = store.dialect === 'clickhouse'
    ? `SELECT ${shape.project}, concat('a', toString(number)), concat('u', toString(number)), 0, 1 FROM numbers(${shape.ids})`
    : `SELECT ${shape.project}, 'a' || i, 'u' || i, 0, 1 FROM range(${shape.ids}) t(i)`;
  await store.command(`INSERT INTO identity_links (project_id, distinct_id, canonical_id, from_time, created_at) ${links}`);
  await mergeMonths(store);
  // ClickHouse's event_ids fill from the inserts (a materialised view); DuckDB's at the events write,
  // which the generator's INSERT bypasses: filled as migrate fills a new store's.
  if (store.dialect === 'duckdb') await store.command(FILL_EVENT_IDS);
  // The generator's INSERT leaves DuckDB's materialised columns empty: filled as migrate fills a new one.
  for (const [key, column] of store.dialect === 'duckdb' ? store.materialized : []) {
    await store.command(`UPDATE events SET ${column} = ${materializedValue(key)}`);
  }
  const loadMs = Date.now() - started;
  const folding = Date.now();
  const folded = await foldIdentityLinks({ events: store }, { batch: shape.ids }); // every link in one pass (one wait for the mutations)
  return { loadMs, foldMs: Date.now() - folding, folded };
}
