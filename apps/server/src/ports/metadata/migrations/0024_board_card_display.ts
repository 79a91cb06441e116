import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * How a board's report card shows its report: `chart` (the report's own chart), `number` (each
 * series' total over the range, with the change from the previous period when the report
 * compares) or `table` (series by bucket). Kept per card, as Mixpanel does, so one report can be
 * a chart on one board and a number on another.
 */
export const boardCardDisplay: Migration = {
  name: '0024_board_card_display',
  async up(db: Knex) {
    await db.schema.alterTable('board_cards', (t) => {
      t.string('display', 16).notNullable().defaultTo('chart');
    });
  },
  async down(db: Knex) {
    await db.schema.alterTable('board_cards', (t) => t.dropColumn('display'));
  },
};
