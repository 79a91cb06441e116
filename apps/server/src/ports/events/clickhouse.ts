import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { createClient, type ClickHouseClient, type ErrorLogParams, type Logger, type WarnLogParams } from '@clickhouse/client';
import type { EventPageKey, EventStore, ProfileVersion, QueryLimits, ReadEvent, ReadOptions, StoredEvent, StoredLink, StoredProfile, WriteEventsOptions } from './port.js';
import { BOOKKEEPING_RANK, DEFAULT_QUERY_LIMITS, QueryLimitExceeded, DATA_TABLES, EVENT_PAGE_ORDER, afterKeyCondition, identitiesCondition, latestPerKey, sqlInt, sqlString, storedPersonId, toProfileVersion } from './port.js';
import { JsonRowsEncoder } from './json-rows.js';
import { ADDED_COLUMNS, EVENT_IDS_FILLED, EVENT_STORE_DDL, NO_MATERIALIZED, eventIdsFeedDdl, PERSON_KEY_SQL, SHARDED_TABLES, clusterDdl, quoteIdent, type ClickHouseCluster, type MaterializedProperties } from './schema.js';
import { checkClickHouseVersion, readClickHouseVersion } from './clickhouse-version.js';
import { parseMaxThreads, rankedReadSettings } from './clickhouse-share.js';
import { GuardQuietLogger, limitError } from './clickhouse-limits.js';
import { FOLD_SQL_BYTES, deleteSql, foldChunks, mutationSql, storedTable, waitForMutations } from './clickhouse-mutations.js';
import { eventParts, systemTables, unmergedPartitionsSql } from './clickhouse-parts.js';

/** The columns an event insert writes (StoredEvent's fields). */
const STORED_EVENT_COLUMNS: [string, ...string[]] = ['project_id', 'id', 'event', 'distinct_id', 'time', 'insert_id', 'prop_keys', 'prop_values', 'prop_types', 'received_at', 'person_id'];

/**
 * ClickHouse event store (HTTP interface; SQL kept to what 18.16 and current releases share).
 * Its concerns in files of their own: the read bounds' errors and the client's logger
 * (clickhouse-limits.ts), mutations and the fold's chunks (clickhouse-mutations.ts), the parts
 * the compaction reads (clickhouse-parts.ts), the version check (clickhouse-version.ts).
 */
export class ClickHouseEventStore implements EventStore {
  readonly dialect = 'clickhouse' as const;
  private client: ClickHouseClient;
  private rowsEncoder = new JsonRowsEncoder();
  private threads?: Promise<number | undefined>;
  /** Reads for the helpers of other files (mutations, parts), under the same bounds as query(). */
  private read = <T>(sql: string): Promise<T[]> => this.query<T>(sql);

  readonly materialized: MaterializedProperties;

  constructor(
    private opts: { url: string; database: string; username?: string; password?: string; cluster?: ClickHouseCluster; writeTimeoutMs?: number },
    private limits: QueryLimits = DEFAULT_QUERY_LIMITS,
    materialized: MaterializedProperties = NO_MATERIALIZED,
  ) {
    this.materialized = materialized;
    this.client = this.makeClient(opts.database);
  }

  private makeClient(database: string) {
    return createClient({
      url: this.opts.url,
      database,
      username: this.opts.username,
      password: this.opts.password,
      request_timeout: this.opts.writeTimeoutMs ?? 120_000,
      // ClickHouse closes idle keep-alive sockets after 3 s (18.16's keep_alive_timeout). Under load a
      // late timer let the client reuse one the server had closed ("socket hang up", /health 503):
      // drop idle sockets well before, and check their age when taking one, not only by timer.
      keep_alive: { enabled: true, idle_socket_ttl: 1500, eagerly_destroy_stale_sockets: true },
      log: { LoggerClass: GuardQuietLogger },
      clickhouse_settings: {
        output_format_json_quote_64bit_integers: 0,
        // Progress headers keep long analyses' connections alive behind idle-timeout proxies.
        send_progress_in_http_headers: 1,
        http_headers_progress_interval_ms: '10000',
        // Cluster mode: a write is acknowledged once every shard holds its rows, and a join or IN
        // over a distributed table inside a distributed read becomes GLOBAL (whole result to each
        // shard), so per-person analyses see every shard's identity links (see clusterDdl).
        ...(this.opts.cluster ? { insert_distributed_sync: 1, distributed_product_mode: 'global' as const } : {}),
      },
    });
  }

