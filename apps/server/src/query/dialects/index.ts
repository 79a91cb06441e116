import type { EventDialect } from '../../ports/events/index.js';
import type { Dialect } from './dialect.js';
import { clickhouse } from './clickhouse/index.js';
import { duckdb } from './duckdb/index.js';

export type { Dialect, Unit, FlowPathsSpec, DataSql } from './dialect.js';
export { HOUR_MS, DAY_MS, WEEK_MS, SESSION_GAP_MS } from './dialect.js';

export function dialectFor(name: EventDialect): Dialect {
  return name === 'clickhouse' ? clickhouse : duckdb;
}
