import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * The platform's audit log (audit/): one row per change of an organisation, member, group mapping,
 * project, token, flag secret, flag, experiment, report, board, cohort, retention setting or privacy
 * request. No foreign keys: a row outlives what it names (a deleted project's deletion stays on
 * record). `before` / `after` are JSON text with secrets redacted (audit/redact.ts).
 * `organizations.namespaces`: the Kubernetes namespaces the managing Organization resource lists
 * (JSON text, null when unmanaged), so the service can refuse a namespaced resource acting outside
 * them whoever calls (docs/auth.md, "The boundary between teams").
 */
export const auditLog: Migration = {
  name: '0018_audit_log',
  async up(db: Knex) {
    await db.schema.createTable('audit_log', (t) => {
      t.bigIncrements('id').primary();
      t.bigInteger('at').notNullable();
      t.string('actor_kind', 12).notNullable();
      t.bigInteger('actor_id').nullable();
      t.string('actor_resource', 400).nullable();
      t.integer('org_id').nullable();
      t.integer('project_id').nullable();
      t.string('action', 60).notNullable();
      t.string('target_kind', 30).notNullable();
      t.bigInteger('target_id').nullable();
      t.text('before').nullable();
      t.text('after').nullable();
      t.index(['org_id', 'id']);
      t.index(['at']);
    });
    await db.schema.alterTable('organizations', (t) => {
      t.text('namespaces').nullable();
    });
  },
  async down(db: Knex) {
    await db.schema.alterTable('organizations', (t) => t.dropColumn('namespaces'));
    await db.schema.dropTableIfExists('audit_log');
  },
};
