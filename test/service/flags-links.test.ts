import assert from 'node:assert/strict';
import knex from 'knex';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';
import { drained, ingest } from '../support/ingestion.js';
import { statementsDuring } from '../support/queries.js';
import { bucket } from '../../apps/flag-evaluation/src/index.js';
import { LinkIndex } from '../../apps/server/src/identity/link-index.js';
import type { Db } from '../../apps/server/src/ports/metadata/knex.js';

/**
 * Remote evaluation resolves canonical ids from the in-memory link index (identity/link-index.ts,
 * docs/flags.md "Identity links on the hot path"): no metadata read per request, links made in
 * this process visible at once, links written by another process within one poll.
 */
forEachBackend('flags: identity links off the hot path', (backend) => {
  let t: TestService;
  let acme: Tenant;
  const db = () => t.svc.deps.db;
  const pid = () => acme.project.id;
  let pollMs: number;
  /** Another process's view of the same store (a second pool on PostgreSQL; SQLite in memory has one connection). */
  let other: Db;

  before(async () => {
    t = await sharedService(backend);
    acme = await createTenant(t, 'LinkIdx');
    pollMs = t.svc.deps.links.pollMs;
    other = t.svc.deps.config.databaseUrl ? knex({ client: 'pg', connection: t.svc.deps.config.databaseUrl, pool: { min: 0, max: 1 } }) as Db : db();
    const flags = [
      { key: 'thirty', name: 'thirty', rules: [{ rolloutPct: 30 }] },
      { key: 'split', name: 'split', variants: [{ key: 'a', rolloutPct: 50 }, { key: 'b', rolloutPct: 50, payload: { b: 1 } }], rules: [{ rolloutPct: 100 }] },
      { key: 'vip', name: 'vip', rules: [{ rolloutPct: 100, distinctIds: ['vip-user'] }] },
    ];
    for (const f of flags) {
      const r = await acme.owner.post(`/api/flags?projectId=${pid()}`, { ...f, active: true });
      assert.equal(r.status, 201, r.text);
    }
  });
  after(async () => {
    if (other && other !== db()) await other.destroy();
  });

  const evaluate = async (distinctId: string) => {
    const r = await t.anon.post('/flags/evaluate', { distinct_id: distinctId }, { headers: { 'x-service-token': acme.project.token } });
    assert.equal(r.status, 200, r.text);
    return r.body.flags as Record<string, { enabled: boolean; variant: string | null; reason: string }>;
  };
  const thirtyOn = async (id: string) => (await evaluate(id)).thirty.enabled;
  /** An id in the 30 % rollout and one out of it (bucketing is by canonical id). */
  const pair = (tag: string) => {
    let inside = '';
    let outside = '';
    for (let i = 0; !inside || !outside; i++) {
      if (!inside && bucket(`thirty.${tag}-user-${i}`) < 0.3) inside = `${tag}-user-${i}`;
      if (!outside && bucket(`thirty.$device:${tag}-${i}`) >= 0.3) outside = `$device:${tag}-${i}`;
    }
    return { user: inside, device: outside };
  };
  const queriesDuring = (fn: () => Promise<void>) => statementsDuring(db(), fn);
  /** Waits until `probe` holds, for at most `ms`; the time it took. */
  async function within(ms: number, probe: () => Promise<boolean>): Promise<number> {
    const start = Date.now();
    for (;;) {
      if (await probe()) return Date.now() - start;
      if (Date.now() - start > ms) assert.fail(`not within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  /** The stated bound for another process's link: one poll interval plus one poll's duration (slack for a loaded CI machine). */
  const bound = () => pollMs + 700;

  it('after warm-up, POST /flags/evaluate and GET /flags read no identity link and nothing per request from the metadata store', async () => {
    const first = await queriesDuring(async () => void (await evaluate('warm-up')));
    assert.ok(first.some((q) => /\bidentity_links\b/.test(q.sql)), 'the first evaluation loads the project’s links (the listener sees it)');
    await evaluate('warm-up-2');
    const ids = Array.from({ length: 120 }, (_, i) => `hot-${i}`);
    const started = Date.now();
    const sql = await queriesDuring(async () => {
      for (const id of ids) await evaluate(id);
      for (const id of ids.slice(0, 30)) {
        const r = await t.anon.get(`/flags?context=${encodeURIComponent(JSON.stringify({ distinct_id: id }))}&token=${acme.project.token}`);
        assert.equal(r.status, 200, r.text);
      }
    });
    const seconds = (Date.now() - started) / 1000;
    assert.deepEqual(sql.filter((q) => /\bidentity_links\b/.test(q.sql)).map((q) => q.sql), [], 'no identity link read');
    const naming = sql.filter((q) => q.bindings.some((b) => typeof b === 'string' && b.startsWith('hot-')));
    assert.deepEqual(naming.map((q) => q.sql), [], 'no statement names a requested id');
    // What remains are the once-a-second refreshes (project token, live flags and their change number, the links counter)
    // and the privacy runner's poll (a background worker): a few per second, none per request (150 requests ran).
    assert.ok(sql.length <= 6 * (Math.ceil(seconds) + 1), `${sql.length} statements in ${seconds.toFixed(2)} s: ${sql.map((q) => q.sql).join(' | ')}`);
    for (const q of sql) assert.match(q.sql, /\b(identity_link_seq|projects|flags|flag_revisions|privacy_requests)\b/, q.sql);
  });

  it('an /alias applied in this process is used by the very next evaluation (bucketing by the canonical id)', async () => {
    // Proven only when no poll ran between the commit and the evaluation: retried with fresh ids if one did.
    for (let attempt = 0; ; attempt++) {
      const { user, device } = pair(`alias${attempt}`);
      assert.equal(await thirtyOn(device), false);
      assert.equal(await thirtyOn(user), true);
      const seqBefore = t.svc.deps.links.stats(pid())!.seq;
      const r = await ingest(t, acme.project.token).post('/alias', { alias: device, distinct_id: user });
      assert.equal(r.status, 200, r.text);
      await drained(t);
      const on = await thirtyOn(device);
      if (t.svc.deps.links.stats(pid())!.seq !== seqBefore && attempt < 4) continue;
      assert.equal(t.svc.deps.links.stats(pid())!.seq, seqBefore, 'a poll ran in every attempt');
      assert.equal(on, true, 'the device now buckets as its user');
      assert.deepEqual((await evaluate(device)).split, (await evaluate(user)).split);
      break;
    }
  });

  it('a link written by another process is used within one poll; so are a re-pointed link and a deleted one', async () => {
    const { user, device } = pair('other');
    assert.equal(await thirtyOn(device), false);
    await other('identity_links').insert({ project_id: pid(), distinct_id: device, canonical_id: user, from_time: 0, created_at: Date.now() });
    const took = await within(bound(), () => thirtyOn(device));
    assert.ok(took <= bound(), `${took} ms`);

    // A merge re-points the link to another cluster (canonical id changes): followed too.
    const { device: elsewhere } = pair('elsewhere');
    await other('identity_links').where({ project_id: pid(), distinct_id: device }).update({ canonical_id: elsewhere });
    await within(bound(), async () => !(await thirtyOn(device)));
    assert.deepEqual((await evaluate(device)).split, (await evaluate(elsewhere)).split);

    // Deleted (privacy deletion): the id evaluates as itself again.
    await other('identity_links').insert({ project_id: pid(), distinct_id: `${device}-2`, canonical_id: user, from_time: 0, created_at: Date.now() });
    await within(bound(), () => thirtyOn(`${device}-2`));
    await other('identity_links').where({ project_id: pid(), distinct_id: `${device}-2` }).delete();
    await within(bound(), async () => !(await thirtyOn(`${device}-2`)));
  });

  it('every insert and re-point gets a higher change number; deletes bump the epoch', async () => {
    const row = () => db()('identity_link_seq').where({ project_id: pid() }).first();
    const before = await row();
    await other('identity_links').insert([
      { project_id: pid(), distinct_id: 'seq-a', canonical_id: 'seq-c', from_time: 0, created_at: 1 },
      { project_id: pid(), distinct_id: 'seq-b', canonical_id: 'seq-c', from_time: 0, created_at: 1 },
    ]);
    const seqOf = async (id: string) => Number((await db()('identity_links').where({ project_id: pid(), distinct_id: id }).first()).seq);
    const [a, b] = [await seqOf('seq-a'), await seqOf('seq-b')];
    assert.ok(a > Number(before.seq) && b > a, `${before.seq} ${a} ${b}`);
    await other('identity_links').where({ project_id: pid(), distinct_id: 'seq-a' }).update({ canonical_id: 'seq-d' });
    assert.ok((await seqOf('seq-a')) > b);
    assert.equal(Number((await row()).seq), await seqOf('seq-a'));
    // An insert that conflicts changes nothing stored (the counter may move).
    await other('identity_links').insert({ project_id: pid(), distinct_id: 'seq-b', canonical_id: 'x', from_time: 0, created_at: 1 }).onConflict(['project_id', 'distinct_id']).ignore();
    assert.equal((await db()('identity_links').where({ project_id: pid(), distinct_id: 'seq-b' }).first()).canonical_id, 'seq-c');
    const epoch = Number((await row()).epoch);
    await other('identity_links').where({ project_id: pid() }).whereIn('distinct_id', ['seq-a', 'seq-b']).delete();
    assert.ok(Number((await row()).epoch) > epoch);
  });

  it('one transaction writing 60,000 links, and one statement deleting them, stay linear (the counter row is written once per statement)', async function () {
    this.timeout(120_000);
    const bulk = await createTenant(t, 'LinkBulk');
    const p = bulk.project.id;
    const n = 60_000;
    let started = Date.now();
    await db().transaction(async (trx) => {
      for (let i = 0; i < n; i += 500) {
        await trx('identity_links').insert(Array.from({ length: Math.min(500, n - i) }, (_, k) => (
          { project_id: p, distinct_id: `bulk-${i + k}`, canonical_id: `bulk-user-${(i + k) % 97}`, from_time: 0, created_at: 1 })));
      }
    });
    const insertMs = Date.now() - started;
    const stamped = await db()('identity_links').where({ project_id: p }).select(db().raw('count(distinct seq) as n, max(seq) as top'));
    const counter = await db()('identity_link_seq').where({ project_id: p }).first();
    assert.equal(Number(stamped[0].n), n, 'every link has its own change number');
    assert.equal(Number(counter.seq), Number(stamped[0].top), 'the counter holds the highest');
    started = Date.now();
    await db()('identity_links').where({ project_id: p }).delete();
    const deleteMs = Date.now() - started;
    assert.ok(Number((await db()('identity_link_seq').where({ project_id: p }).first()).epoch) > Number(counter.epoch));
    // Linear here is well under a second; one counter update per row made this 20 s and more on PostgreSQL.
    assert.ok(insertMs < 8000 && deleteMs < 8000, `insert ${insertMs} ms, delete ${deleteMs} ms`);
  });

  it('past maxLinks a project falls back to one read per request, with the same answers', async () => {
    const small = new LinkIndex(db(), { maxLinks: 2, pollMs: 50 });
    try {
      await db()('identity_links').insert(['m1', 'm2', 'm3'].map((id) => ({ project_id: pid(), distinct_id: id, canonical_id: 'm-user', from_time: 0, created_at: 1 })));
      const links = await db()('identity_links').where({ project_id: pid() }).select('distinct_id', 'canonical_id');
      assert.ok(links.length > 2);
      for (const l of links) assert.equal(await small.canonicalOf(pid(), l.distinct_id), l.canonical_id);
      assert.equal(await small.canonicalOf(pid(), 'nobody'), 'nobody');
      assert.deepEqual(small.stats(pid()), { loaded: true, links: 0, overBound: true, seq: 0 });
      const sql = await queriesDuring(async () => void (await small.canonicalOf(pid(), links[0].distinct_id)));
      assert.equal(sql.filter((q) => /\bidentity_links\b/.test(q.sql)).length, 1);
      // Under the bound the same lookups come from memory.
      const big = new LinkIndex(db(), { pollMs: 50 });
      for (const l of links) assert.equal(await big.canonicalOf(pid(), l.distinct_id), l.canonical_id);
      const none = await queriesDuring(async () => {
        for (const l of links) assert.equal(big.canonicalOf(pid(), l.distinct_id), l.canonical_id);
      });
      assert.deepEqual(none, []);
      big.stop();
    } finally {
      small.stop();
    }
  });
});
