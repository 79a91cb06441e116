import type { Knex } from 'knex';
import type { Migration } from './index.js';

/**
 * Several requests' window checks in one call (http/rate-limit-shared.ts groups the checks that
 * arrive while one is running): `reqs` is an array of `rate_limit_windows` arguments, answered in
 * that order (`req`: 1-based position) with the same rows each call would return alone. Every key
 * of the batch is created and locked in key order first, as `rate_limit_windows` does for one
 * request, so batches of different API processes cannot deadlock; the inner calls then find
 * their rows locked by their own transaction.
 */
export const rateLimitBatch: Migration = {
  name: '0013_rate_limit_batch',
  async up(db: Knex) {
    if (db.client.config.client !== 'pg') return;
    await db.raw(RATE_LIMIT_WINDOWS_BATCH_0013);
  },
  async down(db: Knex) {
    if (db.client.config.client !== 'pg') return;
    await db.raw('DROP FUNCTION IF EXISTS rate_limit_windows_batch(jsonb)');
  },
};

/** The function as this migration made it (0015 replaces it and restores it on the way down). */
export const RATE_LIMIT_WINDOWS_BATCH_0013 = `CREATE OR REPLACE FUNCTION rate_limit_windows_batch(reqs jsonb) RETURNS TABLE (req integer, full_key text, wait_ms bigint)
    LANGUAGE plpgsql AS $$
    DECLARE
      r record;
    BEGIN
      INSERT INTO rate_limit_counters (key, value, at_ms)
        SELECT DISTINCT c->>'k', 0, 0 FROM jsonb_array_elements(reqs) q, jsonb_array_elements(q) c ORDER BY 1
        ON CONFLICT (key) DO NOTHING;
      PERFORM 1 FROM rate_limit_counters rc
        WHERE rc.key IN (SELECT c->>'k' FROM jsonb_array_elements(reqs) q, jsonb_array_elements(q) c) ORDER BY rc.key FOR UPDATE;
      FOR r IN SELECT o.i::integer AS i, o.checks FROM jsonb_array_elements(reqs) WITH ORDINALITY AS o(checks, i) ORDER BY o.i LOOP
        RETURN QUERY SELECT r.i, w.full_key, w.wait_ms FROM rate_limit_windows(r.checks) w;
      END LOOP;
    END $$`;
