import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * Change numbers of the event data a cached report result was computed from (results-cache/):
 * a row covers the days `first_day..last_day` (days since 1970-01-01 UTC) of one project
 * (project 0: every project) and is bumped after each write that may change what those days
 * answer. Shared by every process, so a worker's write invalidates what any API process cached.
 */
export const resultsVersions: Migration = {
  name: '0016_results_versions',
  async up(db: Knex) {
    await db.schema.createTable('results_versions', (t) => {
      t.integer('project_id').notNullable();
      t.integer('first_day').notNullable();
      t.integer('last_day').notNullable();
      t.bigInteger('version').notNullable().defaultTo(0);
      t.primary(['project_id', 'first_day', 'last_day']);
    });
  },
  async down(db: Knex) {
    await db.schema.dropTable('results_versions');
  },
};
