import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * `projects.managed_by`: the Kubernetes resource (`<Kind>/<namespace>/<name>`) that owns a project,
 * or null; indexed because the operator finds its projects again by it. `machine_tokens`:
 * machine-access tokens (service accounts) of an organisation, stored as SHA-256 hashes; a revoked
 * token keeps its row (`revoked_at`) so flag audit rows naming it (`actor_mcp_token_id`) stay meaningful.
 */
export const managedProjectsAndTokens: Migration = {
  name: '0007_managed_projects_and_tokens',
  async up(db: Knex) {
    await db.schema.alterTable('projects', (t) => {
      t.string('managed_by', 400).nullable();
      t.index(['managed_by']);
    });
    await db.schema.createTable('machine_tokens', (t) => {
      t.increments('id').primary();
      t.integer('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
      t.string('name', 200).notNullable();
      t.string('role', 20).notNullable();
      t.string('token_hash', 64).notNullable().unique();
      t.integer('created_by').nullable().references('users.id').onDelete('SET NULL');
      t.bigInteger('created_at').notNullable();
      t.bigInteger('last_used_at').nullable();
      t.bigInteger('revoked_at').nullable();
      t.index(['org_id', 'id']);
    });
  },
  async down(db: Knex) {
    await db.schema.dropTableIfExists('machine_tokens');
    await db.schema.alterTable('projects', (t) => {
      t.dropIndex(['managed_by']);
      t.dropColumn('managed_by');
    });
  },
};
