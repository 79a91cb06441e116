import { z } from 'zod';

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
