import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import type { EventStore, StoredEvent } from './port.js';
import { EVENT_STORE_DDL } from './schema.js';
import { sqlString } from './port.js';

/** Turns DuckDB's JS values into plain JSON-friendly ones (BIGINT -> number). */
function plain(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = plain(v);
    return out;
  }
  return value;
}

/** Embedded event store: a DuckDB file in DATA_DIR (or in memory for tests). */
export class DuckDbEventStore implements EventStore {
  readonly dialect = 'duckdb' as const;
  private instance?: DuckDBInstance;
  private conn?: DuckDBConnection;
  /** DuckDB connections run one statement at a time; writes are serialised through this chain. */
  private writeChain: Promise<unknown> = Promise.resolve();

  constructor(private file: string) {}

  private async connection(): Promise<DuckDBConnection> {
    if (!this.conn) {
      if (this.file !== ':memory:') fs.mkdirSync(path.dirname(this.file), { recursive: true });
      this.instance = await DuckDBInstance.create(this.file);
      this.conn = await this.instance.connect();
    }
    return this.conn;
  }

  private serialise<T>(work: () => Promise<T>): Promise<T> {
    const next = this.writeChain.then(work, work);
    this.writeChain = next.catch(() => undefined);
    return next;
  }

  async migrate(): Promise<void> {
    const conn = await this.connection();
    for (const ddl of EVENT_STORE_DDL.duckdb) await conn.run(ddl);
  }

  async ping(): Promise<void> {
    await (await this.connection()).run('SELECT 1');
  }

  insertEvents(rows: StoredEvent[]): Promise<void> {
    return this.insertRows('events', rows as unknown as Record<string, unknown>[]);
  }

  /** Inserts through a VALUES list built from JSON (one statement per call). */
  async insertRows(table: string, rows: Record<string, unknown>[]): Promise<void> {
    if (rows.length === 0) return;
    const columns = Object.keys(rows[0]);
    const literal = (v: unknown): string => {
      if (v === null || v === undefined) return 'NULL';
      if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'NULL';
      if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE';
      if (Array.isArray(v)) return `[${v.map(literal).join(', ')}]::VARCHAR[]`;
      return sqlString('duckdb', String(v));
    };
    const values = rows.map((r) => `(${columns.map((c) => literal(r[c])).join(', ')})`).join(',\n');
    const sql = `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${values}`;
    await this.serialise(async () => (await this.connection()).run(sql));
  }

  async query<T>(sql: string): Promise<T[]> {
    const reader = await this.serialise(async () => (await this.connection()).runAndReadAll(sql));
    return reader.getRowObjectsJS().map((r) => plain(r) as T);
  }

  async command(sql: string): Promise<void> {
    await this.serialise(async () => (await this.connection()).run(sql));
  }

  async close(): Promise<void> {
    await this.writeChain;
    this.conn?.closeSync();
    this.instance?.closeSync();
    this.conn = undefined;
    this.instance = undefined;
  }
}
