import { createHash } from 'node:crypto';
import type { EventDialect } from './port.js';

/**
 * Event-store DDL, one list per engine, applied idempotently at start (CREATE ... IF NOT EXISTS).
 * Tables:
 * - `events`: one row per event; properties kept once, as parallel key/value arrays so both
 *   engines can filter and group on any key, plus `prop_types` (each value's kind), from which the
 *   object is rebuilt when an event is read back (eventProperties). `properties`, the JSON copy,
 *   is '' on rows written since `prop_types` (it doubled what every insert, merge and checkpoint
 *   carried) and kept for the rows written before. ClickHouse: ReplacingMergeTree on the dedup key
 *   (project, event, time, distinct_id, insert_id); DuckDB: the same key, enforced at insert.
 *   `person_id`: the event's identity under the links stored when it was written (persons on
 *   events); distinct_id for rows written without one (fixtures, rows older than the column).
 *   `person_key`: `person_id` as a number (PERSON_KEY_SQL), what analyses that only group or
 *   count persons read: grouping 10M rows on a UInt64 instead of a string is 20-45 % cheaper.
 * - `identity_links`: (distinct_id -> canonical_id from from_time), mirrored from the metadata
 *   store so analyses resolve identities inside the engine: an event's identity is
 *   `canonical_id` when a link for its distinct_id exists and `time >= from_time`, else its own
 *   distinct_id. `folded = 1` once every event row of the distinct_id carries the link's answer
 *   in `person_id` (identity/fold.ts): readers join only the unfolded links (the overrides) and
 *   take `person_id` for the rest, so the hot path joins a small table instead of every link.
 * - `profiles`: one row per profile version (the latest `updated_at` per (project_id,
 *   distinct_id) wins; `deleted = 1` marks a `$delete`), properties as JSON plus key/value arrays.
 *   Keyed by the cluster's CANONICAL id at write time (ingestion resolves the op's distinct_id
 *   ignoring from_time; when a link joins an id with a profile into a cluster, that profile is
 *   merged into the canonical one and its own row marked deleted). Readers still resolve
 *   `distinct_id` through identity_links (ignoring from_time) and take the latest version per
 *   cluster. `batch_id` names the ingestion batch that wrote a version (redelivery check).
 *   DuckDB keeps one row per key (INSERT OR REPLACE); ClickHouse replaces at merge (read FINAL).
 * - `event_ids`: every (project_id, distinct_id) with events stored, so the worker's question
 *   "has this alias any history?" (a non-anonymous /alias is retroactive only when it has none) is a
 *   key lookup; it scanned the project's events, 120 ms (ClickHouse) to 280 ms (DuckDB) per unit at
 *   10M events and growing with them. ClickHouse feeds it from every events insert by a
 *   materialised view (EVENT_IDS_FEED); DuckDB in the events write (its primary key drops repeats).
 *   Filled from the stored events once, when a store first gets it (EVENT_IDS_FILLED).
 * Domains that need more tables add them here.
 */
