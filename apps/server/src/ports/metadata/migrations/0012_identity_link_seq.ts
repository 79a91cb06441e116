import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * Change numbers of identity links, so a process can follow one project's links incrementally
 * (the remote flag evaluator's in-memory index, identity/link-index.ts):
 *
 * - `identity_link_seq` holds one row per project: `seq`, the highest change number stored, and
 *   `epoch`, bumped by every statement that deletes links (privacy deletion, project deletion).
 * - `identity_links.seq` is the change number of the row's last insert or `canonical_id` change.
 *
 * Triggers stamp every insert and every change of `canonical_id`, whoever writes (the ingestion
 * worker, /alias in embedded mode, a merge that re-points a cluster, a process of an older
 * version). The counter row is locked from the first stamped write of a transaction to its
 * commit, so a project's change numbers become visible in increasing order: a reader that has
 * seen change N has seen every change below N. Rows written before this migration keep 0 (a
 * full load reads them).
 */
export const identityLinkSeq: Migration = {
  name: '0012_identity_link_seq',
  async up(db: Knex) {
    await db.schema.createTable('identity_link_seq', (t) => {
      t.integer('project_id').primary().references('projects.id').onDelete('CASCADE');
      t.bigInteger('seq').notNullable().defaultTo(0);
      t.bigInteger('epoch').notNullable().defaultTo(0);
    });
    await db.schema.alterTable('identity_links', (t) => {
      t.bigInteger('seq').notNullable().defaultTo(0);
    });
    await db.schema.alterTable('identity_links', (t) => {
      t.index(['project_id', 'seq'], 'identity_links_project_seq');
    });
    if (db.client.config.client === 'pg') {
      // Stamped per row from a transaction-local counter (set_config(…, true)), and the counter
      // row written once per statement: updating that one row for every link made a transaction
      // writing N links cost O(N²) (each update of a row the transaction already updated walks
      // its versions), minutes for a project's 200,000 links. The first stamped row of a
      // transaction locks the counter row until commit, as before.
      await db.raw(`CREATE FUNCTION identity_links_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        name text := 'tally.link_seq_' || NEW.project_id;
        cur text := current_setting(name, true);
        next bigint;
      BEGIN
        IF cur IS NULL OR cur = '' THEN
          INSERT INTO identity_link_seq AS s (project_id, seq, epoch) VALUES (NEW.project_id, 0, 0)
            ON CONFLICT (project_id) DO UPDATE SET seq = s.seq
            RETURNING s.seq INTO next;
          next := next + 1;
        ELSE
          next := cur::bigint + 1;
        END IF;
        PERFORM set_config(name, next::text, true);
        NEW.seq := next;
        RETURN NEW;
      END $$`);
      await db.raw(`CREATE TRIGGER identity_links_stamp BEFORE INSERT OR UPDATE OF canonical_id ON identity_links
        FOR EACH ROW EXECUTE FUNCTION identity_links_stamp()`);
      await db.raw(`CREATE FUNCTION identity_links_stamped() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE identity_link_seq s SET seq = n.top
          FROM (SELECT project_id, max(seq) AS top FROM stamped_rows GROUP BY project_id) n
          WHERE s.project_id = n.project_id AND n.top > s.seq;
        RETURN NULL;
      END $$`);
      // Transition tables cannot go with a column list, so these fire on every insert and update statement.
      await db.raw(`CREATE TRIGGER identity_links_stamped_insert AFTER INSERT ON identity_links
        REFERENCING NEW TABLE AS stamped_rows FOR EACH STATEMENT EXECUTE FUNCTION identity_links_stamped()`);
      await db.raw(`CREATE TRIGGER identity_links_stamped_update AFTER UPDATE ON identity_links
        REFERENCING NEW TABLE AS stamped_rows FOR EACH STATEMENT EXECUTE FUNCTION identity_links_stamped()`);
      await db.raw(`CREATE FUNCTION identity_links_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE identity_link_seq SET epoch = epoch + 1 WHERE project_id IN (SELECT DISTINCT project_id FROM deleted_rows);
        RETURN NULL;
      END $$`);
      await db.raw(`CREATE TRIGGER identity_links_deleted AFTER DELETE ON identity_links
        REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT EXECUTE FUNCTION identity_links_deleted()`);
      return;
    }
    // SQLite (one writer: change numbers follow commit order by construction).
    const stamp = `
        INSERT OR IGNORE INTO identity_link_seq (project_id, seq, epoch) VALUES (NEW.project_id, 0, 0);
        UPDATE identity_link_seq SET seq = seq + 1 WHERE project_id = NEW.project_id;
        UPDATE identity_links SET seq = (SELECT seq FROM identity_link_seq WHERE project_id = NEW.project_id)
          WHERE project_id = NEW.project_id AND distinct_id = NEW.distinct_id;`;
    await db.raw(`CREATE TRIGGER identity_links_stamp_insert AFTER INSERT ON identity_links BEGIN ${stamp}
      END`);
    await db.raw(`CREATE TRIGGER identity_links_stamp_update AFTER UPDATE OF canonical_id ON identity_links BEGIN ${stamp}
      END`);
    await db.raw(`CREATE TRIGGER identity_links_deleted AFTER DELETE ON identity_links BEGIN
        UPDATE identity_link_seq SET epoch = epoch + 1 WHERE project_id = OLD.project_id;
      END`);
  },
  async down(db: Knex) {
    if (db.client.config.client === 'pg') {
      for (const t of ['identity_links_stamp', 'identity_links_stamped_insert', 'identity_links_stamped_update', 'identity_links_deleted']) {
        await db.raw(`DROP TRIGGER IF EXISTS ${t} ON identity_links`);
      }
      for (const f of ['identity_links_stamp', 'identity_links_stamped', 'identity_links_deleted']) await db.raw(`DROP FUNCTION IF EXISTS ${f}()`);
    } else {
      for (const t of ['identity_links_stamp_insert', 'identity_links_stamp_update', 'identity_links_deleted']) await db.raw(`DROP TRIGGER IF EXISTS ${t}`);
    }
    await db.schema.alterTable('identity_links', (t) => {
      t.dropIndex(['project_id', 'seq'], 'identity_links_project_seq');
    });
    await db.schema.alterTable('identity_links', (t) => {
      t.dropColumn('seq');
    });
    await db.schema.dropTableIfExists('identity_link_seq');
  },
};
