import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * Flags and flag secrets owned by a Kubernetes resource (`<Kind>/<namespace>/<name>`): a managed
 * flag or flag secret refuses writes that do not come from that resource. Audit rows name the
 * resource a change came through.
 */
export const flagsManaged: Migration = {
  name: '0008_flags_managed',
  async up(db: Knex) {
    await db.schema.alterTable('flags', (t) => {
      t.string('managed_by', 400).nullable();
      t.index(['project_id', 'managed_by']);
    });
    await db.schema.alterTable('flag_events', (t) => {
      t.string('actor_resource', 400).nullable();
    });
    await db.schema.alterTable('projects', (t) => {
      t.string('flag_secret_managed_by', 400).nullable();
    });
  },
  async down(db: Knex) {
    await db.schema.alterTable('projects', (t) => t.dropColumn('flag_secret_managed_by'));
    await db.schema.alterTable('flag_events', (t) => t.dropColumn('actor_resource'));
    await db.schema.alterTable('flags', (t) => {
      t.dropIndex(['project_id', 'managed_by']);
      t.dropColumn('managed_by');
    });
  },
};
