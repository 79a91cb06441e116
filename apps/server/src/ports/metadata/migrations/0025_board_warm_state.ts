import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * `board_warm_state`: per project, what the worker's board warming (boards/warming.ts) knows,
 * shared by every worker process and kept across restarts: `state`, a hash of what the project's
 * answers depend on when its last pass ended with every card warm (null: not warm); and the claim
 * of the worker warming it now (`claimed_by` until `claim_until`, Unix ms), so two workers never
 * warm one project at once and a claim of a worker that died expires.
 */
export const boardWarmState: Migration = {
  name: '0025_board_warm_state',
  async up(db: Knex) {
    await db.schema.createTable('board_warm_state', (t) => {
      t.integer('project_id').primary();
      t.string('state', 64).nullable();
      t.bigInteger('warmed_at').nullable();
      t.string('claimed_by', 100).nullable();
      t.bigInteger('claim_until').nullable();
    });
  },
  async down(db: Knex) {
    await db.schema.dropTable('board_warm_state');
  },
};
