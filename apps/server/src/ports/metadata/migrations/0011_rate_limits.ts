import type { Knex } from 'knex';

/**
 * Request counts shared by every API process on PostgreSQL (http/rate-limit-shared.ts): one row
 * per key, a fixed window (`value` requests until `at_ms`) or a token bucket (`value` tokens at
 * `at_ms`), each taken by one function call, so a request costs one round trip and the check and
 * the count cannot be split by another process. Times are the database's clock, one for all
 * processes. SQLite runs one process, which counts in memory: nothing to create there.
 */
export const rateLimits = {
  name: '0011_rate_limits',
  async up(db: Knex) {
    if (db.client.config.client !== 'pg') return;
    await db.raw(`CREATE UNLOGGED TABLE rate_limit_counters (
      key text PRIMARY KEY,
      value double precision NOT NULL,
      at_ms bigint NOT NULL
    )`);
    // Every key's row exists, then all are locked in key order (one order: no deadlock between
    // requests); a full window refuses the request and counts it in none.
    await db.raw(`CREATE FUNCTION rate_limit_windows(checks jsonb) RETURNS TABLE (full_key text, wait_ms bigint)
    LANGUAGE plpgsql AS $$
    DECLARE
      now_ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000);
    BEGIN
      INSERT INTO rate_limit_counters (key, value, at_ms)
        SELECT i.k, 0, 0 FROM jsonb_to_recordset(checks) AS i(k text) ORDER BY i.k
        ON CONFLICT (key) DO NOTHING;
      PERFORM 1 FROM rate_limit_counters c
        WHERE c.key IN (SELECT i.k FROM jsonb_to_recordset(checks) AS i(k text)) ORDER BY c.key FOR UPDATE;
      RETURN QUERY SELECT c.key, c.at_ms - now_ms FROM rate_limit_counters c
        JOIN jsonb_to_recordset(checks) AS i(k text, n integer, w bigint) ON i.k = c.key
        WHERE c.at_ms > now_ms AND c.value >= i.n;
      IF FOUND THEN RETURN; END IF;
      UPDATE rate_limit_counters c
        SET value = CASE WHEN c.at_ms <= now_ms THEN 1 ELSE c.value + 1 END,
            at_ms = CASE WHEN c.at_ms <= now_ms THEN now_ms + i.w ELSE c.at_ms END
        FROM jsonb_to_recordset(checks) AS i(k text, n integer, w bigint) WHERE c.key = i.k;
    END $$`);
    // 0 when a token was taken, else the ms until one is back (nothing taken).
    await db.raw(`CREATE FUNCTION rate_limit_bucket(bucket_key text, per_second double precision, burst double precision) RETURNS bigint
    LANGUAGE plpgsql AS $$
    DECLARE
      now_ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000);
      have double precision;
    BEGIN
      INSERT INTO rate_limit_counters (key, value, at_ms) VALUES (bucket_key, burst, now_ms) ON CONFLICT (key) DO NOTHING;
      SELECT least(burst, c.value + greatest(0, now_ms - c.at_ms) / 1000.0 * per_second) INTO have
        FROM rate_limit_counters c WHERE c.key = bucket_key FOR UPDATE;
      IF have < 1 THEN RETURN ceil((1 - have) / per_second * 1000); END IF;
      UPDATE rate_limit_counters SET value = have - 1, at_ms = now_ms WHERE key = bucket_key;
      RETURN 0;
    END $$`);
  },
  async down(db: Knex) {
    if (db.client.config.client !== 'pg') return;
    await db.raw('DROP FUNCTION IF EXISTS rate_limit_bucket(text, double precision, double precision)');
    await db.raw('DROP FUNCTION IF EXISTS rate_limit_windows(jsonb)');
    await db.raw('DROP TABLE IF EXISTS rate_limit_counters');
  },
};
