import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * Identity links, authoritative here (transactional checks for refusals); mirrored into the
 * event store's `identity_links` so analyses resolve identities in the engine.
 * `from_time` 0 = retroactive; otherwise the link applies to events at or after it.
 */
export const identity: Migration = {
  name: '0002_identity',
  async up(db: Knex) {
    await db.schema.createTable('identity_links', (t) => {
      t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
      t.string('distinct_id', 255).notNullable();
      t.string('canonical_id', 255).notNullable();
      t.bigInteger('from_time').notNullable();
      t.bigInteger('created_at').notNullable();
      t.primary(['project_id', 'distinct_id']);
      t.index(['project_id', 'canonical_id']);
    });
  },
  async down(db: Knex) {
    await db.schema.dropTableIfExists('identity_links');
  },
};
