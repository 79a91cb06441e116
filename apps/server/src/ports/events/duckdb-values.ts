/** How the DuckDB store writes and reads values: list encodings, dedup keys, plain JSON values. */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { JSDuckDBValueConverter, type DuckDBDataChunk } from '@duckdb/node-api';
import { sqlString, type StoredEvent } from './port.js';

export const str = (v: string) => sqlString('duckdb', v);

/** A materialised property's value from the row's lists (NULL without the key, as list indexing gives). */
export const materializedValue = (key: string, row = '') => `${row}prop_values[list_position(${row}prop_keys, ${str(key)})]`;

/** A list as one string, each element preceded by NUL (split back in SQL by splitList). */
export function joinList(items: string[]): string {
  let out = '';
  for (const item of items) out += '\u0000' + (item.includes('\u0000') ? item.replace(/\u0000/g, '\uFFFD') : item);
  return out;
}

/** SQL: the list joinList made of the column `column`. */
export const splitList = (column: string) => `string_split(${column}, chr(0))[2:]`;

/** Same dedup key (event, distinct_id, time, insert_id). */
export const sameKey = (a: StoredEvent, b: StoredEvent) => a.time === b.time && a.insert_id === b.insert_id && a.event === b.event && a.distinct_id === b.distinct_id;

/** Turns DuckDB's JS values into plain JSON-friendly ones (BIGINT -> number). */
export function plain(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = plain(v);
    return out;
  }
  return value;
}

/**
 * A result's rows as plain objects, a chunk (2,048 rows) at a time with the event loop let in
 * between: an answer near the row cap (100,001 rows) converted in one go held the process for up
 * to a second on a loaded machine, and /health with it.
 */
export async function rowObjects<T>(names: string[], chunks: DuckDBDataChunk[]): Promise<T[]> {
  const rows: T[] = [];
  for (const [i, chunk] of chunks.entries()) {
    if (i > 0) await yieldToEventLoop();
    for (const values of chunk.convertRows(JSDuckDBValueConverter)) {
      const row: Record<string, unknown> = {};
      values.forEach((v, c) => { row[names[c]] = plain(v); });
      rows.push(row as T);
    }
  }
  return rows;
}

/** Fills `event_ids` from the stored events (at migrate, once; bench:query after its bulk load). */
export const FILL_EVENT_IDS = 'INSERT OR IGNORE INTO event_ids SELECT DISTINCT project_id, distinct_id FROM events';
