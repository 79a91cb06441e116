import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance, type DuckDBAppender, type DuckDBConnection, type DuckDBDataChunk } from '@duckdb/node-api';
import type { EventPageKey, EventStore, MaterializeOutcome, MaterializeShare, ProfileVersion, QueryLimits, ReadEvent, ReadOptions, StoredEvent, StoredLink, StoredProfile } from './port.js';
import { duckDbSettings } from './duckdb-settings.js';
import { RankedStatementQueue, type Lane } from './duckdb-queue.js';
import { FILL_EVENT_IDS, joinList, materializedValue, rowObjects, sameKey, splitList, str } from './duckdb-values.js';
import { ADDED_COLUMNS, EVENT_IDS_FILLED, EVENT_STORE_DDL, MAX_RUNTIME_MATERIALIZED, NO_MATERIALIZED, PERSON_KEY_SQL, materializedProperties, personKey, type MaterializedProperties } from './schema.js';
import { BOOKKEEPING_RANK, DEFAULT_QUERY_LIMITS, QueryLimitExceeded, DATA_TABLES, EVENT_PAGE_ORDER, afterKeyCondition, identitiesCondition, latestPerKey, sqlInt, sqlString, storedPersonId, toProfileVersion } from './port.js';

// Scripts and benches import these from here.
export { duckDbSettings } from './duckdb-settings.js';
export { FILL_EVENT_IDS, materializedValue } from './duckdb-values.js';

/**
 * Embedded event store: a DuckDB file in DATA_DIR (or in memory for tests). Its instance settings
 * are in duckdb-settings.ts, its value encodings in duckdb-values.ts.
 */
export class DuckDbEventStore implements EventStore {
  readonly dialect = 'duckdb' as const;
  private instance?: DuckDBInstance;
  private conn?: DuckDBConnection;
  /** `ping` runs on its own connection: the statement chain may hold a long analysis. */
  private pingConn?: DuckDBConnection;
  /** DuckDB connections run one statement at a time: every statement passes this queue (reads by rank). */
  private statements = new RankedStatementQueue(1000, true);
  /** The express lane's connection (duckdb-queue.ts): a quiet organisation's read beside a flood's. */
  private expressConn?: DuckDBConnection;

  /**
   * The materialised properties writes fill and compiled reads use: the configured ones, those
   * materialised at runtime (`materialize`) and kept in `materialized_properties`. Replaced, never
   * changed in place, once a new column is filled, so a map already handed out stays true.
   */
  private live: MaterializedProperties;
  /** The keys of MATERIALIZED_PROPERTIES this store was opened with. */
  private readonly configured: string[];

  constructor(private file: string, private limits: QueryLimits = DEFAULT_QUERY_LIMITS, materialized: MaterializedProperties = NO_MATERIALIZED) {
    this.live = materialized;
    this.configured = [...materialized.keys()];
  }

  get materialized(): MaterializedProperties {
    return this.live;
  }

  private async connection(): Promise<DuckDBConnection> {
    if (!this.conn) {
      if (this.file !== ':memory:') fs.mkdirSync(path.dirname(this.file), { recursive: true });
      this.instance = await DuckDBInstance.create(this.file, duckDbSettings(this.limits));
      this.conn = await this.instance.connect();
    }
    return this.conn;
  }

  private serialise<T>(work: (lane: Lane) => Promise<T>, rank?: number): Promise<T> {
    return this.statements.run(work, rank);
  }

  /** The connection of a statement's lane: reads of the express lane run on a second one. */
  private async laneConnection(lane: Lane): Promise<DuckDBConnection> {
    const conn = await this.connection();
    if (lane === 'main') return conn;
    this.expressConn ??= await this.instance!.connect();
    return this.expressConn;
  }

