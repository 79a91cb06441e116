import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { migrateMetadataStore, openMetadataStore, type Db } from '../../apps/server/src/ports/metadata/knex.js';

/**
 * PostgreSQL's shared request windows (migrations 0011, 0013, 0015): a batch through
 * `rate_limit_windows_batch` (admitted whole in one update per key when everything fits, request
 * by request otherwise) answers and counts exactly as `rate_limit_windows` called once per request.
 */
forEachBackend('rate limits: a batch of window checks in PostgreSQL', (backend) => {
  if (backend.name !== 'production') return;
  let db: Db;
  let drop: () => Promise<void>;
  before(async () => {
    const stores = await backend.provision();
    drop = stores.drop;
    db = openMetadataStore({ databaseUrl: stores.env.DATABASE_URL, dataDir: '/nonexistent' });
    await migrateMetadataStore(db);
  });
  after(async () => {
    await db?.destroy();
    await drop?.();
  });

  type Check = { k: string; n: number; w: number };
  const batch = async (reqs: Check[][]) =>
    (await db.raw('SELECT req, full_key, wait_ms FROM rate_limit_windows_batch(?::jsonb)', [JSON.stringify(reqs)])).rows as Array<{ req: number; full_key: string; wait_ms: string }>;
  const one = async (checks: Check[]) =>
    (await db.raw('SELECT full_key, wait_ms FROM rate_limit_windows(?::jsonb)', [JSON.stringify(checks)])).rows as Array<{ full_key: string; wait_ms: string }>;
  const values = async (prefix: string) => Object.fromEntries(
    ((await db.raw("SELECT key, value FROM rate_limit_counters WHERE key LIKE ? ORDER BY key", [`${prefix}%`])).rows as Array<{ key: string; value: number }>)
      .map((r) => [r.key.slice(prefix.length), Number(r.value)]));

  it('answers and counts random batches as one call per request would, whether admitted whole or not', async () => {
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const limits: Record<string, number> = { ip1: 3, ip2: 5, ip3: 100, p1: 8, p2: 1000 };
    let whole = 0;
    let split = 0;
    for (let round = 0; round < 40; round++) {
      const reqs = Array.from({ length: 1 + rnd(8) }, () => {
        const ip = `ip${1 + rnd(3)}`;
        const p = `p${1 + rnd(2)}`;
        return [ip, p];
      });
      const asBatch = reqs.map((keys) => keys.map((k) => ({ k: `a:${k}`, n: limits[k], w: 60_000 })));
      const asOnes = reqs.map((keys) => keys.map((k) => ({ k: `b:${k}`, n: limits[k], w: 60_000 })));
      const got = await batch(asBatch);
      const want: Array<{ req: number; full_key: string }> = [];
      for (let i = 0; i < asOnes.length; i++) for (const r of await one(asOnes[i])) want.push({ req: i + 1, full_key: r.full_key.replace(/^b:/, 'a:') });
      assert.deepEqual(got.map((r) => ({ req: r.req, full_key: r.full_key })), want, `round ${round}`);
      assert.ok(got.every((r) => Number(r.wait_ms) > 0));
      assert.deepEqual(await values('a:'), await values('b:'), `counts after round ${round}`);
      if (got.length === 0) whole++;
      else split++;
    }
    assert.ok(whole > 3 && split > 3, `both paths ran: ${whole} admitted whole, ${split} with refusals`);
  });

  it('restarts an ended window for the whole batch, and refuses nothing that fits it', async () => {
    await db.raw("INSERT INTO rate_limit_counters (key, value, at_ms) VALUES ('old', 5, 1)");
    assert.deepEqual(await batch([[{ k: 'old', n: 5, w: 60_000 }], [{ k: 'old', n: 5, w: 60_000 }]]), []);
    const row = (await db.raw("SELECT value, at_ms FROM rate_limit_counters WHERE key = 'old'")).rows[0];
    assert.equal(Number(row.value), 2, 'counted from zero, as the first request after the window would');
    assert.ok(Number(row.at_ms) > Date.now() + 50_000, 'a new window from now');
  });
});
