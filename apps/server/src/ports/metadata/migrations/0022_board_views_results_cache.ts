import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * - `results_cache`: finished report and board-card answers shared by every API process
 *   (results-cache/shared-store.ts), keyed by the entry id (a hash of the project, the query and
 *   the days it read); `signature` decides whether it may still be served, `last_read` which
 *   entries go first when the table is over its size bound.
 * - `board_views`: when a person last ran each board (boards/views.ts), written at most once a
 *   minute per board; the worker warms the cards of boards viewed lately (boards/warming.ts).
 */
export const boardViewsResultsCache: Migration = {
  name: '0022_board_views_results_cache',
  async up(db: Knex) {
    await db.schema.createTable('results_cache', (t) => {
      t.string('id', 64).primary();
      t.integer('project_id').notNullable();
      t.text('signature').notNullable();
      t.text('value').notNullable();
      t.bigInteger('computed_at').notNullable();
      t.boolean('live').notNullable();
      t.bigInteger('bytes').notNullable();
      t.bigInteger('last_read').notNullable();
      t.index(['last_read']);
      t.index(['project_id']);
    });
    await db.schema.createTable('board_views', (t) => {
      t.integer('board_id').primary();
      t.integer('project_id').notNullable();
      t.bigInteger('last_viewed_at').notNullable();
      t.index(['last_viewed_at']);
    });
  },
  async down(db: Knex) {
    await db.schema.dropTable('board_views');
    await db.schema.dropTable('results_cache');
  },
};