export const EVENT_STORE_DDL: Record<EventDialect, string[]> = {
  clickhouse: [
    `CREATE TABLE IF NOT EXISTS events (
      project_id UInt32,
      id Int64,
      event String,
      distinct_id String,
      time Int64,
      insert_id String,
      properties String DEFAULT '',
      prop_keys Array(String),
      prop_values Array(String),
      received_at Int64,
      person_id String DEFAULT distinct_id,
      person_key UInt64 DEFAULT halfMD5(person_id),
      prop_types String DEFAULT ''
    ) ENGINE = ReplacingMergeTree()
    PARTITION BY toYYYYMM(toDateTime(intDiv(time, 1000)))
    ORDER BY (project_id, event, time, distinct_id, insert_id)`,
    `CREATE TABLE IF NOT EXISTS identity_links (
      project_id UInt32,
      distinct_id String,
      canonical_id String,
      from_time Int64,
      created_at Int64,
      folded UInt8 DEFAULT 0
    ) ENGINE = ReplacingMergeTree(created_at)
    ORDER BY (project_id, distinct_id)`,
    `CREATE TABLE IF NOT EXISTS profiles (
      project_id UInt32,
      distinct_id String,
      properties String,
      prop_keys Array(String),
      prop_values Array(String),
      updated_at Int64,
      deleted UInt8,
      batch_id String DEFAULT ''
    ) ENGINE = ReplacingMergeTree(updated_at)
    ORDER BY (project_id, distinct_id)`,
    `CREATE TABLE IF NOT EXISTS event_ids (
      project_id UInt32,
      distinct_id String
    ) ENGINE = ReplacingMergeTree()
    ORDER BY (project_id, distinct_id)`,
  ],
  duckdb: [
    `CREATE TABLE IF NOT EXISTS events (
      project_id INTEGER NOT NULL,
      id BIGINT NOT NULL,
      event VARCHAR NOT NULL,
      distinct_id VARCHAR NOT NULL,
      time BIGINT NOT NULL,
      insert_id VARCHAR NOT NULL,
      properties VARCHAR NOT NULL DEFAULT '',
      prop_keys VARCHAR[] NOT NULL,
      prop_values VARCHAR[] NOT NULL,
      received_at BIGINT NOT NULL,
      person_id VARCHAR NOT NULL DEFAULT '',
      person_key UBIGINT NOT NULL,
      prop_types VARCHAR NOT NULL DEFAULT ''
    )`,
    // Stores created before prop_types: their JSON column had no default.
    `ALTER TABLE events ALTER COLUMN properties SET DEFAULT ''`,
    `CREATE TABLE IF NOT EXISTS identity_links (
      project_id INTEGER NOT NULL,
      distinct_id VARCHAR NOT NULL,
      canonical_id VARCHAR NOT NULL,
      from_time BIGINT NOT NULL,
      created_at BIGINT NOT NULL,
      folded UTINYINT NOT NULL DEFAULT 0,
      PRIMARY KEY (project_id, distinct_id)
    )`,
    `CREATE TABLE IF NOT EXISTS profiles (
      project_id INTEGER NOT NULL,
      distinct_id VARCHAR NOT NULL,
      properties VARCHAR NOT NULL,
      prop_keys VARCHAR[] NOT NULL,
      prop_values VARCHAR[] NOT NULL,
      updated_at BIGINT NOT NULL,
      deleted UTINYINT NOT NULL,
      batch_id VARCHAR NOT NULL DEFAULT '',
      PRIMARY KEY (project_id, distinct_id)
    )`,
    `ALTER TABLE profiles ADD COLUMN IF NOT EXISTS batch_id VARCHAR DEFAULT ''`,
    `CREATE TABLE IF NOT EXISTS event_ids (
      project_id INTEGER NOT NULL,
      distinct_id VARCHAR NOT NULL,
      PRIMARY KEY (project_id, distinct_id)
    )`,
    // The keys materialised at runtime (EventStore.materialize), materialised again at every open.
    `CREATE TABLE IF NOT EXISTS materialized_properties (
      key VARCHAR NOT NULL PRIMARY KEY,
      created_at BIGINT NOT NULL
    )`,
    // The organisation whose request materialised the key (its share, MaterializeShare); NULL before shares.
    `ALTER TABLE materialized_properties ADD COLUMN IF NOT EXISTS organization_id INTEGER`,
  ],
};

/**
 * ClickHouse: the materialised view that copies each inserted block's (project_id, distinct_id)
 * into event_ids (repeats merge away); on a cluster each shard's view reads its local events and
 * writes its local event_ids (both sharded on distinct_id).
 */
export function eventIdsFeedDdl(database: string, cluster?: ClickHouseCluster): string {
  const db = quoteIdent(database);
  if (!cluster) return `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.event_ids_feed TO ${db}.event_ids AS SELECT project_id, distinct_id FROM ${db}.events`;
  return `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.event_ids_feed ON CLUSTER ${quoteIdent(cluster.name)} TO ${db}.event_ids_local
    AS SELECT project_id, distinct_id FROM ${db}.events_local`;
}

/**
 * The row in event_ids that says it holds every stored event's id (project 0 is no project):
 * written after filling it from the events, so a fill cut short is done again at the next start.
 */
export const EVENT_IDS_FILLED = { project_id: 0, distinct_id: '' } as const;

/**
 * Columns added after a table's first release, for stores created before them (the CREATE
 * statements above already hold them). ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS: the
 * adapter checks system.columns first. Added at the end of the table, where CREATE puts them too.
 * `rewriteOldParts`: ClickHouse computes the default at every read of a part written before the
 * column, too dear to leave there, so the compaction rewrites such months once.
 */
export const ADDED_COLUMNS: Array<{ table: (typeof SHARDED_TABLES)[number]; column: string; type: Record<EventDialect, string>; rewriteOldParts?: boolean }> = [
  { table: 'events', column: 'person_id', type: { clickhouse: 'String DEFAULT distinct_id', duckdb: "VARCHAR DEFAULT ''" } },
  { table: 'events', column: 'person_key', type: { clickhouse: 'UInt64 DEFAULT halfMD5(person_id)', duckdb: 'UBIGINT' }, rewriteOldParts: true },
  { table: 'events', column: 'prop_types', type: { clickhouse: "String DEFAULT ''", duckdb: "VARCHAR DEFAULT ''" } },
  { table: 'identity_links', column: 'folded', type: { clickhouse: 'UInt8 DEFAULT 0', duckdb: 'UTINYINT DEFAULT 0' } },
];

