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
