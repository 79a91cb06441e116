import type { Knex } from 'knex';
import type { Migration } from './index.js';

/** Organisations, users, memberships, projects and monthly usage. */
export const foundation: Migration = {
  name: '0001_foundation',
  async up(db: Knex) {
    await db.schema.createTable('organizations', (t) => {
      t.increments('id').primary();
      t.string('name', 200).notNullable();
      t.bigInteger('monthly_event_quota').nullable();
      t.bigInteger('created_at').notNullable();
    });
    await db.schema.createTable('users', (t) => {
      t.increments('id').primary();
      t.string('issuer', 500).notNullable();
      t.string('subject', 500).notNullable();
      t.string('email', 320).nullable();
      t.string('name', 200).nullable();
      t.bigInteger('created_at').notNullable();
      t.bigInteger('last_seen_at').notNullable();
      t.unique(['issuer', 'subject']);
    });
    await db.schema.createTable('memberships', (t) => {
      t.increments('id').primary();
      t.integer('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
      // Invitations are keyed by email (lower-cased); the first verified token with that email binds user_id.
      t.string('email', 320).notNullable();
      t.integer('user_id').nullable().references('users.id').onDelete('CASCADE');
      t.string('role', 20).notNullable();
      t.bigInteger('created_at').notNullable();
      t.unique(['org_id', 'email']);
      t.index(['user_id']);
      t.index(['email']);
    });
    await db.schema.createTable('projects', (t) => {
      t.increments('id').primary();
      t.integer('org_id').nullable().references('organizations.id').onDelete('CASCADE');
      t.string('name', 200).notNullable();
      t.string('token', 36).notNullable().unique();
      // SHA-256 of the flag secret; the secret itself is never stored.
      t.string('flag_secret_hash', 64).nullable().unique();
      t.bigInteger('created_at').notNullable();
      t.index(['org_id']);
    });
    // Accepted events per organisation, project and UTC month; ingestion increments it and
    // enforces the organisation's quota against it.
    await db.schema.createTable('usage_monthly', (t) => {
      t.integer('org_id').nullable();
      t.integer('project_id').notNullable();
      t.string('month', 7).notNullable();
      t.bigInteger('events').notNullable().defaultTo(0);
      t.primary(['project_id', 'month']);
      t.index(['org_id', 'month']);
    });
  },
  async down(db: Knex) {
    for (const t of ['usage_monthly', 'projects', 'memberships', 'users', 'organizations']) await db.schema.dropTableIfExists(t);
  },
};
