import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * Experiments: a flag's variants measured on metrics over events. The flag is named by key (its
 * variants are read from the flag when results are computed); metrics are JSON text validated by
 * experiments/schema.ts; times are Unix ms. A project deleted takes its experiments.
 */
export const experiments: Migration = {
  name: '0019_experiments',
  async up(db: Knex) {
    await db.schema.createTable('experiments', (t) => {
      t.increments('id').primary();
      t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
      t.string('key', 200).notNullable();
      t.string('name', 200).notNullable();
      t.string('flag_key', 200).notNullable();
      t.string('control', 200).notNullable();
      t.text('metrics').notNullable();
      t.string('primary_metric_id', 200).notNullable();
      t.string('engine', 20).notNullable();
      t.double('confidence_level').notNullable();
      t.boolean('sequential').notNullable();
      t.string('correction', 10).notNullable();
      t.bigInteger('start_at').nullable();
      t.bigInteger('end_at').nullable();
      t.string('status', 10).notNullable();
      t.bigInteger('stopped_at').nullable();
      t.integer('created_by').nullable();
      t.bigInteger('created_at').notNullable();
      t.bigInteger('updated_at').notNullable();
      t.unique(['project_id', 'key']);
    });
  },
  async down(db: Knex) {
    await db.schema.dropTableIfExists('experiments');
  },
};
