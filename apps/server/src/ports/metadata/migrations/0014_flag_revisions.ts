import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * A change number per project's flags, so an API process can tell with a one-row read that its
 * in-memory copy of a project's flags is still current (flags/live.ts) instead of reloading and
 * re-parsing every flag each TTL. Triggers bump `flag_revisions.revision` on every insert, update
 * and delete of a flag, whoever writes (the API, the operator's reconciler through it, a process
 * of an older version). Cascaded deletes of a deleted project's flags skip the bump (the project's
 * row goes with it).
 */
export const flagRevisions: Migration = {
  name: '0014_flag_revisions',
  async up(db: Knex) {
    await db.schema.createTable('flag_revisions', (t) => {
      t.integer('project_id').primary().references('projects.id').onDelete('CASCADE');
      t.bigInteger('revision').notNullable().defaultTo(0);
    });
    await db.raw('INSERT INTO flag_revisions (project_id, revision) SELECT DISTINCT project_id, 1 FROM flags');
    if (db.client.config.client === 'pg') {
      await db.raw(`CREATE FUNCTION flags_revise() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        p integer := CASE WHEN TG_OP = 'DELETE' THEN OLD.project_id ELSE NEW.project_id END;
      BEGIN
        INSERT INTO flag_revisions AS r (project_id, revision)
          SELECT p, 1 WHERE EXISTS (SELECT 1 FROM projects WHERE id = p)
          ON CONFLICT (project_id) DO UPDATE SET revision = r.revision + 1;
        RETURN NULL;
      END $$`);
      await db.raw('CREATE TRIGGER flags_revise AFTER INSERT OR UPDATE OR DELETE ON flags FOR EACH ROW EXECUTE FUNCTION flags_revise()');
      return;
    }
    for (const [op, row] of [['INSERT', 'NEW'], ['UPDATE', 'NEW'], ['DELETE', 'OLD']]) {
      await db.raw(`CREATE TRIGGER flags_revise_${op.toLowerCase()} AFTER ${op} ON flags BEGIN
        INSERT OR IGNORE INTO flag_revisions (project_id, revision)
          SELECT ${row}.project_id, 0 WHERE EXISTS (SELECT 1 FROM projects WHERE id = ${row}.project_id);
        UPDATE flag_revisions SET revision = revision + 1 WHERE project_id = ${row}.project_id;
      END`);
    }
  },
  async down(db: Knex) {
    if (db.client.config.client === 'pg') {
      await db.raw('DROP TRIGGER IF EXISTS flags_revise ON flags');
      await db.raw('DROP FUNCTION IF EXISTS flags_revise()');
    } else {
      for (const op of ['insert', 'update', 'delete']) await db.raw(`DROP TRIGGER IF EXISTS flags_revise_${op}`);
    }
    await db.schema.dropTableIfExists('flag_revisions');
  },
};
