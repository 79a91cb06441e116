import type { EventDialect, MaterializedProperties } from '../../ports/events/index.js';
import type { Dialect } from './dialect.js';
import { clickhouse } from './clickhouse/index.js';
import { duckdb } from './duckdb/index.js';

export type { Dialect, Unit, FlowPathsSpec, DataSql } from './dialect.js';
export { HOUR_MS, DAY_MS, WEEK_MS, SESSION_GAP_MS } from './dialect.js';

/** The engine's dialect; with the store's materialised properties, one that reads their columns. */
export function dialectFor(name: EventDialect, materialized?: MaterializedProperties): Dialect {
  const base = name === 'clickhouse' ? clickhouse : duckdb;
  return materialized?.size ? { ...base, materialized } : base;
}
