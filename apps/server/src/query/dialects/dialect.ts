import type { EventDialect, MaterializedProperties } from '../../ports/events/index.js';

export type Unit = 'hour' | 'day' | 'week' | 'month';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
export const WEEK_MS = 7 * DAY_MS;
/** A gap of this long without events ends a session (product decision: 30 minutes), in analyses and data browsing. */
export const SESSION_GAP_MS = 30 * 60 * 1000;

/**
 * The data-browsing queries (data/store.ts) in this engine's spelling. Arguments are SQL
 * fragments the store built (subqueries, quoted literals); `p` is the project id as SQL.
 */
export interface DataSql {
  /**
   * The project's deduplicated events (ClickHouse FINAL; DuckDB dedups at write) with `columns` plus
   * `person`: the link's canonical_id when a link exists for the distinct_id and `time >= from_time`,
   * else the distinct_id (read as the row's person_id, joining only the unfolded links). `where` filters raw events (unqualified `events` columns) before the join.
   */
  resolvedEvents(p: string, where: string, columns: string[]): string;
  /** Current profiles resolved to their cluster (ignoring from_time): `person`, `properties`, `updated_at`, one row per person, deleted ones excluded. */
  resolvedProfiles(p: string): string;
  /** After `FROM events`: reads each dedup key once (ClickHouse FINAL; DuckDB dedups at write). */
  final: string;
  /** Property keys with counts and up to 5 sample values; `ev` is '' or ` AND event = ...`. */
  properties(p: string, ev: string): string;
  /** People (persons' events unioned with live profiles): person, first_seen, last_seen, event_count, properties. */
  persons(events: string, profiles: string, only: string): string;
  /** WHERE clause finding `s` (a quoted literal) in the person or their properties, case-insensitively. */
  userSearch(s: string): string;
  /** ORDER BY of the users list (people without events last). */
  usersOrder: string;
  /** Sessions of one person over `src` (rows of `who`). */
  sessionsOf(src: string, who: string): string;
  /** Sessions starting since `weekAgo` over `recent` (events from a gap before it). */
  recentSessions(recent: string, weekAgo: number): string;
  /** Exact count of distinct values. */
  distinct(x: string): string;
}

/**
 * Flows' per-engine part: the ranked paths (columns `p`, the names joined by `sep`, and `n`, the
 * identities) of the identities in `events` having `anchor`, read from their first anchor.
 */
export interface FlowPathsSpec {
  projectId: number;
  fromMs: number;
  toEndMs: number;
  /** Canonical events of the range (`canonicalEvents`, with props when `anchor` needs them). */
  events: string;
  /** Condition (raw event columns) matching the anchor; `anchorName` is its name on the path. */
  anchor: string;
  anchorName: string;
  direction: 'after' | 'before';
  steps: number;
  limit: number;
  sep: string;
  /**
   * The range's event names, sorted, when the dialect asked for them first (`flowNames`): the
   * paths then read them as constants. Events of a name not in the list (written since) are left out.
   */
  names?: string[];
}

/**
 * The materialised column `propValue`/`propHas` read for `key` instead of the lists: only over the
 * events' own lists (`keys` at its default), never another table's (profiles' `profile_keys`).
 */
export const materializedColumn = (d: Pick<Dialect, 'materialized'>, key: string, keys: string): string | undefined =>
  (keys === 'prop_keys' ? d.materialized.get(key) : undefined);

/** Which event rows a read deduplicates: all, none, or those inside these [from, to) ms ranges. */
export type Dedup = boolean | ReadonlyArray<readonly [number, number]>;

/**
 * What an analysis compiler needs from an engine. Most methods are spellings: both
 * implementations produce SQL of the same shape (same subqueries, same columns, arrays and lambdas
 * over per-identity groups). Where the fast plan differs per engine (sessions, funnel chains,
 * flows), the dialect owns the whole step (`dialects/<engine>/<analysis>.ts`) behind one method
 * with the same columns in and out. Every expression works on Unix-ms Int64 `time` and the
 * parallel `prop_keys`/`prop_values` arrays. Domain code asks the dialect, never which engine runs.
 */
