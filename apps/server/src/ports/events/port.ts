/**
 * The event store port. Two implementations: ClickHouse (production) and DuckDB (embedded).
 * Analyses compile to SQL through a dialect (see query/dialects) and run here; rows come back as
 * plain objects with 64-bit integers as JS numbers.
 */
import type { MaterializedProperties } from './schema.js';
export type EventDialect = 'clickhouse' | 'duckdb';

/** Per-statement bounds the adapters enforce on `query` (config.ts: QUERY_TIMEOUT_MS, QUERY_MAX_MEMORY_MB). */
export interface QueryLimits {
  /** A read running longer is stopped (ClickHouse max_execution_time, DuckDB interrupt). */
  timeoutMs: number;
  /** Memory one read may use (ClickHouse max_memory_usage; DuckDB's instance memory_limit). */
  maxMemoryBytes: number;
}

export const DEFAULT_QUERY_LIMITS: QueryLimits = { timeoutMs: 30_000, maxMemoryBytes: 2048 * 1024 * 1024 };

/**
 * How one read stands among the others running (the query executor's fairness between
 * organisations). Engines that can favour some reads over others do; the rest ignore it.
 */
export interface ReadOptions {
  /**
   * The read's rank among its organisation's analyses running now: 1 for the organisation's first,
   * 2 for its second, and so on. A read of a better (lower) rank goes first: ClickHouse runs it with
   * `priority = rank`, pausing reads of worse ranks while it runs; DuckDB, which runs one statement
   * at a time, takes waiting statements by rank. Absent: the read takes no part (ingestion, jobs).
   */
  rank?: number;
  /**
   * Another organisation is active beside the read's (false: it has the engine to itself). Only
   * then does a rank past 1 cost the read its share of ClickHouse's threads and block size: alone,
   * an organisation's own analyses (a board's cards) read with the whole engine.
   */
  contended?: boolean;
}

/**
 * The rank of the adapters' own bookkeeping reads that every analysis makes before its first
 * statement, outside its organisation's slot (the query context: hasUnfoldedLinks, and on
 * ClickHouse unmergedRanges): short reads ranked as a quiet organisation's, so a flood's statements
 * yield to them as well. Unranked, a quiet organisation's analysis waited behind a flood's running
 * statement on DuckDB before it reached its own ranked reads (bench:fairness).
 */
export const BOOKKEEPING_RANK = 1;

/** A read the engine stopped at a bound of QueryLimits; the HTTP edge answers it 400 `query too large`. */
export class QueryLimitExceeded extends Error {
  constructor(readonly bound: 'timeout' | 'memory', readonly limits: QueryLimits) {
    super(bound === 'timeout'
      ? `it ran past the ${limits.timeoutMs / 1000} s statement timeout`
      : `it needed more than the ${Math.round(limits.maxMemoryBytes / 1024 / 1024)} MB memory cap`);
  }
}

/** One stored event, as written by the ingestion worker. */
export interface StoredEvent {
  project_id: number;
  /** Display id of the row (EventRow.id): unique enough, assigned at ingestion. */
  id: number;
  event: string;
  distinct_id: string;
  /** Unix ms. */
  time: number;
  /** `$insert_id`, or one generated at the API when the client sent none. */
  insert_id: string;
  /**
   * The properties, stored once: parallel arrays of the top-level keys and their values as text
   * (strings as they are, other values as JSON; what filters and breakdowns read in SQL), and
   * `prop_types`, one character per key: `s` where the value is a string, `j` where its text is
   * JSON. Together they give back the object exactly (eventProperties), so rows carry no JSON copy.
   */
  prop_keys: string[];
  prop_values: string[];
  prop_types: string;
  /** Unix ms when the API accepted the event. */
  received_at: number;
  /**
   * The event's identity under the links stored when it was written (the link's canonical_id
   * when one exists for distinct_id and time >= from_time, else distinct_id). Absent: the
   * adapters store distinct_id (a writer that resolved no link; fixtures, whose links are then
   * unfolded overrides). Never empty in the store: a statement writing events around the
   * adapter (fixtures in SQL) must set it, since DuckDB cannot default one column to another.
   */
  person_id?: string;
}

export interface WriteEventsOptions {
  /**
   * The rows may have been written before (a redelivered batch): only rows whose dedup key is not
   * stored yet are written, so a redelivery adds no row even before the engine's own dedup.
   */
  redelivered?: boolean;
}

/** One version of a profile, as stored (`profiles`): the latest `updated_at` per key wins. */
export interface StoredProfile {
  project_id: number;
  /** The cluster's canonical id at write time. */
  distinct_id: string;
  /** JSON object text ('{}' for a deleted profile). */
  properties: string;
  prop_keys: string[];
  prop_values: string[];
  updated_at: number;
  deleted: boolean;
  /** The batch that wrote this version (makes a redelivered batch a no-op). */
  batch_id: string;
}

/** What a profile read returns of a version. */
export type ProfileVersion = Pick<StoredProfile, 'distinct_id' | 'properties' | 'updated_at' | 'deleted' | 'batch_id'>;