  async migrate(): Promise<void> {
    await checkClickHouseVersion(() => readClickHouseVersion(this.makeClient('default')));
    if (this.opts.database !== 'default') {
      const admin = this.makeClient('default');
      try {
        const on = this.opts.cluster ? ` ON CLUSTER ${quoteIdent(this.opts.cluster.name)}` : '';
        await admin.command({ query: `CREATE DATABASE IF NOT EXISTS ${quoteIdent(this.opts.database)}${on}` });
      } finally {
        await admin.close();
      }
    }
    const ddl = this.opts.cluster ? clusterDdl(this.opts.database, this.opts.cluster) : EVENT_STORE_DDL.clickhouse;
    for (const q of ddl) await this.client.command({ query: q });
    for (const { table, column, type } of ADDED_COLUMNS) await this.addColumn(table, column, type.clickhouse);
    await this.command(eventIdsFeedDdl(this.opts.database, this.opts.cluster));
    await this.fillEventIds();
    // Computed by the server at insert; parts written before the column compute it when read, until
    // a merge (data/compaction.ts) stores it. Cluster mode: DEFAULT on both tables, not MATERIALIZED
    // (a Distributed table forwards a MATERIALIZED column to the shards' inserts, which refuse it;
    // a DEFAULT one is computed by the Distributed table and stored as sent), and inserts name their
    // columns (18.16 fills a DEFAULT column omitted from JSONEachRow with NULL unless the insert has
    // a column list).
    for (const [key, column] of this.materialized) {
      const k = sqlString('clickhouse', key);
      const kind = this.opts.cluster ? 'DEFAULT' : 'MATERIALIZED';
      await this.addColumn('events', column, `Nullable(String) ${kind} if(has(prop_keys, ${k}), toNullable(prop_values[indexOf(prop_keys, ${k})]), NULL)`);
    }
  }

  /** ADD COLUMN unless system.columns has it (18.16 has no IF NOT EXISTS); cluster mode: the shards' local table, then the Distributed one. */
  private async addColumn(table: (typeof SHARDED_TABLES)[number], column: string, type: string): Promise<void> {
    for (const t of this.opts.cluster ? [storedTable(this.opts, table), table] : [table]) {
      const has = await this.query<{ n: number }>(`SELECT count() AS n FROM system.columns
        WHERE database = ${sqlString('clickhouse', this.opts.database)} AND table = ${sqlString('clickhouse', t)} AND name = ${sqlString('clickhouse', column)}`);
      if (Number(has[0]?.n ?? 0) > 0) continue;
      const on = this.opts.cluster ? ` ON CLUSTER ${quoteIdent(this.opts.cluster.name)}` : '';
      await this.command(`ALTER TABLE ${quoteIdent(this.opts.database)}.${t}${on} ADD COLUMN ${column} ${type}`);
    }
  }

  async ping(): Promise<void> {
    let r = await this.client.ping();
    // One retry on a socket the server closed between our last use and this one (not an outage).
    if (!r.success && /socket hang up|ECONNRESET/.test(`${r.error?.message} ${(r.error as NodeJS.ErrnoException)?.code}`)) r = await this.client.ping();
    if (!r.success) throw r.error;
  }

