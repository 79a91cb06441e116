import type { Config } from '../../config.js';
import { badRequest } from '../../http/errors.js';
import type { EventStore, ReadOptions } from '../../ports/events/index.js';
import { sqlInt } from '../../ports/events/index.js';
import type { Unit } from '../dialects/index.js';
import { bucketCount, type DateRange } from './range.js';

/**
 * The query cost guard's checks in the service (the engines enforce the statement timeout and the
 * memory cap themselves, see ports/events). Before running: series × buckets against
 * `maxCells`. Breakdown values are unknown before running, so every engine answer is read with
 * `LIMIT maxRows + 1` (nothing larger ever reaches Node) and a segmentation whose zero-filled
 * series × buckets pass `maxCells` is refused before it is built. docs/hardening.md.
 */
export type QueryGuard = Pick<Config['queryGuard'], 'maxCells' | 'maxRows'>;

/** 400 `query too large: S series × B buckets exceeds N: narrow …` when the product passes the limit. */
export function checkCells(guard: QueryGuard, series: number, buckets: number, narrow: string[]): void {
  if (series * buckets <= guard.maxCells) return;
  throw badRequest(`query too large: ${series} series × ${buckets} buckets exceeds ${guard.maxCells}: narrow ${narrow.join(', ')}`, {
    message: `narrow it: ${narrow.join(', ')}`,
  });
}

/** What to narrow when buckets of `unit` are too many (nothing coarser than a month). */
export const coarserUnit = (unit: Unit) => (unit === 'month' ? [] : [`the unit (${unit} → a coarser one)`]);

/**
 * A v0 analysis with a unit, before it runs: one series of its buckets (a breakdown adds series
 * whose number is only known after running: checkBreakdownCells). Funnels and flows have no
 * buckets: their rows are bounded by `maxRows`. Each analysis's estimate (kinds/) calls this or
 * checkCells.
 */
export function checkBuckets(guard: QueryGuard, unit: Unit, range: DateRange): void {
  checkCells(guard, 1, bucketCount(unit, range), [...coarserUnit(unit), 'the date range (from/to)']);
}

/** 400 when a segmentation's series, known after running, times its buckets pass the limit. */
export function checkBreakdownCells(guard: QueryGuard, series: number, buckets: number, breakdown: string): void {
  checkCells(guard, series, buckets, [`the breakdown (${JSON.stringify(breakdown).slice(0, 100)} has ${series} values in range: a property with fewer values, or filters)`, 'the date range (from/to)', 'the unit']);
}

/**
 * The event store as analyses see it: every read capped at `maxRows` rows (one more is fetched to
 * tell), so an answer of unknown size (a breakdown on a property unique per event) never reaches
 * Node whole. Other members pass through.
 */
export function boundedEvents(events: EventStore, guard: QueryGuard): EventStore {
  const query = async <T>(sql: string, opts?: ReadOptions): Promise<T[]> => {
    const rows = await events.query<T>(`SELECT * FROM (${sql}) bounded LIMIT ${sqlInt(guard.maxRows + 1)}`, opts);
    if (rows.length > guard.maxRows) {
      throw badRequest(`query too large: the answer has more than ${guard.maxRows} rows: narrow the breakdown (a property with fewer values, or filters), the date range or the unit`, {
        message: 'narrow it: a breakdown on a property with fewer values, filters, a shorter date range or a coarser unit',
      });
    }
    return rows;
  };
  return withQuery(events, query);
}

/**
 * The event store with every read led by `/* <tag> *\/` (the executor names the organisation and
 * project) and run with `read` (the run's rank in its organisation; a function is asked at each
 * statement). ClickHouse keeps a query's
 * text as sent in system.processes and system.query_log, where 18.16 has no `log_comment` setting
 * (an unknown setting is an error there) and current releases accept the comment alike. Only
 * letters, digits, `=`, `_`, `-` and spaces pass into it.
 */
export function taggedEvents(events: EventStore, tag: string, read: ReadOptions | (() => ReadOptions) = {}): EventStore {
  const comment = `/* ${tag.replace(/[^\w= -]/g, '')} */ `;
  const options = typeof read === 'function' ? read : () => read;
  return withQuery(events, <T>(sql: string, opts?: ReadOptions) => events.query<T>(comment + sql, { ...opts, ...options() }));
}

/** `events` with its `query` replaced; other members pass through to the store itself. */
function withQuery(events: EventStore, query: EventStore['query']): EventStore {
  return new Proxy(events, {
    get(target, prop) {
      if (prop === 'query') return query;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
