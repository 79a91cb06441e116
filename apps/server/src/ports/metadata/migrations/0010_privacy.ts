import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * Privacy requests (access, export, delete) and their audit rows. A request keeps the ids it was
 * asked for until it ends (the runner needs them); a completed delete keeps only their hashes.
 * `heartbeat_at` lets another process take over a request whose runner died. Times are Unix ms.
 */
export const privacy: Migration = {
  name: '0010_privacy',
  async up(db: Knex) {
    await db.schema.createTable('privacy_requests', (t) => {
      t.increments('id').primary();
      t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
      t.string('type', 10).notNullable();
      t.string('status', 10).notNullable();
      t.text('distinct_ids').notNullable();
      t.text('cluster_ids').nullable();
      t.text('error').nullable();
      t.integer('attempts').notNullable().defaultTo(0);
      t.integer('created_by').nullable();
      t.bigInteger('created_at').notNullable();
      t.bigInteger('started_at').nullable();
      t.bigInteger('heartbeat_at').nullable();
      t.bigInteger('completed_at').nullable();
      t.index(['status']);
      t.index(['project_id']);
    });
    await db.schema.createTable('privacy_audit', (t) => {
      t.increments('id').primary();
      t.integer('request_id').notNullable();
      t.integer('project_id').notNullable();
      t.string('type', 10).notNullable();
      t.integer('actor_user_id').nullable();
      t.integer('actor_token_id').nullable();
      t.string('actor_kind', 12).notNullable();
      t.text('id_hashes').notNullable();
      t.bigInteger('created_at').notNullable();
      t.index(['project_id']);
    });
  },
  async down(db: Knex) {
    await db.schema.dropTableIfExists('privacy_audit');
    await db.schema.dropTableIfExists('privacy_requests');
  },
};