  /**
   * One insert per month partition, so no insert block spans many partitions. A first delivery
   * stores every copy (the table is a ReplacingMergeTree on the dedup key and readers use FINAL);
   * a redelivered batch writes only the rows not stored yet, so it adds no row even before merges.
   * That is exact because each insert here is one block of one partition, which MergeTree commits
   * as one part, all or nothing: the stored rows themselves are the record of what a batch wrote,
   * and a crash between two partitions' inserts leaves only whole partitions behind, which the
   * redelivery skips while writing the rest. (A separate batch-id record could not be written
   * atomically with the rows on a non-replicated MergeTree: either order loses or doubles.)
   */
  async writeEvents(projectId: number, rows: StoredEvent[], opts: WriteEventsOptions = {}): Promise<void> {
    if (rows.length === 0) return;
    const byMonth = new Map<number, StoredEvent[]>();
    // The month's bounds are kept from row to row (a batch's rows mostly share one): a Date per
    // row cost about 1 µs, 4 % of the worker.
    let from = 0;
    let to = 0;
    let list: StoredEvent[] = [];
    for (const r of rows) {
      if (!(r.time >= from && r.time < to)) {
        const d = new Date(r.time);
        from = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
        to = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
        list = byMonth.get(from) ?? [];
        byMonth.set(from, list);
      }
      list.push(r);
    }
    for (const list of byMonth.values()) await this.insertEvents(opts.redelivered ? await this.notStored(projectId, list) : list);
  }

  /**
   * The rows whose dedup key is not stored, looked up by project, event, time range and insert_id
   * (the sort key's prefix narrows the read), in chunks that keep each query under ClickHouse's
   * 256 KiB max_query_size.
   */
  private async notStored(projectId: number, rows: StoredEvent[]): Promise<StoredEvent[]> {
    const key = (r: Pick<StoredEvent, 'event' | 'distinct_id' | 'time' | 'insert_id'>) =>
      `${r.event}\u0000${r.distinct_id}\u0000${Number(r.time)}\u0000${r.insert_id}`;
    const stored = new Set<string>();
    for (let i = 0; i < rows.length;) {
      const chunk: StoredEvent[] = [];
      for (let size = 0; i < rows.length && size < 100_000; i++) {
        chunk.push(rows[i]);
        size += 2 * (rows[i].insert_id.length + rows[i].event.length) + 8;
      }
      const events = [...new Set(chunk.map((r) => r.event))];
      const insertIds = [...new Set(chunk.map((r) => r.insert_id))];
      const times = chunk.map((r) => r.time);
      const found = await this.query<Pick<StoredEvent, 'event' | 'distinct_id' | 'time' | 'insert_id'>>(
        `SELECT event, distinct_id, time, insert_id FROM events
         WHERE project_id = ${sqlInt(projectId)} AND event IN (${events.map((e) => sqlString('clickhouse', e)).join(', ')})
           AND time >= ${sqlInt(Math.min(...times))} AND time <= ${sqlInt(Math.max(...times))}
           AND insert_id IN (${insertIds.map((e) => sqlString('clickhouse', e)).join(', ')})`,
      );
      for (const r of found) stored.add(key(r));
    }
    return stored.size === 0 ? rows : rows.filter((r) => !stored.has(key(r)));
  }

  /**
   * event_ids from the stored events, unless its EVENT_IDS_FILLED row says that was done. The view
   * feeding it exists by now, so events inserted meanwhile are in it either way (twice is harmless).
   */
  private async fillEventIds(): Promise<void> {
    const filled = `project_id = ${sqlInt(EVENT_IDS_FILLED.project_id)} AND distinct_id = ${sqlString('clickhouse', EVENT_IDS_FILLED.distinct_id)}`;
    const done = await this.query<{ n: number }>(`SELECT count() AS n FROM event_ids WHERE ${filled}`);
    if (Number(done[0]?.n ?? 0) > 0) return;
    // Once per store, at its first start with the table: the grouping spills to disk past 1 GB
    // rather than fail the start of a store with more ids than memory.
    await this.command('INSERT INTO event_ids (project_id, distinct_id) SELECT project_id, distinct_id FROM events GROUP BY project_id, distinct_id',
      { max_bytes_before_external_group_by: String(1 << 30) });
    await this.command(`INSERT INTO event_ids (project_id, distinct_id) VALUES (${sqlInt(EVENT_IDS_FILLED.project_id)}, ${sqlString('clickhouse', EVENT_IDS_FILLED.distinct_id)})`);
  }