export interface Dialect {
  readonly name: EventDialect;
  /**
   * The event store's materialised properties (EventStore.materialized): `propValue`/`propHas` of
   * such a key over the events' own columns (`keys`/`values` left at their defaults) read its
   * column instead of the lists, and `canonicalEvents` passes the columns on with `props`.
   */
  readonly materialized: MaterializedProperties;
  str(value: string): string;
  /**
   * Value of a property (string) or NULL/'' when absent: only meaningful together with `propHas`.
   * `keys`/`values` name other lists (profiles' `profile_keys`/`profile_values`).
   */
  propValue(key: string, keys?: string, values?: string): string;
  propHas(key: string, keys?: string): string;
  /** Property value, or `missing` when the key is absent (for breakdowns). */
  propValueOr(key: string, missing: string): string;
  /** Whether the property is present and a plain decimal (`-12`, `3.5`): what numeric aggregations read. */
  propIsNumber(key: string): string;
  /** The property as a Float64: only meaningful where `propIsNumber` holds. */
  propNumber(key: string): string;
  contains(haystack: string, needle: string): string;
  /**
   * Events of a project (deduplicated) with their identity resolved: columns `event`, `time`,
   * `cid` and, with `props`, `prop_keys`/`prop_values` and the materialised columns. `where` conditions see the raw event
   * columns (event, time, distinct_id, prop_keys, prop_values). The identity is the row's
   * `person_id` (resolved at write time) unless its distinct_id has an unfolded link, whose rule
   * then decides: only those few links are joined, and `overrides: false` (the project has none,
   * QueryContext.overrides) skips the join and reads person_id alone. `identity: false` skips
   * identities (cid = distinct_id) for counts that never look at them.
   * `dedup: false` allows unmerged duplicates of the dedup key (ClickHouse reads without FINAL):
   * only for analyses a duplicate cannot change (unique counts, funnels, retention, sessions) or
   * that deduplicate themselves. `dedup` as time ranges (QueryContext.unmerged, via dedupOf):
   * only rows inside them may have copies, so only those are read deduplicated. `cols` passes more raw event columns through (e.g. `insert_id`).
   * `exprs` (`[alias, expression over raw columns]`) are computed in the scan, before the link
   * join, and passed through as `alias`: the join then carries a scalar instead of the property
   * arrays (on ClickHouse 18.16 carrying `prop_keys`/`prop_values` through the join doubled the
   * cost of a breakdown).
   * `key: true` makes `cid` the identity's number (the events' `person_key`, PERSON_KEY_SQL of the
   * canonical id under an unfolded link) instead of its string: for analyses that only group or
   * count identities and never show them or compare them with another table's ids.
   */
  canonicalEvents(opts: { projectId: number; where: string[]; props?: boolean; identity?: boolean; overrides?: boolean; key?: boolean; dedup?: Dedup; cols?: string[]; exprs?: Array<[string, string]> }): string;
  /**
   * Canonical ids (column `cid`, possibly repeated) of the identities with at least one event
   * matching `where` (raw event columns), any duplicates allowed: events are reduced per
   * distinct_id (first and last time) before the link lookup, so the join sees one row per id.
   */
  canonicalIds(projectId: number, where: string[], overrides?: boolean): string;
  /** Live (not deleted) profiles resolved to canonical ids (links ignore from_time): `cid`, `profile_keys`, `profile_values`. */
  canonicalProfiles(projectId: number, where?: string[]): string;
  /** Start (Unix ms, UTC) of the calendar bucket holding `expr` (Unix ms). Weeks start Monday. */
  bucket(unit: Unit, expr: string): string;
  uniq(expr: string): string;
  countIf(cond: string): string;
  sumIf(expr: string, cond: string): string;
  minIf(expr: string, cond: string): string;
  /** Per group: array of `value` ordered by the `orderBy` expressions (ascending). */
  groupArraySorted(value: string, orderBy: string[]): string;
  /** Per group: array of `value` (any order). */
  groupArray(value: string): string;
  /** `[body(i) for i in 1..length(arr)]` */
  mapIdx(arr: string, i: string, body: string): string;
  /** `[i for i in 1..length(arr) if cond(i)]` */
  filterIdx(arr: string, i: string, cond: string): string;
  map(arr: string, x: string, body: string): string;
  filter(arr: string, x: string, cond: string): string;
  /** Smallest element, 0 for an empty array. */
  minOr0(arr: string): string;
  length(arr: string): string;
  distinct(arr: string): string;
  /** One row per element (in a SELECT list). */
  explode(arr: string): string;
  /** 1-based slice of at most `len` elements. */
  slice(arr: string, offset: string, len: string): string;
  join(arr: string, sep: string): string;
  /** Integer division (floor for non-negative operands). */
  intDiv(a: string, b: string): string;
  toFloat(expr: string): string;
  maxOr0(arr: string): string;
  /** Sum of a numeric array's elements, 0 for an empty array. */
  sumOr0(arr: string): string;
  concat(a: string, b: string): string;
  groupArrayIf(value: string, cond: string): string;
  /** Aggregate: the `n` smallest values of `value` over the rows where `cond` holds, ascending (empty when none). */
  smallestIf(value: string, cond: string, n: string): string;
  uniqIf(expr: string, cond: string): string;
  /**
   * Experiments' join (experiments/sql.ts): every row of `units` (one per `key`, few) with the rows
   * of `events` (many) sharing its `key`, the units being the hash table; a unit without events
   * comes once, its events' columns NULL (DuckDB) or their defaults (ClickHouse). A FROM clause.
   */
  unitsJoin(units: string, events: string, key: string): string;
  /**
   * A WHERE condition (always true) naming columns of the subquery read only inside lambdas:
   * ClickHouse 18.16 prunes subquery columns referenced only in lambda bodies otherwise.
   */
  keep(cols: string[]): string;
  /** ORDER BY position when sorting an array of strings (ascending). */
  sortStrings(arr: string): string;
  /** 1 when `cond` holds, else 0, as a small integer (per-row flags summed or maxed later). */
  flag(cond: string): string;
  /** A zero of the type `count`/`countIf` return (a placeholder column beside counts in a UNION ALL). */
  countZero(): string;
  /** `expr` as a signed 64-bit integer. */
  int64(expr: string): string;
  /** Array elements as signed 64-bit integers (ClickHouse's intDiv narrows them). */
  int64s(arr: string): string;
  /** An empty array of strings. */
  emptyStrings(): string;
  /** The array `[0, 1, …, n - 1]`. */
  range0(n: string): string;
  /** Subquery of the distinct_ids linked to the canonical id `canonicalId` (an SQL string expression). */
  linkedIds(projectId: number, canonicalId: string): string;
  /**
   * Sessions per bucket of their first event (columns `b`, `n`, `avg_ms`): per `cid` of `events`,
   * a gap of `gapMs` or more between consecutive times starts a new session; duration is last
   * time minus first. `fromMs`: no time of `events` is earlier.
   */
  sessions(events: string, unit: Unit, gapMs: number, fromMs: number): string;
  /**
   * Funnel paths: `perEvent` rows (`cid`, `time`, `bv`, `f0`…`f{steps-1}` step flags) to one row per
   * identity with a step-0 event: `cid`, `level` (steps reached), `seg` (the `bv` of the chosen
   * start), `durs` (Int64 array, time from the start to each reached step). Greedy chains per start;
   * the path: most steps, then earliest start, then smallest `bv` (semantics in `query/kinds/funnel/compile.ts`).
   * `rangeMs`: the length of the range the events are in (bounds their times' spread).
   * `breakdown`: whether `bv` varies (false: it is one constant, which `seg` may be taken as).
   */
  funnelPaths(perEvent: string, steps: number, windowMs: number, rangeMs: number, breakdown: boolean): string;
  /** Flows' ranked paths (see FlowPathsSpec), ordered by `n` descending then `p`, at most `limit`. */
  flowPaths(spec: FlowPathsSpec): string;
  /**
   * When the dialect's flows want the range's event names first (FlowPathsSpec.names): the query
   * answering them sorted (column `a`, an array) and the most bytes of names it takes as constants.
   */
  flowNames?: { sql(projectId: number, fromMs: number, toEndMs: number): string; maxBytes: number };
  /**
   * Unique identities per bucket and segment, and over the whole range per segment, in one pass:
   * rows `b`, `seg`, `v` from `events` (columns `cid`, `seg`, `bk`), the range totals as `b` = -1.
   */
  uniqueBuckets(events: string): string;
  /** The data-browsing queries. */
  readonly data: DataSql;
}
