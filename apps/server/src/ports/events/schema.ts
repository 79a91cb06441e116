import type { EventDialect } from './port.js';

/**
 * Event-store DDL, one list per engine, applied idempotently at start (CREATE ... IF NOT EXISTS).
 * Tables:
 * - `events`: one row per event; properties kept as JSON plus parallel key/value arrays so both
 *   engines can filter and group on any key. ClickHouse: ReplacingMergeTree on the dedup key
 *   (project, event, time, distinct_id, insert_id); DuckDB: the same key, enforced at insert.
 * - `identity_links`: (distinct_id -> canonical_id from from_time), mirrored from the metadata
 *   store so analyses resolve identities inside the engine: an event's identity is
 *   `canonical_id` when a link for its distinct_id exists and `time >= from_time`, else its own
 *   distinct_id.
 * - `profiles`: one row per profile version (the latest `updated_at` per (project_id,
 *   distinct_id) wins; `deleted = 1` marks a `$delete`), properties as JSON plus key/value arrays.
 *   Keyed by the cluster's CANONICAL id at write time (ingestion resolves the op's distinct_id
 *   ignoring from_time; when a link joins an id with a profile into a cluster, that profile is
 *   merged into the canonical one and its own row marked deleted). Readers still resolve
 *   `distinct_id` through identity_links (ignoring from_time) and take the latest version per
 *   cluster. `batch_id` names the ingestion batch that wrote a version (redelivery check).
 *   DuckDB keeps one row per key (INSERT OR REPLACE); ClickHouse replaces at merge (read FINAL).
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
      properties String,
      prop_keys Array(String),
      prop_values Array(String),
      received_at Int64
    ) ENGINE = ReplacingMergeTree()
    PARTITION BY toYYYYMM(toDateTime(intDiv(time, 1000)))
    ORDER BY (project_id, event, time, distinct_id, insert_id)`,
    `CREATE TABLE IF NOT EXISTS identity_links (
      project_id UInt32,
      distinct_id String,
      canonical_id String,
      from_time Int64,
      created_at Int64
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
  ],
  duckdb: [
    `CREATE TABLE IF NOT EXISTS events (
      project_id INTEGER NOT NULL,
      id BIGINT NOT NULL,
      event VARCHAR NOT NULL,
      distinct_id VARCHAR NOT NULL,
      time BIGINT NOT NULL,
      insert_id VARCHAR NOT NULL,
      properties VARCHAR NOT NULL,
      prop_keys VARCHAR[] NOT NULL,
      prop_values VARCHAR[] NOT NULL,
      received_at BIGINT NOT NULL
    )`,
    `CREATE TABLE IF NOT EXISTS identity_links (
      project_id INTEGER NOT NULL,
      distinct_id VARCHAR NOT NULL,
      canonical_id VARCHAR NOT NULL,
      from_time BIGINT NOT NULL,
      created_at BIGINT NOT NULL,
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
  ],
};
