import { z } from 'zod';
import './zod-openapi.js';

/**
 * What metadata columns can hold, checked at the edge so a value one store refuses is a 4xx on
 * both stores alike instead of a failed write (5xx) on PostgreSQL only.
 */

/**
 * A string for a text column: PostgreSQL text refuses NUL characters (SQLite keeps them). JSON
 * documents stored as text need no such check (JSON escapes NUL).
 */
export const text = () => z.string().refine((s) => !s.includes('\u0000'), 'must not contain NUL characters');

/** The largest `increments()` id (a 32-bit integer column on PostgreSQL): larger ids exist nowhere. */
export const MAX_ROW_ID = 2_147_483_647;
export const isRowId = (id: number) => Number.isSafeInteger(id) && id > 0 && id <= MAX_ROW_ID;

/** A calendar day, `YYYY-MM-DD`, that exists (2024-02-30 does not). */
export const DaySchema = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'expected a date YYYY-MM-DD')
  .refine((s) => {
    const ms = Date.parse(`${s}T00:00:00Z`);
    return Number.isFinite(ms) && new Date(ms).toISOString().slice(0, 10) === s;
  }, 'not a calendar date')
  .openapi({ type: 'string', format: 'date' });

/**
 * The dotted path of the first string or member name holding a NUL character ('' for a bare
 * string), or undefined. Neither engine takes NUL in a SQL literal and PostgreSQL text refuses it,
 * so validated input is refused at the edge rather than half-stored. Iterative: a deeply nested
 * document cannot overflow the stack.
 */
export function nulPath(value: unknown): string | undefined {
  const stack: Array<[unknown, string]> = [[value, '']];
  while (stack.length) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return path;
      continue;
    }
    if (!v || typeof v !== 'object') continue;
    for (const [key, child] of Object.entries(v)) {
      const at = path ? `${path}.${key}` : key;
      if (key.includes('\u0000')) return at;
      stack.push([child, at]);
    }
  }
  return undefined;
}
