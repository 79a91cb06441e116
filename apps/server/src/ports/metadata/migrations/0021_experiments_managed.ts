import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * The Kubernetes resource (an Experiment) that manages an experiment, as for flags: set when the
 * resource creates it, null otherwise; other writers are refused (409) until it lets go.
 */
export const experimentsManaged: Migration = {
  name: '0021_experiments_managed',
  async up(db: Knex) {
    await db.schema.alterTable('experiments', (t) => {
      t.string('managed_by', 400).nullable();
    });
  },
  async down(db: Knex) {
    await db.schema.alterTable('experiments', (t) => t.dropColumn('managed_by'));
  },
};
