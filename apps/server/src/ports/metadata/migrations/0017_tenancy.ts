import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * Tenancy as resources. `organizations.managed_by` / `members_managed_by`: the Kubernetes resource
 * (`Organization/<name>`) that owns the organisation, and the one that owns its membership list
 * (hand edits then answer 409). `memberships.source`: `invite` (a person or the resource invited
 * the email) or `group` (given at sign-in by the ID token's groups claim and `org_groups`).
 * `users.groups`: the groups claim last seen (JSON text), so a mapping change can drop memberships
 * at once; `users.current_org_id`: the organisation the user chose. `machine_tokens.managed_by`: the
 * ApiToken resource that minted it. `projects.retention_days` / `rate_limit` (requests per 10 s).
 */
export const tenancy: Migration = {
  name: '0017_tenancy',
  async up(db: Knex) {
    await db.schema.alterTable('organizations', (t) => {
      t.string('managed_by', 400).nullable();
      t.string('members_managed_by', 400).nullable();
      t.index(['managed_by']);
    });
    await db.schema.alterTable('memberships', (t) => {
      t.string('source', 10).notNullable().defaultTo('invite');
    });
    await db.schema.createTable('org_groups', (t) => {
      t.integer('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
      t.string('name', 400).notNullable();
      t.string('role', 20).notNullable();
      t.primary(['org_id', 'name']);
      t.index(['name']);
    });
    await db.schema.alterTable('users', (t) => {
      t.text('groups').nullable();
      t.integer('current_org_id').nullable();
    });
    await db.schema.alterTable('machine_tokens', (t) => {
      t.string('managed_by', 400).nullable();
    });
    await db.schema.alterTable('projects', (t) => {
      t.integer('retention_days').nullable();
      t.integer('rate_limit').nullable();
    });
  },
  async down(db: Knex) {
    await db.schema.alterTable('projects', (t) => { t.dropColumn('retention_days'); t.dropColumn('rate_limit'); });
    await db.schema.alterTable('machine_tokens', (t) => t.dropColumn('managed_by'));
    await db.schema.alterTable('users', (t) => { t.dropColumn('groups'); t.dropColumn('current_org_id'); });
    await db.schema.dropTableIfExists('org_groups');
    await db.schema.alterTable('memberships', (t) => t.dropColumn('source'));
    await db.schema.alterTable('organizations', (t) => { t.dropIndex(['managed_by']); t.dropColumn('managed_by'); t.dropColumn('members_managed_by'); });
  },
};
