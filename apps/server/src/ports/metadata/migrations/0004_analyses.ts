import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * Analyses: cohorts, derived events and calculated metrics. Definitions are JSON text
 * (validated by the domains' zod schemas on write); times are Unix ms.
 */
export const analyses: Migration = {
  name: '0004_analyses',
  async up(db: Knex) {
    for (const table of ['cohorts', 'derived_events', 'calculated_metrics']) {
      await db.schema.createTable(table, (t) => {
        t.increments('id').primary();
        t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
        t.integer('created_by').nullable();
        t.string('name', 200).notNullable();
        t.text('description').nullable();
        t.text('definition').notNullable();
        t.bigInteger('created_at').notNullable();
        t.bigInteger('updated_at').notNullable();
        t.index(['project_id']);
        if (table === 'derived_events') t.unique(['project_id', 'name']);
      });
    }
  },
  async down(db: Knex) {
    for (const t of ['calculated_metrics', 'derived_events', 'cohorts']) await db.schema.dropTableIfExists(t);
  },
};
