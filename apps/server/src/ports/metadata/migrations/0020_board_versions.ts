import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * A board's version: 1 when created, one more on every write. A client sends the version it
 * loaded with its change, so two people editing one board at once cannot overwrite each other's
 * cards unseen (the second write answers 409 and changes nothing).
 */
export const boardVersions: Migration = {
  name: '0020_board_versions',
  async up(db: Knex) {
    await db.schema.alterTable('boards', (t) => {
      t.integer('version').notNullable().defaultTo(1);
    });
  },
  async down(db: Knex) {
    await db.schema.alterTable('boards', (t) => t.dropColumn('version'));
  },
};
