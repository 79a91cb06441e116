/**
 * The event store port. Two implementations: ClickHouse (production) and DuckDB (embedded).
 * Analyses compile to SQL through a dialect (see query/dialects) and run here; rows come back as
 * plain objects with 64-bit integers as JS numbers.
 */
export type EventDialect = 'clickhouse' | 'duckdb';

/** One stored event, as written by the ingestion worker. */
export interface StoredEvent {
  project_id: number;
  /** Display id of the row (EventRow.id): unique enough, assigned at ingestion. */
  id: number;
  event: string;
  distinct_id: string;
  /** Unix ms. */
  time: number;
  /** `$insert_id`, or one generated at the API when the client sent none. */
  insert_id: string;
  /** The stored properties as a JSON string (what EventRow.properties returns). */
  properties: string;
  /** Parallel arrays: top-level property keys and their values as strings (for filters and breakdowns in SQL). */
  prop_keys: string[];
  prop_values: string[];
  /** Unix ms when the API accepted the event. */
  received_at: number;
}

export interface EventStore {
  readonly dialect: EventDialect;
  /** Creates or updates tables idempotently (run at every start). */
  migrate(): Promise<void>;
  ping(): Promise<void>;
  insertEvents(rows: StoredEvent[]): Promise<void>;
  /** Inserts rows into any table of the store (JSON-compatible values; arrays as arrays). */
  insertRows(table: string, rows: Record<string, unknown>[]): Promise<void>;
  query<T = Record<string, unknown>>(sql: string): Promise<T[]>;
  /** A statement with no result (DDL, deletes). */
  command(sql: string): Promise<void>;
  close(): Promise<void>;
}

/** SQL string literal for the given dialect (ClickHouse 18.16 has no server-side query parameters). */
export function sqlString(dialect: EventDialect, value: string): string {
  if (dialect === 'clickhouse') return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  return `'${value.replace(/'/g, "''")}'`;
}

/** SQL integer literal; refuses anything that is not a safe integer, so callers cannot inject text. */
export function sqlInt(value: number): string {
  if (!Number.isSafeInteger(value)) throw new Error(`not a safe integer: ${value}`);
  return String(value);
}
