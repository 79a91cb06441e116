import { badRequest } from '../../http/errors.js';
import { DAY_MS, HOUR_MS, type Unit } from '../dialects/index.js';

/** `[fromMs, toEndMs)`: from 00:00 UTC of `from` to 00:00 UTC of the day after `to`. */
export interface DateRange {
  fromMs: number;
  toEndMs: number;
}

const invalid = () => badRequest('invalid date range');

export function parseDay(s: unknown): number {
  if (typeof s !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(s)) throw invalid();
  const ms = Date.parse(`${s}T00:00:00Z`);
  if (!Number.isFinite(ms) || new Date(ms).toISOString().slice(0, 10) !== s) throw invalid();
  return ms;
}

/** Parses and checks a query's `from`/`to` (400 `invalid date range` on any problem). */
export function dateRange(from: unknown, to: unknown, maxDays: number): DateRange {
  const fromMs = parseDay(from);
  const toMs = parseDay(to);
  if (fromMs > toMs) throw invalid();
  if ((toMs - fromMs) / DAY_MS + 1 > maxDays) throw invalid();
  return { fromMs, toEndMs: toMs + DAY_MS };
}

/** Start of the UTC calendar bucket holding `ms` (weeks start Monday). */
export function bucketStart(unit: Unit, ms: number): number {
  switch (unit) {
    case 'hour': return Math.floor(ms / HOUR_MS) * HOUR_MS;
    case 'day': return Math.floor(ms / DAY_MS) * DAY_MS;
    case 'week': {
      const day = Math.floor(ms / DAY_MS);
      return (day - (((day + 3) % 7) + 7) % 7) * DAY_MS;
    }
    case 'month': {
      const d = new Date(ms);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    }
  }
}

export function nextBucket(unit: Unit, start: number): number {
  switch (unit) {
    case 'hour': return start + HOUR_MS;
    case 'day': return start + DAY_MS;
    case 'week': return start + 7 * DAY_MS;
    case 'month': {
      const d = new Date(start);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    }
  }
}

/** Every bucket start touching the range, in order (the zero-fill list). */
export function bucketStarts(unit: Unit, range: DateRange): number[] {
  const out: number[] = [];
  for (let b = bucketStart(unit, range.fromMs); b < range.toEndMs; b = nextBucket(unit, b)) out.push(b);
  return out;
}

/** Bucket label: `YYYY-MM-DD` for day, week (its Monday) and month (its 1st); `YYYY-MM-DDTHH:00:00Z` for hour. */
export function bucketLabel(unit: Unit, start: number): string {
  const iso = new Date(start).toISOString();
  return unit === 'hour' ? `${iso.slice(0, 13)}:00:00Z` : iso.slice(0, 10);
}

/** How many buckets the range has (without listing them: hours over ten years are many). */
export function bucketCount(unit: Unit, range: DateRange): number {
  if (unit === 'hour' || unit === 'day') {
    const size = unit === 'hour' ? HOUR_MS : DAY_MS;
    return Math.ceil((range.toEndMs - bucketStart(unit, range.fromMs)) / size);
  }
  let n = 0;
  for (let b = bucketStart(unit, range.fromMs); b < range.toEndMs; b = nextBucket(unit, b)) n++;
  return n;
}
