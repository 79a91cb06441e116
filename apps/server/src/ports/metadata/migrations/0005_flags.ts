import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * Feature flags and their audit trail. `variants` and `rules` are JSON text. The unique
 * (project_id, key) index backs the `key taken` check under concurrency; deleting a flag (or its
 * project) deletes its audit rows.
 */
export const flags: Migration = {
  name: '0005_flags',
  async up(db: Knex) {
    await db.schema.createTable('flags', (t) => {
      t.increments('id').primary();
      t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
      t.string('key', 200).notNullable();
      t.string('name', 500).notNullable();
      t.text('description').nullable();
      t.boolean('active').notNullable();
      t.string('type', 20).notNullable();
      t.text('variants').notNullable();
      t.text('rules').notNullable();
      t.integer('created_by').nullable().references('users.id').onDelete('SET NULL');
      t.bigInteger('archived_at').nullable();
      t.bigInteger('created_at').notNullable();
      t.bigInteger('updated_at').notNullable();
      t.unique(['project_id', 'key']);
    });
    await db.schema.createTable('flag_events', (t) => {
      t.increments('id').primary();
      t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
      t.integer('flag_id').notNullable().references('flags.id').onDelete('CASCADE');
      t.integer('actor_user_id').nullable().references('users.id').onDelete('SET NULL');
      t.integer('actor_mcp_token_id').nullable();
      t.string('action', 20).notNullable();
      t.text('before').nullable();
      t.text('after').nullable();
      t.bigInteger('created_at').notNullable();
      t.index(['flag_id', 'id']);
    });
  },
  async down(db: Knex) {
    await db.schema.dropTableIfExists('flag_events');
    await db.schema.dropTableIfExists('flags');
  },
};
