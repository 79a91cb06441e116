import { badRequest } from '../../http/errors.js';
import { DAY_MS } from '../dialects/index.js';
import { dateRange, type DateRange } from '../engine/range.js';
import type { Compare, DateRangeSpec } from './schema.js';

const MONTHS: Record<string, number> = { '3m': 3, '6m': 6, '12m': 12 };
const DAYS: Record<string, number> = { today: 1, '7d': 7, '30d': 30 };
const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * A DateRangeSpec → `[fromMs, toEndMs)` in UTC days. Presets end today (`yesterday` ends
 * yesterday): `7d` is the last 7 days including today, `3m` starts on the same day 3 months ago.
 * Absolute ranges go through the v0 check (a plain `invalid date range` 400).
 */
export function resolveRange(spec: DateRangeSpec, maxDays: number, now = Date.now()): DateRange {
  if (spec.kind === 'absolute') return dateRange(spec.from, spec.to, maxDays);
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  if (spec.preset === 'yesterday') return { fromMs: today - DAY_MS, toEndMs: today };
  if (DAYS[spec.preset]) return { fromMs: today - (DAYS[spec.preset] - 1) * DAY_MS, toEndMs: today + DAY_MS };
  const t = new Date(today);
  const from = Date.UTC(t.getUTCFullYear(), t.getUTCMonth() - MONTHS[spec.preset], t.getUTCDate());
  return dateRange(iso(from), iso(today), maxDays);
}

/**
 * The range of a v0 body: its `dateRange` (retention and flows may keep one instead of fixed days,
 * so a saved "last 30 days" rolls with the day it runs) resolved on `now`, else its `from`/`to`.
 */
export function bodyRange(body: { from?: unknown; to?: unknown; dateRange?: DateRangeSpec }, maxDays: number, now = Date.now()): DateRange {
  if (body.dateRange === undefined) return dateRange(body.from, body.to, maxDays);
  if (body.from !== undefined || body.to !== undefined) throw badRequest('invalid date range', { message: 'give dateRange or from and to, not both' });
  return resolveRange(body.dateRange, maxDays, now);
}

/** The comparison range: the same length right before (`previous_period`) or shifted back `days`. */
export function comparisonRange(range: DateRange, compare: Compare): DateRange {
  const shift = compare.kind === 'previous_period' ? range.toEndMs - range.fromMs : compare.days * DAY_MS;
  if (range.fromMs - shift < 0) throw badRequest('invalid date range', { message: 'the comparison range starts before 1970-01-01' });
  return { fromMs: range.fromMs - shift, toEndMs: range.toEndMs - shift };
}
