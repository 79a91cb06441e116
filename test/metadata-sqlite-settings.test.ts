import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openMetadataStore } from '../apps/server/src/ports/metadata/knex.js';

/**
 * The embedded metadata store's connection settings (ports/metadata/knex.ts): WAL with commits
 * synced per checkpoint rather than per commit (a synced commit blocks the event loop), foreign
 * keys enforced, a writer waiting for a lock rather than failing at once.
 */
describe('metadata store: SQLite connection settings', () => {
  it('opens the file in WAL mode, synchronous NORMAL, with foreign keys and a busy timeout', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'metadata-settings-'));
    const db = openMetadataStore({ dataDir: dir });
    try {
      const pragma = async (name: string) => Object.values((await db.raw(`PRAGMA ${name}`))[0])[0];
      assert.equal(await pragma('journal_mode'), 'wal');
      assert.equal(await pragma('synchronous'), 1); // 0 OFF, 1 NORMAL, 2 FULL (SQLite's default)
      assert.equal(await pragma('foreign_keys'), 1);
      assert.equal(await pragma('busy_timeout'), 5000);
      assert.ok(fs.existsSync(path.join(dir, 'metadata.sqlite')));
    } finally {
      await db.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