  async migrate(): Promise<void> {
    const conn = await this.connection();
    for (const ddl of EVENT_STORE_DDL.duckdb) await conn.run(ddl);
    // event_ids from the stored events, once (the EVENT_IDS_FILLED row commits with them).
    const filled = `(${sqlInt(EVENT_IDS_FILLED.project_id)}, ${str(EVENT_IDS_FILLED.distinct_id)})`;
    if ((await conn.runAndReadAll(`SELECT 1 FROM event_ids WHERE (project_id, distinct_id) = ${filled}`)).getRows().length === 0) {
      await conn.run('BEGIN TRANSACTION');
      try {
        await conn.run(FILL_EVENT_IDS);
        await conn.run(`INSERT OR IGNORE INTO event_ids VALUES ${filled}`);
        await conn.run('COMMIT');
      } catch (err) {
        await conn.run('ROLLBACK');
        throw err;
      }
    }
    for (const { table, column, type } of ADDED_COLUMNS) await conn.run(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${column} ${type.duckdb}`);
    // A DuckDB default cannot name another column: rows from before person_id take their distinct_id.
    await conn.run(`UPDATE events SET person_id = distinct_id WHERE person_id = '' OR person_id IS NULL`);
    await conn.run(`UPDATE events SET person_key = ${PERSON_KEY_SQL.duckdb('person_id')} WHERE person_key IS NULL`);
    // Keys materialised at runtime by an earlier start join the configured ones.
    const kept = (await conn.runAndReadAll('SELECT key FROM materialized_properties ORDER BY created_at, key')).getRowObjects().map((r) => String(r.key));
    this.live = new Map([...this.live, ...materializedProperties(kept.filter((k) => !this.live.has(k)))]);
    // A column whose key the previous run neither had configured nor kept lacks the values of that
    // run's events (a key configured, dropped, then configured again): it is filled again, and the
    // key recorded as configured in the same transaction. Runtime keys are live at every start, so
    // their columns are always current.
    await conn.run('CREATE TABLE IF NOT EXISTS materialized_configured (key VARCHAR NOT NULL PRIMARY KEY)');
    const configured = new Set(this.configured);
    await conn.run(`DELETE FROM materialized_configured${configured.size > 0 ? ` WHERE key NOT IN (${[...configured].map(str).join(', ')})` : ''}`);
    const recorded = new Set((await conn.runAndReadAll('SELECT key FROM materialized_configured')).getRowObjects().map((r) => String(r.key)));
    for (const [key, column] of this.live) {
      const record = configured.has(key) && !recorded.has(key) ? [`INSERT OR IGNORE INTO materialized_configured VALUES (${str(key)})`] : [];
      await this.addMaterializedColumn(conn, key, column, { refill: !recorded.has(key) && !kept.includes(key), alongside: record });
    }
  }

  /**
   * A materialised property new to this store: the column and its values for the stored events
   * in one transaction, with `alongside` (a column left half filled would answer wrongly for
   * good). A column already there is left alone, unless `refill` (a column of a key once
   * configured, then dropped from the configuration: the events written since lack its values;
   * `migrate` refills those the previous run did not fill, `materialize` every time).
   */
  private async addMaterializedColumn(conn: DuckDBConnection, key: string, column: string, opts: { refill?: boolean; alongside?: string[] } = {}): Promise<void> {
    const known = (await conn.runAndReadAll(`SELECT 1 FROM information_schema.columns WHERE table_name = 'events' AND column_name = ${str(column)}`)).getRows().length > 0;
    if (known && !opts.refill) return;
    await conn.run('BEGIN TRANSACTION');
    try {
      if (!known) await conn.run(`ALTER TABLE events ADD COLUMN ${column} VARCHAR`);
      await conn.run(`UPDATE events SET ${column} = ${materializedValue(key)} WHERE list_contains(prop_keys, ${str(key)})`);
      for (const sql of opts.alongside ?? []) await conn.run(sql);
      await conn.run('COMMIT');
    } catch (err) {
      await conn.run('ROLLBACK');
      throw err;
    }
  }

  /**
   * Materialises `key` while the store runs (a sum metric of an experiment, a board's filter or
   * breakdown: query/property-materializer.ts): the column filled for the stored events and the
   * key kept in `materialized_properties` with the organisation of `share`, in one transaction on
   * the write chain, so no write runs between the fill and the key joining the live map (writes
   * build their statement when their turn comes), and two requests never both pass a limit.
   * `store-full` past MAX_RUNTIME_MATERIALIZED keys, `share-full` past `share.maxKeys` of that
   * organisation's; a key that already is a column answers `materialized` and costs nothing.
   */
  async materialize(key: string, share?: MaterializeShare): Promise<MaterializeOutcome> {
    return this.serialise(async () => {
      if (this.live.has(key)) return 'materialized';
      const conn = await this.connection();
      const count = async (where: string) => Number((await conn.runAndReadAll(`SELECT count(*) AS n FROM materialized_properties${where}`)).getRowObjects()[0].n);
      if (await count('') >= MAX_RUNTIME_MATERIALIZED) return 'store-full';
      if (share && await count(` WHERE organization_id = ${sqlInt(share.organizationId)}`) >= share.maxKeys) return 'share-full';
      const column = materializedProperties([key]).get(key)!;
      const by = share ? sqlInt(share.organizationId) : 'NULL';
      await this.addMaterializedColumn(conn, key, column, {
        refill: true, alongside: [`INSERT OR IGNORE INTO materialized_properties (key, created_at, organization_id) VALUES (${str(key)}, ${sqlInt(Date.now())}, ${by})`],
      });
      this.live = new Map([...this.live, [key, column]]);
      return 'materialized';
    });
  }

  async hasUnfoldedLinks(projectId: number): Promise<boolean> {
    const rows = await this.query(`SELECT 1 AS x FROM identity_links WHERE project_id = ${sqlInt(projectId)} AND folded = 0 LIMIT 1`, { rank: BOOKKEEPING_RANK });
    return rows.length > 0;
  }

  /** Every row is unique: DuckDB dedups at write. */
  async unmergedRanges(): Promise<Array<[number, number]>> {
    return [];
  }

  async mergeQuietPartitions(): Promise<number> {
    return 0;
  }

  async ping(): Promise<void> {
    await this.connection();
    this.pingConn ??= await this.instance!.connect();
    await this.pingConn.run('SELECT 1');
  }

  /**
   * Dedups at write: copies inside `rows` are dropped here, the rest are anti-joined against the
   * stored rows of the same project and time span (insertEventsDeduped; zone maps keep that scan
   * short while events arrive roughly in time order; a batch spanning years scans more).
   */
  async writeEvents(projectId: number, rows: StoredEvent[]): Promise<void> {
    if (rows.length === 0) return;
    // Copies within the batch: rows are keyed by their id (a hash of the dedup key), and only rows
    // sharing an id compare their keys (no key string per row).
    const seen = new Map<number, StoredEvent | StoredEvent[]>();
    let unique: StoredEvent[] | undefined;
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      const prev = seen.get(r.id);
      let copy = false;
      if (prev === undefined) seen.set(r.id, r);
      else if (Array.isArray(prev)) {
        copy = prev.some((p) => sameKey(p, r));
        if (!copy) prev.push(r);
      } else {
        copy = sameKey(prev, r);
        if (!copy) seen.set(r.id, [prev, r]);
      }
      if (copy) unique ??= rows.slice(0, i);
      else if (unique) unique.push(r);
    }
    await this.insertEventsDeduped(projectId, unique ?? rows);
  }

  async idsWithEvents(projectId: number, distinctIds: string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < distinctIds.length; i += 1000) {
      const ids = distinctIds.slice(i, i + 1000).map(str).join(', ');
      const rows = await this.query<{ distinct_id: string }>(
        `SELECT distinct_id FROM event_ids WHERE project_id = ${sqlInt(projectId)} AND distinct_id IN (${ids})`,
      );
      for (const r of rows) out.add(r.distinct_id);
    }
    return out;
  }

  async countEvents(projectIds: number[]): Promise<Map<number, number>> {
    if (projectIds.length === 0) return new Map();
    const rows = await this.query<{ project_id: number; n: number }>(
      `SELECT project_id, count(*) AS n FROM events WHERE project_id IN (${projectIds.map(sqlInt).join(', ')}) GROUP BY project_id`,
    );
    return new Map(rows.map((r) => [Number(r.project_id), Number(r.n)]));
  }

  async latestProfiles(projectId: number, distinctIds: string[]): Promise<ProfileVersion[]> {
    if (distinctIds.length === 0) return [];
    const rows = await this.query<{ distinct_id: string; properties: string; updated_at: number; deleted: number; batch_id: string }>(
      `SELECT distinct_id, properties, updated_at, deleted, batch_id FROM profiles
       WHERE project_id = ${sqlInt(projectId)} AND distinct_id IN (${distinctIds.map(str).join(', ')})`,
    );
    return latestPerKey(rows.map(toProfileVersion));
  }

  /**
   * One row per key (the table's primary key): a new version replaces the stored one. Through the
   * appender and a staging table like events (a VALUES list of a few hundred rows cost DuckDB
   * tens of ms to parse); lists travel joined (joinList).
   */
  async writeProfiles(rows: StoredProfile[]): Promise<void> {
    if (rows.length === 0) return;
    await this.viaStaging('profiles_staging',
      `project_id INTEGER, distinct_id VARCHAR, properties VARCHAR, prop_keys VARCHAR, prop_values VARCHAR, updated_at BIGINT, deleted UTINYINT, batch_id VARCHAR`,
      (a) => {
        for (const r of rows) {
          a.appendInteger(r.project_id);
          a.appendVarchar(r.distinct_id);
          a.appendVarchar(r.properties);
          a.appendVarchar(joinList(r.prop_keys));
          a.appendVarchar(joinList(r.prop_values));
          a.appendBigInt(BigInt(r.updated_at));
          a.appendUTinyInt(r.deleted ? 1 : 0);
          a.appendVarchar(r.batch_id);
          a.endRow();
        }
      },
      `INSERT OR REPLACE INTO profiles (project_id, distinct_id, properties, prop_keys, prop_values, updated_at, deleted, batch_id)
       SELECT project_id, distinct_id, properties, ${splitList('prop_keys')}, ${splitList('prop_values')}, updated_at, deleted, batch_id
       FROM profiles_staging`);
  }

  /** Links never change once written: a stored key is left alone. Appender and staging table, as writeProfiles. */
  async writeLinks(rows: StoredLink[]): Promise<void> {
    if (rows.length === 0) return;
    await this.viaStaging('links_staging', `project_id INTEGER, distinct_id VARCHAR, canonical_id VARCHAR, from_time BIGINT, created_at BIGINT`,
      (a) => {
        for (const r of rows) {
          a.appendInteger(r.project_id);
          a.appendVarchar(r.distinct_id);
          a.appendVarchar(r.canonical_id);
          a.appendBigInt(BigInt(r.from_time));
          a.appendBigInt(BigInt(r.created_at));
          a.endRow();
        }
      },
      `INSERT OR IGNORE INTO identity_links (project_id, distinct_id, canonical_id, from_time, created_at)
       SELECT project_id, distinct_id, canonical_id, from_time, created_at FROM links_staging`);
  }

  /**
   * Appends rows to a temporary staging table, runs `insert` from it and drops it. Made and
   * dropped per write: DuckDB never reclaims the storage of deleted rows of a temporary table (it
   * is never checkpointed), so a staging table emptied with DELETE kept every row ever staged in
   * memory (bench:ingest: ~300 MB of IN_MEMORY_TABLE for 300,000 events); CREATE and DROP cost
   * less than the DELETEs did.
   */
  private async viaStaging(table: string, columns: string, append: (a: DuckDBAppender) => void, ...inserts: Array<string | (() => string)>): Promise<void> {
    await this.serialise(async () => {
      const conn = await this.connection();
      await conn.run(`CREATE OR REPLACE TEMP TABLE ${table} (${columns})`);
      try {
        const a = await conn.createAppender(table, null, 'temp');
        try {
          append(a);
        } finally {
          a.closeSync(); // flushes the rows into the staging table
        }
        // A statement given as a function is built in its turn (the materialised columns as they are then).
        for (const insert of inserts) await conn.run(typeof insert === 'string' ? insert : insert());
      } finally {
        await conn.run(`DROP TABLE IF EXISTS temp.${table}`);
      }
    });
  }

  /** Both updates in one transaction on the write chain: no link or event arrives between them. */
  async foldLinks(maxLinks: number, createdBefore: number): Promise<number> {
    return this.serialise(async () => {
      const conn = await this.connection();
      await conn.run('BEGIN TRANSACTION');
      try {
        await conn.run(`CREATE OR REPLACE TEMP TABLE fold_links AS
          SELECT project_id, distinct_id, canonical_id, from_time FROM identity_links
          WHERE folded = 0 AND created_at < ${sqlInt(createdBefore)} LIMIT ${sqlInt(maxLinks)}`);
        const n = Number((await conn.runAndReadAll('SELECT count(*) AS n FROM fold_links')).getRowObjects()[0].n);
        if (n > 0) {
          const person = 'CASE WHEN events.time >= l.from_time THEN l.canonical_id ELSE events.distinct_id END';
          await conn.run(`UPDATE events SET person_id = ${person}, person_key = ${PERSON_KEY_SQL.duckdb(person)}
            FROM fold_links l WHERE events.project_id = l.project_id AND events.distinct_id = l.distinct_id`);
          await conn.run(`UPDATE identity_links SET folded = 1 FROM fold_links l
            WHERE identity_links.project_id = l.project_id AND identity_links.distinct_id = l.distinct_id`);
        }
        await conn.run('DROP TABLE fold_links');
        await conn.run('COMMIT');
        return n;
      } catch (err) {
        await conn.run('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });
  }

  deleteProject(projectId: number): Promise<void> {
    return this.deleteWhere(`project_id = ${sqlInt(projectId)}`);
  }

  /** Plain deletes, then a checkpoint with vacuuming, so the file reuses the freed blocks instead of growing. */
  async deleteEventsBefore(projectId: number, beforeMs: number): Promise<boolean> {
    const project = `project_id = ${sqlInt(projectId)}`;
    const expired = await this.query(`SELECT 1 AS x FROM events WHERE ${project} AND time < ${sqlInt(beforeMs)} LIMIT 1`);
    if (expired.length === 0) return false;
    await this.command(`DELETE FROM events WHERE ${project} AND time < ${sqlInt(beforeMs)}`);
    // event_ids keeps only ids that still have events (the worker's "any history?" question).
    await this.command(`DELETE FROM event_ids WHERE ${project} AND NOT EXISTS (SELECT 1 FROM events e WHERE e.${project} AND e.distinct_id = event_ids.distinct_id)`);
    await this.vacuumAfterDelete();
    return true;
  }

  /** Plain deletes (events are deduplicated at write, so their dedup keys go with them). */
  async deleteIdentities(projectId: number, distinctIds: string[]): Promise<void> {
    if (distinctIds.length === 0) return;
    for (const t of DATA_TABLES) await this.command(`DELETE FROM ${t} WHERE ${identitiesCondition('duckdb', t, projectId, distinctIds)}`);
    await this.vacuumAfterDelete();
  }

  eventsOfIdentities(projectId: number, distinctIds: string[], after: EventPageKey | null, limit: number): Promise<ReadEvent[]> {
    if (distinctIds.length === 0) return Promise.resolve([]);
    return this.query<ReadEvent>(
      `SELECT project_id, id, event, distinct_id, time, insert_id, properties, prop_keys, prop_values, prop_types, received_at FROM events
       WHERE ${identitiesCondition('duckdb', 'events', projectId, distinctIds)} AND ${afterKeyCondition('duckdb', after)}
       ORDER BY ${EVENT_PAGE_ORDER} LIMIT ${sqlInt(limit)}`,
    );
  }

  /** Deletes matching rows of every data table. */
  private async deleteWhere(condition: string): Promise<void> {
    for (const t of DATA_TABLES) await this.command(`DELETE FROM ${t} WHERE ${condition}`);
    await this.vacuumAfterDelete();
  }

  /**
   * A checkpoint with vacuuming on, right after a delete (ingestion runs with vacuuming off, see
   * duckDbSettings): as DuckDB's automatic vacuum did before, it rewrites the row groups the delete
   * thinned enough for their rows to fit in fewer, and deleted rows leave storage with them; a
   * delete of a few rows leaves them marked deleted in their row group (measured on 10M events: 88
   * rows, nothing rewritten, 0.1 s; half the rows, 17 s). On the write chain, so no ingestion write
   * runs under the setting.
   */
  private async vacuumAfterDelete(): Promise<void> {
    await this.serialise(async () => {
      const conn = await this.connection();
      await conn.run('SET max_vacuum_tasks = 100');
      try {
        await conn.run('CHECKPOINT');
      } finally {
        await conn.run('SET max_vacuum_tasks = 0');
      }
    });
  }

  async insertEvents(rows: StoredEvent[]): Promise<void> {
    if (rows.length === 0) return;
    // The rows are made in their turn on the write chain: a key materialised while they waited is filled too.
    await this.insertValues('events', () => rows.map((r) => {
      const person = storedPersonId(r);
      return { ...r, person_id: person, person_key: personKey(person).toString(), ...this.materializedOf(r) };
    }));
    const ids = new Map(rows.map((r) => [`${r.project_id}\u0000${r.distinct_id}`, `(${sqlInt(r.project_id)}, ${str(r.distinct_id)})`]));
    if (ids.size) await this.command(`INSERT OR IGNORE INTO event_ids VALUES ${[...ids.values()].join(', ')}`);
  }

  /** A row's materialised property columns (NULL where it lacks the key). */
  private materializedOf(r: StoredEvent): Record<string, string | null> {
    const out: Record<string, string | null> = {};
    for (const [key, column] of this.materialized) {
      const i = r.prop_keys.indexOf(key);
      out[column] = i < 0 ? null : r.prop_values[i];
    }
    return out;
  }

  /** Inserts through a VALUES list built from JSON (one statement per call). */
  async insertRows(table: string, rows: Record<string, unknown>[]): Promise<void> {
    if (rows.length === 0) return;
    await this.insertValues(table, () => rows);
  }

  /** insertRows with the rows made when the statement's turn comes. */
  private async insertValues(table: string, made: () => Record<string, unknown>[]): Promise<void> {
    const literal = (v: unknown): string => {
      if (v === null || v === undefined) return 'NULL';
      if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'NULL';
      if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE';
      if (Array.isArray(v)) return `[${v.map(literal).join(', ')}]::VARCHAR[]`;
      return sqlString('duckdb', String(v));
    };
    await this.serialise(async () => {
      const rows = made();
      const columns = Object.keys(rows[0]);
      const values = rows.map((r) => `(${columns.map((c) => literal(r[c])).join(', ')})`).join(',\n');
      await (await this.connection()).run(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${values}`);
    });
  }

  /**
   * Inserts events that are not stored yet (dedup key: project, event, distinct_id, time,
   * insert_id; the caller drops copies inside `rows`). The rows go through DuckDB's appender into
   * a temporary staging table (no SQL text, no temporary file), then one `INSERT ... SELECT`
   * anti-joins them against the stored rows of the project inside the batch's time span. The
   * appender has no cheap way to append lists (one native value per element), so `prop_keys` /
   * `prop_values` travel as one string each, every element preceded by NUL, and are split in SQL
   * (ingestion makes every string NUL-free: NUL becomes U+FFFD, as the API does).
   */
  private async insertEventsDeduped(projectId: number, rows: StoredEvent[]): Promise<void> {
    if (rows.length === 0) return;
    let min = Infinity;
    let max = -Infinity;
    for (const r of rows) {
      if (r.time < min) min = r.time;
      if (r.time > max) max = r.time;
    }
    // id, time and received_at are integers below 2^53 (exact in a double): appended as DOUBLE
    // and cast back in the INSERT, which spares three BigInts per row.
    await this.viaStaging('ingest_staging', `project_id INTEGER, id DOUBLE, event VARCHAR, distinct_id VARCHAR, time DOUBLE, insert_id VARCHAR,
        prop_keys VARCHAR, prop_values VARCHAR, prop_types VARCHAR, received_at DOUBLE, person_id VARCHAR`,
      (a) => {
        for (const r of rows) {
          a.appendInteger(r.project_id);
          a.appendDouble(r.id);
          a.appendVarchar(r.event);
          a.appendVarchar(r.distinct_id);
          a.appendDouble(r.time);
          a.appendVarchar(r.insert_id);
          a.appendVarchar(joinList(r.prop_keys));
          a.appendVarchar(joinList(r.prop_values));
          a.appendVarchar(r.prop_types);
          a.appendDouble(r.received_at);
          a.appendVarchar(storedPersonId(r));
          a.endRow();
        }
      },
      () => {
        const mat = [...this.live];
        return `INSERT INTO events (project_id, id, event, distinct_id, time, insert_id, prop_keys, prop_values, prop_types, received_at, person_id, person_key${mat.map(([, c]) => `, ${c}`).join('')})
          SELECT n.project_id, n.id, n.event, n.distinct_id, n.time, n.insert_id, n.prop_keys, n.prop_values, n.prop_types, n.received_at, n.person_id,
            ${PERSON_KEY_SQL.duckdb('n.person_id')}${mat.map(([k]) => `, ${materializedValue(k, 'n.')}`).join('')}
          FROM (SELECT project_id, id::BIGINT AS id, event, distinct_id, time::BIGINT AS time, insert_id, ${splitList('prop_keys')} AS prop_keys,
                       ${splitList('prop_values')} AS prop_values, prop_types, received_at::BIGINT AS received_at, person_id FROM ingest_staging) n
          ANTI JOIN (SELECT event, distinct_id, time, insert_id FROM events
                     WHERE project_id = ${sqlInt(projectId)} AND time BETWEEN ${sqlInt(min)} AND ${sqlInt(max)}) e
            USING (event, distinct_id, time, insert_id)`;
      },
      'INSERT OR IGNORE INTO event_ids SELECT DISTINCT project_id, distinct_id FROM ingest_staging');
  }

  /**
   * Reads run under the statement timeout: the connection is interrupted when it passes (the
   * timer starts when the statement does, not while it waits its turn in the chain). Running
   * past the memory cap is DuckDB's Out of Memory error. A ranked read waits its turn by rank
   * (duckdb-queue.ts); each statement still uses every DuckDB thread, since only one runs at once.
   */
  async query<T>(sql: string, opts: ReadOptions = {}): Promise<T[]> {
    const reader = await this.serialise(async (lane) => {
      const conn = await this.laneConnection(lane);
      let timedOut = false;
      const timer = setTimeout(() => { timedOut = true; conn.interrupt(); }, this.limits.timeoutMs);
      try {
        const result = await conn.run(sql);
        const chunks: DuckDBDataChunk[] = [];
        for (let chunk = await result.fetchChunk(); chunk && chunk.rowCount > 0; chunk = await result.fetchChunk()) chunks.push(chunk);
        return { names: result.deduplicatedColumnNames(), chunks };
      } catch (err) {
        if (timedOut) throw new QueryLimitExceeded('timeout', this.limits);
        if (/Out of Memory Error/i.test(err instanceof Error ? err.message : String(err))) throw new QueryLimitExceeded('memory', this.limits);
        throw err;
      } finally {
        clearTimeout(timer);
      }
    }, opts.rank);
    return await rowObjects<T>(reader.names, reader.chunks);
  }

  async command(sql: string): Promise<void> {
    await this.serialise(async () => (await this.connection()).run(sql));
  }

  async close(): Promise<void> {
    await this.statements.drained();
    this.conn?.closeSync();
    this.pingConn?.closeSync();
    this.expressConn?.closeSync();
    this.instance?.closeSync();
    this.conn = undefined;
    this.pingConn = undefined;
    this.expressConn = undefined;
    this.instance = undefined;
  }
}
