import type { Knex } from 'knex';

/**
 * Accepted events per organisation and UTC month: the row ingestion checks the monthly quota
 * against and counts into with one conditional upsert (usage/store.ts `admit`), so no
 * transaction or row lock spans a request. Backfilled from the per-project counts.
 */
export const usageOrg = {
  name: '0006_usage_org',
  async up(db: Knex) {
    await db.schema.createTable('usage_org_monthly', (t) => {
      t.integer('org_id').notNullable();
      t.string('month', 7).notNullable();
      t.bigInteger('events').notNullable().defaultTo(0);
      t.primary(['org_id', 'month']);
    });
    await db.raw(`INSERT INTO usage_org_monthly (org_id, month, events)
      SELECT org_id, month, sum(events) FROM usage_monthly WHERE org_id IS NOT NULL GROUP BY org_id, month`);
  },
  async down(db: Knex) {
    await db.schema.dropTableIfExists('usage_org_monthly');
  },
};
