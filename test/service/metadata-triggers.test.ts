import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { migrateMetadataStore, openMetadataStore } from '../../apps/server/src/ports/metadata/knex.js';
import { migrations } from '../../apps/server/src/ports/metadata/migrations/index.js';

/**
 * The metadata store's triggers (identity link change numbers, 0012; flag revisions, 0014) are
 * still there once every migration has run. On SQLite, knex's `alterTable` can rebuild a table
 * (copy, drop, rename), which drops its triggers without a word: a later migration that alters
 * `identity_links` or `flags` that way fails here and must create the triggers again.
 */
forEachBackend('metadata store: triggers survive every migration', (backend) => {
  const expected = {
    pg: ['flags_revise', 'identity_links_deleted', 'identity_links_stamp', 'identity_links_stamped_insert', 'identity_links_stamped_update'],
    sqlite: ['flags_revise_delete', 'flags_revise_insert', 'flags_revise_update', 'identity_links_deleted', 'identity_links_stamp_insert', 'identity_links_stamp_update'],
  };

  it(`has each trigger after the last migration (${migrations.length} migrations)`, async () => {
    const stores = await backend.provision();
    const db = openMetadataStore({ databaseUrl: stores.env.DATABASE_URL, dataDir: '/nonexistent', sqliteFile: stores.overrides.sqliteFile });
    try {
      await migrateMetadataStore(db);
      const pg = db.client.config.client === 'pg';
      const listed = await db.raw(pg
        ? 'SELECT DISTINCT tgname AS name FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE NOT t.tgisinternal AND n.nspname = current_schema()'
        : "SELECT name FROM sqlite_master WHERE type = 'trigger'");
      const names = ((pg ? listed.rows : listed) as Array<{ name: string }>).map((r) => r.name).sort();
      assert.deepEqual(names, expected[pg ? 'pg' : 'sqlite']);
    } finally {
      await db.destroy();
      await stores.drop();
    }
  });
});
