import type { Knex } from 'knex';
import type { Migration } from './index.js';
import { RATE_LIMIT_WINDOWS_BATCH_0013 } from './0013_rate_limit_batch.js';

/**
 * `rate_limit_windows_batch` answers a batch in which every request is admitted (the common case:
 * limits are far from reached) with one UPDATE per key for the whole batch, where 0013 ran the
 * per-request function (four statements) once per request: a batch of about four ingestion
 * requests cost PostgreSQL about 1 ms that way (docs/performance.md). A batch is admitted whole when,
 * for every key, the requests naming it fit in what its window has left; a window that has
 * ended counts as empty, as the per-request function resets it. Otherwise, or when requests name
 * one key with different limits, the batch goes request by request as before. One clock reading
 * serves the whole batch.
 */
export const rateLimitBatchAtOnce: Migration = {
  name: '0015_rate_limit_batch_at_once',
  async up(db: Knex) {
    if (db.client.config.client !== 'pg') return;
    await db.raw(`CREATE OR REPLACE FUNCTION rate_limit_windows_batch(reqs jsonb) RETURNS TABLE (req integer, full_key text, wait_ms bigint)
    LANGUAGE plpgsql AS $$
    DECLARE
      r record;
      now_ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000);
      ks text[];
      cnts bigint[];
      ws bigint[];
      whole boolean;
    BEGIN
      INSERT INTO rate_limit_counters (key, value, at_ms)
        SELECT DISTINCT c->>'k', 0, 0 FROM jsonb_array_elements(reqs) q, jsonb_array_elements(q) c ORDER BY 1
        ON CONFLICT (key) DO NOTHING;
      PERFORM 1 FROM rate_limit_counters rc
        WHERE rc.key IN (SELECT c->>'k' FROM jsonb_array_elements(reqs) q, jsonb_array_elements(q) c) ORDER BY rc.key FOR UPDATE;
      -- Per key: the requests naming it, and whether they all fit in what its window has left.
      SELECT array_agg(b.k), array_agg(b.cnt), array_agg(b.w),
             bool_and(b.uniform AND (CASE WHEN rc.at_ms <= now_ms THEN 0 ELSE rc.value END) + b.cnt <= b.n)
        INTO ks, cnts, ws, whole
        FROM (SELECT c->>'k' AS k, count(DISTINCT o.i) AS cnt, min((c->>'n')::bigint) AS n, min((c->>'w')::bigint) AS w,
                     min((c->>'n')::bigint) = max((c->>'n')::bigint) AND min((c->>'w')::bigint) = max((c->>'w')::bigint) AS uniform
              FROM jsonb_array_elements(reqs) WITH ORDINALITY AS o(checks, i), jsonb_array_elements(o.checks) c GROUP BY 1) b
        JOIN rate_limit_counters rc ON rc.key = b.k;
      IF whole THEN
        UPDATE rate_limit_counters rc
          SET value = (CASE WHEN rc.at_ms <= now_ms THEN 0 ELSE rc.value END) + b.cnt,
              at_ms = CASE WHEN rc.at_ms <= now_ms THEN now_ms + b.w ELSE rc.at_ms END
          FROM unnest(ks, cnts, ws) AS b(k, cnt, w) WHERE rc.key = b.k;
        RETURN;
      END IF;
      FOR r IN SELECT o.i::integer AS i, o.checks FROM jsonb_array_elements(reqs) WITH ORDINALITY AS o(checks, i) ORDER BY o.i LOOP
        RETURN QUERY SELECT r.i, w.full_key, w.wait_ms FROM rate_limit_windows(r.checks) w;
      END LOOP;
    END $$`);
  },
  async down(db: Knex) {
    if (db.client.config.client !== 'pg') return;
    await db.raw(RATE_LIMIT_WINDOWS_BATCH_0013);
  },
};