/**
 * An identity as a number: the first 8 bytes of its MD5, big-endian (ClickHouse's halfMD5; the
 * same value from DuckDB's md5 and from Node, `personKey`). MD5 is fixed forever, unlike the
 * engines' own hash(), so keys stored by one release match keys computed by the next. Two
 * persons share a key only on a 64-bit collision: for n identities in a project the chance is
 * about n²/2^65 (3·10^-8 for a million, 3·10^-4 for 100 million).
 */
export const PERSON_KEY_SQL: Record<EventDialect, (id: string) => string> = {
  clickhouse: (id) => `halfMD5(${id})`,
  duckdb: (id) => `('0x' || md5(${id})[1:16])::UBIGINT`,
};

export const personKey = (id: string): bigint => createHash('md5').update(id, 'utf8').digest().readBigUInt64BE(0);

/** ClickHouse cluster mode (CLICKHOUSE_CLUSTER): where the event store's tables live. */
export interface ClickHouseCluster {
  /** The cluster's name in the servers' `remote_servers`. */
  name: string;
  /** ReplicatedReplacingMergeTree under `{shard}`/`{replica}` macros (ZooKeeper) instead of ReplacingMergeTree. */
  replicated: boolean;
}

/** The tables sharded in cluster mode; each is stored as `<table>_local` on every shard. */
export const SHARDED_TABLES = ['events', 'identity_links', 'profiles', 'event_ids'] as const;

/**
 * Cluster-mode DDL: each table becomes `<name>_local` (created ON CLUSTER on every shard) plus a
 * `Distributed` table under the original name, so the analysis SQL reads `events`,
 * `identity_links` and `profiles` unchanged. Every table is sharded by `sipHash64(distinct_id)`:
 * each table's replacing key contains distinct_id, so all versions of one row meet on one shard
 * and `FINAL` stays exact per shard. Per-person results stay the single server's: aggregations
 * over a Distributed table merge the shards' partial states at the initiator (two-stage, exact
 * for every aggregate), and reads run with distributed_product_mode = 'global', so each join or
 * IN over another distributed table (identity_links, profiles, events) ships its whole result to
 * every shard (GLOBAL JOIN/IN): an identity cluster whose distinct_ids sit on different shards
 * is resolved against all of its links.
 */
export function clusterDdl(database: string, cluster: ClickHouseCluster): string[] {
  const on = `ON CLUSTER ${quoteIdent(cluster.name)}`;
  const db = quoteIdent(database);
  const out: string[] = [];
  for (const ddl of EVENT_STORE_DDL.clickhouse) {
    const m = /^CREATE TABLE IF NOT EXISTS (\w+) \(/.exec(ddl);
    if (!m) throw new Error(`unexpected event-store DDL: ${ddl.slice(0, 60)}`);
    const table = m[1];
    const local = `${table}_local`;
    let body = ddl.replace(`CREATE TABLE IF NOT EXISTS ${table} (`, `CREATE TABLE IF NOT EXISTS ${db}.${local} ${on} (`);
    if (cluster.replicated) {
      body = body.replace(/ENGINE = ReplacingMergeTree\(([^)]*)\)/, (_all, ver: string) =>
        `ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/${database.replace(/'/g, '')}/${local}', '{replica}'${ver ? `, ${ver}` : ''})`);
    }
    out.push(body);
    out.push(`CREATE TABLE IF NOT EXISTS ${db}.${table} ${on} AS ${db}.${local}
      ENGINE = Distributed(${quoteIdent(cluster.name)}, ${db}, ${local}, sipHash64(distinct_id))`);
  }
  return out;
}

export function quoteIdent(name: string): string {
  return '`' + name.replace(/`/g, '') + '`';
}

/**
 * Materialised properties (MATERIALIZED_PROPERTIES, as PostHog materialises hot properties): top-level
 * event property keys also stored in a column of their own, so filters and breakdowns on them read
 * one string column instead of the `prop_keys`/`prop_values` lists (the costliest columns of a
 * scan). Key -> column name; the value is NULL where the event has no such key.
 */
export type MaterializedProperties = ReadonlyMap<string, string>;

export const NO_MATERIALIZED: MaterializedProperties = new Map();

/**
 * At most this many keys materialised at runtime per store (EventStore.materialize), beside the
 * configured ones: each column is one more the writes fill and the stored events carry.
 */
export const MAX_RUNTIME_MATERIALIZED = 20;

/** Column of each key: `mp_` + the key's letters and digits + a hash of the key (distinct keys, distinct columns). */
export function materializedProperties(keys: readonly string[]): MaterializedProperties {
  return new Map(keys.map((k) => [k, `mp_${k.toLowerCase().replace(/[^a-z0-9]+/g, '_').slice(0, 40)}_${createHash('sha1').update(k).digest('hex').slice(0, 8)}`]));
}