/** An identity link mirrored into the event store (`identity_links`; the metadata store is authoritative). */
export interface StoredLink {
  project_id: number;
  distinct_id: string;
  canonical_id: string;
  from_time: number;
  created_at: number;
}

/** What `EventStore.materialize` did. */
export type MaterializeOutcome = 'materialized' | 'store-full' | 'share-full';

/** The organisation a runtime materialisation is charged to, and how many keys one may have. */
export interface MaterializeShare {
  organizationId: number;
  maxKeys: number;
}

/**
 * What domain code asks of the event store. Every engine difference (deduplication, upserts,
 * asynchronous deletes) lives in the adapters; callers never ask which engine runs.
 * Deleting data goes through one private helper per adapter (a condition over the data tables),
 * so further scopes (one person's ids) are one more method of the same shape.
 */
export interface EventStore {
  readonly dialect: EventDialect;
  /** Event property keys stored in columns of their own (schema.ts materializedProperties): reads use the column. */
  readonly materialized: MaterializedProperties;
  /**
   * Materialises one more key while the store runs, its column filled for the stored events
   * (DuckDB only: on ClickHouse an added column is computed at every read of older parts, so
   * MATERIALIZED_PROPERTIES stays the way there). `materialized` once `materialized` has the key
   * (at once, and charged to nobody, when it already had it); `store-full` when the store's limit
   * of runtime keys is reached; `share-full` when `share` names an organisation that has had its
   * share of them materialised already. Kept across restarts.
   */
  materialize?(key: string, share?: MaterializeShare): Promise<MaterializeOutcome>;
  /** Creates or updates tables idempotently (run at every start). */
  migrate(): Promise<void>;
  ping(): Promise<void>;
  /**
   * Stores a project's events, each dedup key (project, event, distinct_id, time, insert_id)
   * once however often it is written (redelivery, client retries, copies inside `rows`).
   */
  writeEvents(projectId: number, rows: StoredEvent[], opts?: WriteEventsOptions): Promise<void>;
  /** Which of `distinctIds` have any event of the project stored under them. */
  idsWithEvents(projectId: number, distinctIds: string[]): Promise<Set<string>>;
  /** Stored events per project (each dedup key once); projects without events are absent. */
  countEvents(projectIds: number[]): Promise<Map<number, number>>;
  /** The latest version of each of the given profile keys that has one. */
  latestProfiles(projectId: number, distinctIds: string[]): Promise<ProfileVersion[]>;
  /** Writes new profile versions (at most one per key and call). */
  writeProfiles(rows: StoredProfile[]): Promise<void>;
  /** Mirrors links (idempotent: writing a stored link again changes nothing). */
  writeLinks(rows: StoredLink[]): Promise<void>;
  /**
   * Folds up to `maxLinks` unfolded links created before `createdBefore` (Unix ms) into the
   * events (identity/fold.ts): sets `person_id` of every event row of each link's distinct_id to
   * the link's answer, and only once readers see those rows marks the links `folded`.
   * Idempotent; returns how many links it folded.
   */
  foldLinks(maxLinks: number, createdBefore: number): Promise<number>;
  /** Whether the project has a link not folded yet (readers must then join the unfolded links). */
  hasUnfoldedLinks(projectId: number): Promise<boolean>;
  /**
   * Time ranges [from, to) in Unix ms whose stored events may still hold several rows of one
   * dedup key: readers that count every row deduplicate those (ClickHouse FINAL) and read the
   * rest as stored. DuckDB: none (it dedups at write).
   */
  unmergedRanges(): Promise<Array<[number, number]>>;
  /**
   * Merges up to `max` event partitions that hold unmerged rows and had no write for `quietMs`
   * (data/compaction.ts), so readers stop deduplicating them; returns how many. DuckDB: 0.
   */
  mergeQuietPartitions(quietMs: number, max: number): Promise<number>;
  /**
   * Removes every event, link and profile of the project. May finish after it resolves
   * (ClickHouse runs deletes as mutations); readers stop seeing the project at the metadata store.
   */
  deleteProject(projectId: number): Promise<void>;
  /**
   * Retention: removes the project's events whose event time is before `beforeMs` (Unix ms), with
   * their materialised columns, and the `event_ids` of ids left without events. Resolves once
   * readers no longer see them (ClickHouse: after the mutations are done). Profiles and identity
   * links are not events and stay. Answers whether there was anything to delete (none: no write at
   * all, so a daily run over projects with nothing expired rewrites nothing).
   */
  deleteEventsBefore(projectId: number, beforeMs: number): Promise<boolean>;
  /**
   * Removes every event, profile version and identity link of the given distinct_ids (one person's
   * whole identity cluster), dedup keys included. Resolves once readers no longer see them
   * (ClickHouse: after the mutations are done).
   */
  deleteIdentities(projectId: number, distinctIds: string[]): Promise<void>;
  /**
   * One page of the events stored under the given distinct_ids, each dedup key once, in
   * (time, distinct_id, event, insert_id) order, strictly after `after` (a page's last row).
   */
  eventsOfIdentities(projectId: number, distinctIds: string[], after: EventPageKey | null, limit: number): Promise<ReadEvent[]>;
  /** Inserts events as given, no deduplication (tests and fixtures). */
  insertEvents(rows: StoredEvent[]): Promise<void>;
  /** Inserts rows into any table of the store (JSON-compatible values; arrays as arrays; tests and fixtures). */
  insertRows(table: string, rows: Record<string, unknown>[]): Promise<void>;
  query<T = Record<string, unknown>>(sql: string, opts?: ReadOptions): Promise<T[]>;
  /** A statement with no result (DDL, deletes). */
  command(sql: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * An event as read back. `properties`: the JSON copy that rows written before `prop_types` carry
 * ('' on the rows written since, whose object is rebuilt from the lists).
 */
export interface ReadEvent extends StoredEvent {
  properties: string;
}

/** A stored JSON object text as an object ({} for anything else). */
export function jsonObject(text: unknown): Record<string, unknown> {
  if (typeof text !== 'string' || !text) return {};
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The event's properties object: its JSON copy when the row has one, else rebuilt from its lists. */
export function eventProperties(r: { properties?: unknown; prop_keys?: unknown; prop_values?: unknown; prop_types?: unknown }): Record<string, unknown> {
  if (typeof r.properties === 'string' && r.properties !== '') return jsonObject(r.properties);
  const keys = Array.isArray(r.prop_keys) ? (r.prop_keys as string[]) : [];
  const values = Array.isArray(r.prop_values) ? (r.prop_values as string[]) : [];
  const types = typeof r.prop_types === 'string' ? r.prop_types : '';
  // A null-prototype object keeps a key named __proto__ as an own property, as JSON.parse does.
  const out: Record<string, unknown> = Object.create(null);
  for (let i = 0; i < keys.length; i++) {
    const text = String(values[i] ?? '');
    if (types[i] === 's') out[keys[i]] = text;
    else {
      try {
        out[keys[i]] = JSON.parse(text);
      } catch {
        out[keys[i]] = text;
      }
    }
  }
  return out;
}

/** Where a page of eventsOfIdentities ends (its last row's ordering key). */
export type EventPageKey = Pick<StoredEvent, 'time' | 'distinct_id' | 'event' | 'insert_id'>;

/** The person_id a row is stored with: its own, or its distinct_id when the writer resolved none. */
export const storedPersonId = (r: Pick<StoredEvent, 'person_id' | 'distinct_id'>) => r.person_id || r.distinct_id;

/** Rows of the data tables that belong to the given ids (links are matched on both ends). */
export function identitiesCondition(dialect: EventDialect, table: (typeof DATA_TABLES)[number], projectId: number, distinctIds: string[]): string {
  const ids = distinctIds.map((id) => sqlString(dialect, id)).join(', ');
  const own = `project_id = ${sqlInt(projectId)} AND (distinct_id IN (${ids})`;
  return table === 'identity_links' ? `${own} OR canonical_id IN (${ids}))` : `${own})`;
}

/** `(time, distinct_id, event, insert_id) > after` spelled out (no tuple comparison on every engine). */
export function afterKeyCondition(dialect: EventDialect, after: EventPageKey | null): string {
  if (!after) return '1 = 1';
  const t = sqlInt(after.time);
  const d = sqlString(dialect, after.distinct_id);
  const e = sqlString(dialect, after.event);
  const i = sqlString(dialect, after.insert_id);
  return `(time > ${t} OR (time = ${t} AND (distinct_id > ${d} OR (distinct_id = ${d} AND (event > ${e} OR (event = ${e} AND insert_id > ${i}))))))`;
}

export const EVENT_PAGE_ORDER = 'time, distinct_id, event, insert_id';

/** The event store's data tables, each keyed by project_id first. */
export const DATA_TABLES = ['events', 'identity_links', 'profiles', 'event_ids'] as const;

/** Latest version per distinct_id (rows of several versions may come back from an engine). */
export function latestPerKey(rows: ProfileVersion[]): ProfileVersion[] {
  const out = new Map<string, ProfileVersion>();
  for (const r of rows) {
    const prev = out.get(r.distinct_id);
    if (!prev || prev.updated_at < r.updated_at) out.set(r.distinct_id, r);
  }
  return [...out.values()];
}

/** A profile version from an engine's row (64-bit integers and booleans arrive as numbers or strings). */
export function toProfileVersion(r: { distinct_id: string; properties: string; updated_at: unknown; deleted: unknown; batch_id: string }): ProfileVersion {
  return {
    distinct_id: r.distinct_id, properties: r.properties, updated_at: Number(r.updated_at), deleted: Number(r.deleted) === 1, batch_id: r.batch_id,
  };
}

/** SQL string literal for the given dialect (ClickHouse 18.16 has no server-side query parameters). */
export function sqlString(dialect: EventDialect, value: string): string {
  if (dialect === 'clickhouse') return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  return `'${value.replace(/'/g, "''")}'`;
}

/** SQL integer literal; refuses anything that is not a safe integer, so callers cannot inject text. */
export function sqlInt(value: number): string {
  if (!Number.isSafeInteger(value)) throw new Error(`not a safe integer: ${value}`);
  return String(value);
}
