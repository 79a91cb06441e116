import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../support/processes.js';
import { openMetadataStore, PREPARED_SQL_CHARS_KEPT, PREPARED_STATEMENTS_KEPT } from '../../apps/server/src/ports/metadata/knex.js';

/**
 * The embedded metadata store's connection (ports/metadata/knex.ts): WAL, foreign keys enforced,
 * a writer waiting for a lock rather than failing at once, and statements compiled once per SQL
 * text while they are among the last PREPARED_STATEMENTS_KEPT used.
 */
describe('metadata store: SQLite connection settings', () => {
  it('opens the file in WAL mode, with foreign keys and a busy timeout', async () => {
    const dir = tempDir('metadata-settings-');
    const db = openMetadataStore({ dataDir: dir });
    try {
      const pragma = async (name: string) => Object.values((await db.raw(`PRAGMA ${name}`))[0])[0];
      assert.equal(await pragma('journal_mode'), 'wal');
      assert.equal(await pragma('foreign_keys'), 1);
      assert.equal(await pragma('busy_timeout'), 5000);
      assert.ok(fs.existsSync(path.join(dir, 'metadata.sqlite')));
    } finally {
      await db.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('metadata store: SQLite statements compiled once', () => {
  it('hands back the same compiled statement for the same SQL, and drops the least recently used', async () => {
    const db = openMetadataStore({ dataDir: '/nonexistent', sqliteFile: ':memory:' });
    const conn = (await db.client.acquireConnection()) as { prepare(sql: string): unknown };
    try {
      const first = conn.prepare('SELECT 1 AS one');
      assert.equal(conn.prepare('SELECT 1 AS one'), first);
      const other = conn.prepare('SELECT 2 AS two');
      for (let i = 0; i < PREPARED_STATEMENTS_KEPT - 2; i++) conn.prepare(`SELECT ${i + 3} AS n`);
      assert.equal(conn.prepare('SELECT 1 AS one'), first, 'used again: now the most recent');
      conn.prepare('SELECT -1 AS n'); // one more than the cache holds: the least recent, `other`, goes
      assert.equal(conn.prepare('SELECT 1 AS one'), first);
      assert.notEqual(conn.prepare('SELECT 2 AS two'), other);
      // The text bound: statements whose SQL adds up past it push the least recent out.
      const long = (i: number) => `SELECT ${i} AS n${' '.repeat(Math.ceil(PREPARED_SQL_CHARS_KEPT / 3))}`;
      const big = conn.prepare(long(0));
      assert.equal(conn.prepare(long(0)), big);
      const second = conn.prepare(long(1));
      assert.equal(conn.prepare(long(0)), big, 'two thirds fit');
      conn.prepare(long(2)); // three thirds do not: the least recent of them, long(1), goes
      assert.equal(conn.prepare(long(0)), big);
      assert.notEqual(conn.prepare(long(1)), second);
      const huge = `SELECT 0 AS n${' '.repeat(PREPARED_SQL_CHARS_KEPT)}`;
      assert.notEqual(conn.prepare(huge), conn.prepare(huge), 'a statement past the bound alone is not kept');
    } finally {
      await db.client.releaseConnection(conn);
      await db.destroy();
    }
  });

  it('answers through knex as before, across a schema change and a failed statement', async () => {
    const dir = tempDir('metadata-statements-');
    const db = openMetadataStore({ dataDir: dir });
    try {
      await db.schema.createTable('t', (t) => { t.integer('id').primary(); t.string('name'); });
      await db('t').insert([{ id: 1, name: 'a' }, { id: 2, name: 'b' }]);
      const read = () => db('t').select('*').orderBy('id');
      assert.deepEqual(await read(), [{ id: 1, name: 'a' }, { id: 2, name: 'b' }]);
      await db.schema.alterTable('t', (t) => { t.integer('size'); });
      await db('t').where({ id: 2 }).update({ size: 7 });
      // The same SQL text, compiled before the column existed, now returns it.
      assert.deepEqual(await read(), [{ id: 1, name: 'a', size: null }, { id: 2, name: 'b', size: 7 }]);
      await assert.rejects(db('t').insert({ id: 1, name: 'again' }), /UNIQUE/);
      await assert.rejects(db('t').insert({ id: 1, name: 'again' }), /UNIQUE/);
      await db('t').insert({ id: 3, name: 'c' });
      assert.deepEqual((await read()).map((r: { id: number }) => r.id), [1, 2, 3]);
    } finally {
      await db.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