  async idsWithEvents(projectId: number, distinctIds: string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < distinctIds.length; i += 1000) {
      const ids = distinctIds.slice(i, i + 1000).map((d) => sqlString('clickhouse', d)).join(', ');
      const rows = await this.query<{ distinct_id: string }>(
        `SELECT DISTINCT distinct_id FROM event_ids WHERE project_id = ${sqlInt(projectId)} AND distinct_id IN (${ids})`,
      );
      for (const r of rows) out.add(r.distinct_id);
    }
    return out;
  }

  /**
   * Each dedup key once, reading FINAL only the months not merged yet (unmergedRanges): GET
   * /api/projects counts every project's events on each console load, and FINAL over all of them
   * took 5.1 s at 10M events (bench:console), where a merged month's rows are each key once already.
   */
  async countEvents(projectIds: number[]): Promise<Map<number, number>> {
    if (projectIds.length === 0) return new Map();
    const projects = `project_id IN (${projectIds.map(sqlInt).join(', ')})`;
    const ranges = await this.unmergedRanges();
    const unmerged = ranges.map(([a, b]) => `(time >= ${sqlInt(a)} AND time < ${sqlInt(b)})`).join(' OR ');
    const sql = ranges.length === 0
      ? `SELECT project_id, count() AS n FROM events WHERE ${projects} GROUP BY project_id`
      : `SELECT project_id, sum(n) AS n FROM (
           SELECT project_id, count() AS n FROM events WHERE ${projects} AND NOT (${unmerged}) GROUP BY project_id
           UNION ALL SELECT project_id, count() AS n FROM events FINAL WHERE ${projects} AND (${unmerged}) GROUP BY project_id)
         GROUP BY project_id`;
    const rows = await this.query<{ project_id: number; n: number }>(sql);
    return new Map(rows.map((r) => [Number(r.project_id), Number(r.n)]));
  }

  async latestProfiles(projectId: number, distinctIds: string[]): Promise<ProfileVersion[]> {
    if (distinctIds.length === 0) return [];
    const rows = await this.query<{ distinct_id: string; properties: string; updated_at: number; deleted: number; batch_id: string }>(
      `SELECT distinct_id, properties, updated_at, deleted, batch_id FROM profiles FINAL
       WHERE project_id = ${sqlInt(projectId)} AND distinct_id IN (${distinctIds.map((id) => sqlString('clickhouse', id)).join(', ')})`,
    );
    return latestPerKey(rows.map(toProfileVersion));
  }

  /** New versions replace older ones at merge (ReplacingMergeTree(updated_at)); readers use FINAL. */
  writeProfiles(rows: StoredProfile[]): Promise<void> {
    return this.insertRows('profiles', rows.map((r) => ({ ...r, deleted: r.deleted ? 1 : 0 })));
  }

  /** A link written twice is one row after merge (ReplacingMergeTree on the key). */
  writeLinks(rows: StoredLink[]): Promise<void> {
    return this.insertRows('identity_links', rows as unknown as Record<string, unknown>[]);
  }

  /**
   * One `ALTER … UPDATE person_id` mutation per project and chunk of links (the links as literal
   * arrays: transform maps distinct_id to its canonical id and from_time), then, once every
   * events mutation is done, one marking the links folded. Until then readers still join them.
   */
  async foldLinks(maxLinks: number, createdBefore: number): Promise<number> {
    const links = await this.query<{ project_id: number; distinct_id: string; canonical_id: string; from_time: number }>(
      `SELECT project_id, distinct_id, canonical_id, from_time FROM identity_links FINAL
       WHERE folded = 0 AND created_at < ${sqlInt(createdBefore)} ORDER BY project_id LIMIT ${sqlInt(maxLinks)}`,
    );
    if (links.length === 0) return 0;
    const chunks = foldChunks(links);
    // Array literals are one AST node each (an IN list is one per element, past max_ast_elements),
    // and transform over constant arrays is a hash lookup: it also makes the WHERE.
    const settings = { max_query_size: String(2 * FOLD_SQL_BYTES) };
    const steps = chunks.map((c) => {
      const ids = `[${c.ids.join(', ')}]`;
      const where = `project_id = ${sqlInt(c.projectId)} AND transform(distinct_id, ${ids}, [${c.ids.map(() => '1').join(', ')}], 0) = 1`;
      return { c, ids, where };
    });
    for (const { c, ids, where } of steps) {
      // A mutation's expressions read the old values: person_key repeats person_id's expression.
      const person = `if(time >= transform(distinct_id, ${ids}, CAST([${c.froms.join(', ')}] AS Array(Int64)), toInt64(0)),
          transform(distinct_id, ${ids}, [${c.canonicals.join(', ')}], distinct_id), distinct_id)`;
      await this.command(mutationSql(this.opts, 'events', `UPDATE person_id = ${person}, person_key = ${PERSON_KEY_SQL.clickhouse(person)}`, where), settings);
    }
    await waitForMutations(this.opts, this.read, ['events']);
    for (const { where } of steps) await this.command(mutationSql(this.opts, 'identity_links', 'UPDATE folded = 1', where), settings);
    await waitForMutations(this.opts, this.read, ['identity_links']);
    return links.length;
  }

  /** Any version of an unfolded link counts (no FINAL): a stale one only costs the join. */
  async hasUnfoldedLinks(projectId: number): Promise<boolean> {
    const rows = await this.query(`SELECT 1 AS x FROM identity_links WHERE project_id = ${sqlInt(projectId)} AND folded = 0 LIMIT 1`, { rank: BOOKKEEPING_RANK });
    return rows.length > 0;
  }

  /**
   * The months (the events' partitions) that may hold copies of a dedup key: more than one active
   * part on some server, or one straight from an insert (level 0; an insert does not collapse
   * copies, a merge does). Cluster mode: such a part on any shard or replica (each host's
   * system.parts through remote()).
   */
  async unmergedRanges(): Promise<Array<[number, number]>> {
    // A month's bounds as the partition key computed it (toDateTime: the server's time zone).
    const rows = await this.query<{ from_ms: number; to_ms: number }>(
      `SELECT toUnixTimestamp(toDateTime(m)) * 1000 AS from_ms, toUnixTimestamp(toDateTime(addMonths(m, 1))) * 1000 AS to_ms
       FROM (SELECT DISTINCT toDate(concat(substring(partition, 1, 4), '-', substring(partition, 5, 2), '-01')) AS m FROM (${await unmergedPartitionsSql(this.opts, this.read)}))
       ORDER BY from_ms`,
      { rank: BOOKKEEPING_RANK },
    );
    return rows.map((r) => [Number(r.from_ms), Number(r.to_ms)]);
  }

  /**
   * `OPTIMIZE … PARTITION … FINAL` of the oldest quiet unmerged months, and of months with a part
   * written before a column every part should store (ADDED_COLUMNS' `rewriteOldParts`, a
   * materialised property) was added: it computes the column at every read until rewritten; once
   * is enough, so those need not be quiet. Cluster mode: the month's local table on every server
   * (ON CLUSTER).
   */
  async mergeQuietPartitions(quietMs: number, max: number): Promise<number> {
    const columns = [
      ...ADDED_COLUMNS.filter((c) => c.table === 'events' && c.rewriteOldParts).map((c) => c.column),
      ...this.materialized.values(),
    ];
    const quiet = `AND max(modification_time) <= now() - ${sqlInt(Math.ceil(quietMs / 1000))}`;
    const lacking = (await systemTables(this.opts, this.read, 'parts_columns')).map((src) =>
      `SELECT partition FROM ${src} WHERE ${eventParts(this.opts)} GROUP BY partition, name
       HAVING NOT hasAll(groupArray(column), [${columns.map((c) => sqlString('clickhouse', c)).join(', ')}])`);
    const rows = await this.query<{ partition: string }>(
      `SELECT partition FROM (${[await unmergedPartitionsSql(this.opts, this.read, quiet), ...lacking].join(' UNION ALL ')})
       GROUP BY partition ORDER BY partition LIMIT ${sqlInt(max)}`,
    );
    const months = rows.map((r) => r.partition).filter((p) => /^\d{6}$/.test(p));
    const table = this.opts.cluster
      ? `${quoteIdent(this.opts.database)}.${storedTable(this.opts, 'events')} ON CLUSTER ${quoteIdent(this.opts.cluster.name)}`
      : 'events';
    for (const p of months) await this.command(`OPTIMIZE TABLE ${table} PARTITION ${p} FINAL`);
    return months.length;
  }

  deleteProject(projectId: number): Promise<void> {
    return this.deleteWhere(`project_id = ${sqlInt(projectId)}`);
  }

  /**
   * Mutations on the data tables, then waits until system.mutations shows none of this
   * database's mutations on them unfinished (18.16 has `is_done`; a stuck one ends in a timeout).
   */
  async deleteIdentities(projectId: number, distinctIds: string[]): Promise<void> {
    if (distinctIds.length === 0) return;
    for (const t of DATA_TABLES) await this.command(deleteSql(this.opts, t, identitiesCondition('clickhouse', t, projectId, distinctIds)));
    await waitForMutations(this.opts, this.read, DATA_TABLES);
  }

  /**
   * One `ALTER TABLE events DELETE WHERE project_id = … AND time < …` mutation (cluster mode: on
   * every shard's local table), waited for. Partitions are months of every project together, so
   * dropping one would take other projects' events and rewriting one costs more than the mutation
   * (docs/ingestion.md, "Retention", has the measurement).
   */
  async deleteEventsBefore(projectId: number, beforeMs: number): Promise<boolean> {
    const project = `project_id = ${sqlInt(projectId)}`;
    // A mutation rewrites every part it may touch: none when nothing is expired.
    const expired = await this.query(`SELECT 1 AS x FROM events WHERE ${project} AND time < ${sqlInt(beforeMs)} LIMIT 1`);
    if (expired.length === 0) return false;
    await this.command(deleteSql(this.opts, 'events', `${project} AND time < ${sqlInt(beforeMs)}`));
    await waitForMutations(this.opts, this.read, ['events']);
    // event_ids keeps only ids that still have events (the worker's "any history?" question). Each
    // shard's ids and events share a shard (both by distinct_id): its local events answer for it.
    const events = `${quoteIdent(this.opts.database)}.${storedTable(this.opts, 'events')}`;
    await this.command(deleteSql(this.opts, 'event_ids', `${project} AND distinct_id NOT IN (SELECT distinct_id FROM ${events} WHERE ${project})`));
    await waitForMutations(this.opts, this.read, ['event_ids']);
    return true;
  }

  eventsOfIdentities(projectId: number, distinctIds: string[], after: EventPageKey | null, limit: number): Promise<ReadEvent[]> {
    if (distinctIds.length === 0) return Promise.resolve([]);
    return this.query<ReadEvent>(
      `SELECT project_id, id, event, distinct_id, time, insert_id, properties, prop_keys, prop_values, prop_types, received_at FROM events FINAL
       WHERE ${identitiesCondition('clickhouse', 'events', projectId, distinctIds)} AND ${afterKeyCondition('clickhouse', after)}
       ORDER BY ${EVENT_PAGE_ORDER} LIMIT ${sqlInt(limit)}`,
    );
  }

  /** Deletes matching rows of every data table (mutations: they finish in the background). */
  private async deleteWhere(condition: string): Promise<void> {
    const results = await Promise.allSettled(DATA_TABLES.map((t) => this.command(deleteSql(this.opts, t, condition))));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** person_id filled here: 18.16's JSONEachRow gives an omitted column its type's default, not the column's. */
  insertEvents(rows: StoredEvent[]): Promise<void> {
    return this.insertRows('events', rows.map((r) => (r.person_id ? r : { ...r, person_id: storedPersonId(r) })), STORED_EVENT_COLUMNS);
  }

  /**
   * `columns`: the insert's column list (the rest take their DEFAULT; see migrate). The body is
   * encoded here into a reused buffer (JsonRowsEncoder) and sent with `exec`, where the client's
   * `insert` would build it twice.
   */
  async insertRows(table: string, rows: object[], columns?: [string, ...string[]]): Promise<void> {
    if (rows.length === 0) return;
    const { body, done } = this.rowsEncoder.encode(rows);
    const result = await this.client.exec({
      query: `INSERT INTO ${table}${columns ? ` (${columns.join(', ')})` : ''} FORMAT JSONEachRow`,
      values: Readable.from([body], { objectMode: false }),
    });
    result.stream.resume();
    await finished(result.stream);
    done();
  }

  /**
   * Reads run under the per-query bounds (18.16 knows all three settings). The server stops a
   * read past max_execution_time between blocks; one stuck inside a block is killed by id a
   * moment later, so no read outlives the timeout by much. A ranked read runs with `priority` set
   * to its rank (18.16 and current releases: while a read of a lower non-zero priority runs, the
   * others pause between blocks, each pause at most a second), so an organisation's second and
   * later analyses yield to every organisation's first; ranked 2 or worse, also on its share of the
   * server's threads and in smaller blocks (clickhouse-share.ts).
   */
  async query<T>(sql: string, opts: ReadOptions = {}): Promise<T[]> {
    const threads = opts.rank && opts.rank > 1 ? await this.serverThreads() : undefined;
    const { timeoutMs, maxMemoryBytes } = this.limits;
    const queryId = randomUUID();
    const abort = new AbortController();
    const timer = setTimeout(() => {
      abort.abort();
      this.client.command({ query: `KILL QUERY WHERE query_id = '${queryId}' ASYNC` }).catch(() => undefined);
    }, timeoutMs + 2000);
    timer.unref();
    try {
      const result = await this.client.query({
        query: sql, format: 'JSONEachRow', query_id: queryId, abort_signal: abort.signal,
        clickhouse_settings: {
          max_execution_time: Math.max(1, Math.ceil(timeoutMs / 1000)),
          timeout_overflow_mode: 'throw',
          max_memory_usage: String(maxMemoryBytes),
          ...(opts.rank ? rankedReadSettings(opts.rank, threads, opts.contended ?? true) : {}),
        },
      });
      // Row by row as the answer streams in, letting other requests run between chunks: an answer
      // of 100,000 rows (the analyses' cap) parsed in one go held /health for up to a second.
      const rows: T[] = [];
      for await (const batch of result.stream<T>()) {
        for (const row of batch) rows.push(row.json<T>());
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      return rows;
    } catch (err) {
      throw limitError(err, abort.signal.aborted, this.limits);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The server's max_threads (its default profile's), read once; undefined if it cannot be read. */
  private serverThreads(): Promise<number | undefined> {
    this.threads ??= this.client.query({ query: `SELECT value FROM system.settings WHERE name = 'max_threads'`, format: 'JSONEachRow' })
      .then((r) => r.json<{ value: string }>())
      .then((rows) => parseMaxThreads(String(rows[0]?.value ?? '')), () => {
        this.threads = undefined; // asked again by the next read
        return undefined;
      });
    return this.threads;
  }

  async command(sql: string, settings?: Record<string, string>): Promise<void> {
    await this.client.command({ query: sql, ...(settings ? { clickhouse_settings: settings } : {}) });
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

