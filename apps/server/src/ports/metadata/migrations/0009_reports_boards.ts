import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * Saved reports, boards and their cards, annotations and lexicon entries. Queries, filters and
 * date ranges are JSON text (validated by the domains' zod schemas on write); times are Unix ms.
 * A report deleted from under a board takes its cards with it (as a deleted insight leaves a
 * dashboard); a project deleted takes everything.
 */
export const reportsBoards: Migration = {
  name: '0009_reports_boards',
  async up(db: Knex) {
    await db.schema.createTable('reports', (t) => {
      t.increments('id').primary();
      t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
      t.integer('created_by').nullable();
      t.string('name', 200).notNullable();
      t.text('description').nullable();
      t.string('type', 20).notNullable();
      t.text('query').notNullable();
      t.bigInteger('created_at').notNullable();
      t.bigInteger('updated_at').notNullable();
      t.index(['project_id']);
    });
    await db.schema.createTable('boards', (t) => {
      t.increments('id').primary();
      t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
      t.integer('created_by').nullable();
      t.string('name', 200).notNullable();
      t.text('date_range').nullable();
      t.text('filters').notNullable();
      t.bigInteger('created_at').notNullable();
      t.bigInteger('updated_at').notNullable();
      t.index(['project_id']);
    });
    await db.schema.createTable('board_cards', (t) => {
      t.increments('id').primary();
      t.integer('board_id').notNullable().references('boards.id').onDelete('CASCADE');
      t.string('card_type', 10).notNullable();
      t.integer('report_id').nullable().references('reports.id').onDelete('CASCADE');
      t.text('text').nullable();
      t.integer('position').notNullable();
      t.integer('span').notNullable();
      t.string('height', 10).notNullable();
      t.index(['board_id']);
      t.index(['report_id']);
    });
    await db.schema.createTable('annotations', (t) => {
      t.increments('id').primary();
      t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
      t.integer('created_by').nullable();
      t.string('date', 10).notNullable();
      t.text('description').notNullable();
      t.bigInteger('created_at').notNullable();
      t.bigInteger('updated_at').notNullable();
      t.index(['project_id', 'date']);
    });
    await db.schema.createTable('lexicon_entries', (t) => {
      t.increments('id').primary();
      t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
      t.string('kind', 10).notNullable();
      t.string('name', 500).notNullable();
      t.text('description').nullable();
      t.string('display_name', 200).nullable();
      t.boolean('hidden').notNullable().defaultTo(false);
      t.text('tags').notNullable();
      t.integer('updated_by').nullable();
      t.bigInteger('created_at').notNullable();
      t.bigInteger('updated_at').notNullable();
      t.unique(['project_id', 'kind', 'name']);
    });
  },
  async down(db: Knex) {
    for (const t of ['lexicon_entries', 'annotations', 'board_cards', 'boards', 'reports']) await db.schema.dropTableIfExists(t);
  },
};
