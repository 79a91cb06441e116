import path from 'node:path';
import type { EventStore } from './port.js';
import { ClickHouseEventStore } from './clickhouse.js';
import { DuckDbEventStore } from './duckdb.js';

import type { QueryLimits } from './port.js';
import { materializedProperties, type ClickHouseCluster } from './schema.js';

export type { EventStore, MaterializeOutcome, MaterializeShare, StoredEvent, EventDialect, StoredProfile, ProfileVersion, StoredLink, QueryLimits, ReadOptions } from './port.js';
export type { ClickHouseCluster, MaterializedProperties } from './schema.js';
export { sqlString, sqlInt, eventProperties, jsonObject, QueryLimitExceeded, DEFAULT_QUERY_LIMITS } from './port.js';

export function openEventStore(opts: {
  clickhouse?: { url: string; database: string; username?: string; password?: string; cluster?: ClickHouseCluster };
  dataDir: string;
  duckdbFile?: string;
  limits?: QueryLimits;
  /** Event property keys to store in columns of their own (MATERIALIZED_PROPERTIES). */
  materialized?: string[];
}): EventStore {
  const materialized = materializedProperties(opts.materialized ?? []);
  if (opts.clickhouse) return new ClickHouseEventStore(opts.clickhouse, opts.limits, materialized);
  return new DuckDbEventStore(opts.duckdbFile ?? path.join(opts.dataDir, 'events.duckdb'), opts.limits, materialized);
}
