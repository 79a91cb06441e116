import fs from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { migrations } from './migrations/index.js';

// int8 (bigint) columns hold Unix-ms timestamps and counters, all well inside 2^53: read them as numbers.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

export type Db = Knex;

/**
 * The metadata store port: knex on PostgreSQL (`DATABASE_URL`) or on a SQLite file in DATA_DIR.
 * Domain stores write portable knex; row locks go through `lockForUpdate`. Where the SQL itself
 * differs (one statement on PostgreSQL, a transaction on SQLite) a store asks `isPostgres(db)`.
 */
export function openMetadataStore(opts: { databaseUrl?: string; dataDir: string; sqliteFile?: string }): Db {
  if (opts.databaseUrl) {
    return knexFactory({
      client: 'pg',
      connection: opts.databaseUrl,
      pool: { min: 0, max: 10 },
    });
  }
  const file = opts.sqliteFile ?? path.join(opts.dataDir, 'metadata.sqlite');
  if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
  return knexFactory({
    client: 'better-sqlite3',
    connection: { filename: file },
    useNullAsDefault: true,
    // One connection: SQLite serialises writers anyway, and transactions must not interleave.
    pool: {
      min: 1,
      max: 1,
      afterCreate: (conn: any, done: (err: Error | null, conn: unknown) => void) => {
        conn.pragma('journal_mode = WAL');
        conn.pragma('foreign_keys = ON');
        conn.pragma('busy_timeout = 5000');
        cachePreparedStatements(conn);
        done(null, conn);
      },
    },
  });
}

/**
 * Statements kept compiled per SQLite connection, least recently used dropped first: at most this
 * many, and at most this much SQL text in all. A compiled statement takes about ten times its
 * text (256 multi-row inserts of 245-500 links held 62 MiB), and ingestion makes one of a new
 * length per unit, so the text bound is what bounds the memory (here about 5 MB).
 */
export const PREPARED_STATEMENTS_KEPT = 256;
export const PREPARED_SQL_CHARS_KEPT = 500_000;

/**
 * knex compiles every query's SQL again (`connection.prepare` per query), and the ingestion's
 * statements are large and repeat verbatim (links read and inserted 500 ids at a time): compiling
 * them was about a quarter of SQLite's time under ingestion load. A compiled statement can run any
 * number of times (SQLite recompiles it itself after a schema change), and knex changes none of
 * its settings unless a query asks for `safeIntegers`, which none here does.
 */
function cachePreparedStatements(conn: { prepare(sql: string): unknown }): void {
  const prepare = conn.prepare.bind(conn);
  const kept = new Map<string, unknown>(); // in recency order, the least recent first
  let chars = 0;
  conn.prepare = (sql: string) => {
    let statement = kept.get(sql);
    if (statement !== undefined) {
      kept.delete(sql);
      kept.set(sql, statement);
      return statement;
    }
    statement = prepare(sql);
    if (sql.length > PREPARED_SQL_CHARS_KEPT) return statement;
    kept.set(sql, statement);
    chars += sql.length;
    while (kept.size > PREPARED_STATEMENTS_KEPT || chars > PREPARED_SQL_CHARS_KEPT) {
      const oldest = kept.keys().next().value!;
      kept.delete(oldest);
      chars -= oldest.length;
    }
    return statement;
  };
}

export const isPostgres = (db: Db) => db.client.config.client === 'pg';

/**
 * `q` locking the rows it reads until the transaction ends: `FOR UPDATE` on PostgreSQL; SQLite has
 * one writer at a time, so `q` as is. `db` is the transaction (or the store) `q` runs on.
 */
export function lockForUpdate<Q extends { forUpdate(): Q }>(db: Db, q: Q): Q {
  return isPostgres(db) ? q.forUpdate() : q;
}

/**
 * `run` unless another process sharing the metadata store holds the advisory lock `key` (a
 * constant shared by all processes): on PostgreSQL a transaction-scoped lock, on a connection of
 * its own, so a crash releases it; SQLite serves one process. Answers null when another had it.
 */
export async function runExclusively<T>(db: Db, key: number, run: () => Promise<T>): Promise<T | null> {
  if (!isPostgres(db)) return run();
  return db.transaction(async (trx) => {
    const r = await trx.raw('SELECT pg_try_advisory_xact_lock(?) AS ok', [key]);
    return r.rows[0].ok ? run() : null;
  });
}

/** Key of the PostgreSQL advisory lock held while migrating (any constant shared by all processes). */
const MIGRATION_LOCK = 0x7461_6c6c; // 'tall'

/**
 * Applies every pending migration (knex's migrator, with the migrations compiled in). On
 * PostgreSQL one process migrates while the others wait on an advisory lock: knex's own
 * knex_migrations_lock row is only taken after knex has created its tables, and two processes
 * creating them at once fail (`duplicate key ... pg_type_typname_nsp_index`). The lock is a
 * transaction-scoped one on a connection of its own, so a crash releases it; the migrator runs on
 * other pool connections meanwhile. SQLite has one process per file.
 */
export async function migrateMetadataStore(db: Db): Promise<void> {
  const latest = () => db.migrate.latest({
    migrationSource: {
      getMigrations: async () => migrations.map((m) => m.name),
      getMigrationName: (name: string) => name,
      getMigration: async (name: string) => migrations.find((m) => m.name === name)!,
    },
  });
  if (!isPostgres(db)) {
    await latest();
    return;
  }
  await db.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(?)', [MIGRATION_LOCK]);
    await latest();
  });
}

/** A write refused by a unique index (PostgreSQL 23505, SQLite's constraint error): the 409 of a race between a check and a write. */
export const isUniqueViolation = (err: unknown) => {
  const e = err as { code?: string; message?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || /UNIQUE constraint failed/.test(e?.message ?? '');
};

/** Unix ms now; every stored time is one of these. */
export const nowMs = () => Date.now();
