import path from 'node:path';
import type { EventStore } from './port.js';
import { ClickHouseEventStore } from './clickhouse.js';
import { DuckDbEventStore } from './duckdb.js';

export type { EventStore, StoredEvent, EventDialect, StoredProfile, ProfileVersion, StoredLink } from './port.js';
export { sqlString, sqlInt } from './port.js';

export function openEventStore(opts: {
  clickhouse?: { url: string; database: string; username?: string; password?: string };
  dataDir: string;
  duckdbFile?: string;
}): EventStore {
  if (opts.clickhouse) return new ClickHouseEventStore(opts.clickhouse);
  return new DuckDbEventStore(opts.duckdbFile ?? path.join(opts.dataDir, 'events.duckdb'));
}
