import { createClient, type ClickHouseClient } from '@clickhouse/client';
import type { EventStore, StoredEvent } from './port.js';
import { EVENT_STORE_DDL } from './schema.js';

/** ClickHouse event store (HTTP interface; SQL kept to what 18.16 and current releases share). */
export class ClickHouseEventStore implements EventStore {
  readonly dialect = 'clickhouse' as const;
  private client: ClickHouseClient;

  constructor(private opts: { url: string; database: string; username?: string; password?: string }) {
    this.client = this.makeClient(opts.database);
  }

  private makeClient(database: string) {
    return createClient({
      url: this.opts.url,
      database,
      username: this.opts.username,
      password: this.opts.password,
      request_timeout: 120_000,
      clickhouse_settings: {
        output_format_json_quote_64bit_integers: 0,
        // Progress headers keep long analyses' connections alive behind idle-timeout proxies.
        send_progress_in_http_headers: 1,
        http_headers_progress_interval_ms: '10000',
      },
    });
  }

  async migrate(): Promise<void> {
    if (this.opts.database !== 'default') {
      const admin = this.makeClient('default');
      try {
        await admin.command({ query: `CREATE DATABASE IF NOT EXISTS \`${this.opts.database.replace(/`/g, '')}\`` });
      } finally {
        await admin.close();
      }
    }
    for (const ddl of EVENT_STORE_DDL.clickhouse) await this.client.command({ query: ddl });
  }

  async ping(): Promise<void> {
    const r = await this.client.ping();
    if (!r.success) throw r.error;
  }

  insertEvents(rows: StoredEvent[]): Promise<void> {
    return this.insertRows('events', rows as unknown as Record<string, unknown>[]);
  }

  async insertRows(table: string, rows: Record<string, unknown>[]): Promise<void> {
    if (rows.length === 0) return;
    await this.client.insert({ table, values: rows, format: 'JSONEachRow' });
  }

  async query<T>(sql: string): Promise<T[]> {
    const result = await this.client.query({ query: sql, format: 'JSONEachRow' });
    return (await result.json()) as T[];
  }

  async command(sql: string): Promise<void> {
    await this.client.command({ query: sql });
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
