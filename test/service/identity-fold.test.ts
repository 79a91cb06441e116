import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { drained, ev, ingest } from '../support/ingestion.js';
import { personKey } from '../../apps/server/src/ports/events/schema.js';
import { FOLD_LOCK, foldExclusively, foldIdentityLinks } from '../../apps/server/src/identity/fold.js';

/**
 * Identity at write time through the real ingestion path: events carry the person_id of the
 * links stored when they were written, a later link overrides them until the fold rewrites the
 * rows, and the answers are the same before and after the fold.
 */
forEachBackend('identity: persons on events and the fold', (backend) => {
  let t: TestService;
  let acme: Tenant;
  const T0 = Date.UTC(2024, 6, 2, 12);

  before(async () => {
    t = await startTestService(backend, { IDENTITY_FOLD_INTERVAL_MS: '0' });
    acme = await createTenant(t, 'Acme');
  });
  after(async () => t?.close());

  const send = (body: unknown) => ingest(t, acme.project.token).post('/track', body);
  const q = (s: string) => `'${s.replace(/'/g, "''")}'`;
  /** Stored rows (each dedup key once): distinct_id, time and person_id (person_key checked). */
  const rows = async () => {
    const final = t.svc.deps.events.dialect === 'clickhouse' ? 'FINAL' : '';
    const text = t.svc.deps.events.dialect === 'clickhouse' ? 'String' : 'VARCHAR';
    const r = await t.svc.deps.events.query<{ distinct_id: string; time: number; person_id: string; k: string }>(
      `SELECT distinct_id, time, person_id, CAST(person_key AS ${text}) AS k FROM events ${final} WHERE project_id = ${acme.project.id} ORDER BY time, distinct_id`);
    // The fold rewrites person_key with person_id: the number analyses group by stays its key.
    for (const x of r) assert.equal(x.k, personKey(x.person_id).toString(), `${x.distinct_id} -> ${x.person_id}`);
    return r.map((x) => `${x.distinct_id}@${Number(x.time) - T0} -> ${x.person_id}`);
  };
  const folded = async (distinctId: string) => {
    const final = t.svc.deps.events.dialect === 'clickhouse' ? 'FINAL' : '';
    const r = await t.svc.deps.events.query<{ folded: number }>(
      `SELECT folded FROM identity_links ${final} WHERE project_id = ${acme.project.id} AND distinct_id = ${q(distinctId)}`);
    return r.map((x) => Number(x.folded));
  };
  /** Unique users of the week, and of each event name, through the API. */
  const answers = async () => {
    const out: Record<string, number | string> = {};
    for (const event of ['$all_events', 'Viewed', 'Bought']) {
      const r = await acme.owner.post('/api/query/segmentation', { projectId: acme.project.id, event, from: '2024-07-01', to: '2024-07-07', unit: 'week', type: 'unique' });
      assert.equal(r.status, 200, r.text);
      out[event] = (r.body.series as Array<{ data: Array<{ value: number }> }>).reduce((s, x) => s + x.data.reduce((a, d) => a + d.value, 0), 0);
    }
    const f = await acme.owner.post('/api/query/funnel', { projectId: acme.project.id, steps: ['Viewed', 'Bought'], windowDays: 7, from: '2024-07-01', to: '2024-07-07' });
    assert.equal(f.status, 200, f.text);
    out.funnelConverted = f.body[1].count;
    const c = await acme.owner.post('/api/cohorts/preview', { projectId: acme.project.id, definition: { op: 'and', criteria: [{ kind: 'behavior', event: 'Viewed', op: 'gte', count: 2, windowDays: 0 }] } });
    assert.equal(c.status, 200, c.text);
    out.cohortViewedTwice = c.body.count;
    // Data browsing resolves the same way: the people behind the stored events, oldest first.
    const list = await acme.owner.get(`/api/data/events?projectId=${acme.project.id}&limit=1000`);
    assert.equal(list.status, 200, list.text);
    out.browsed = (list.body.events as Array<{ time: number; distinct_id: string }>).sort((a, b) => a.time - b.time)
      .map((e) => `${Number(e.time) - T0}:${e.distinct_id}`).join(' ');
    return out;
  };

  it('writes person_id at ingestion, overrides it with later links, and folds them without changing an answer', async () => {
    // An anonymous visit, and a CRM id with history of its own.
    await send([ev('Viewed', '$device:f1', { time: T0 }), ev('Viewed', '$device:f1', { time: T0 + 1000 }), ev('Viewed', 'crm-7', { time: T0 + 500 })]);
    await drained(t);
    // The visitor logs in (mixpanel-browser's $identify); a late event of the device arrives after.
    await send([ev('$identify', 'fold-user', { $anon_distinct_id: '$device:f1', time: T0 + 2000 }), ev('Bought', 'fold-user', { time: T0 + 3000 })]);
    await drained(t);
    await send(ev('Viewed', '$device:f1', { time: T0 + 4000 }));
    // The CRM id joins the user from now on (it has history: not retroactive).
    assert.equal((await ingest(t, acme.project.token).post('/alias', { alias: 'crm-7', distinct_id: 'fold-user' })).status, 200);
    await drained(t);

    assert.deepEqual(await rows(), [
      '$device:f1@0 -> $device:f1', // written before the link: overridden until the fold
      'crm-7@500 -> crm-7', // before the alias' from_time: stays crm-7 for good
      '$device:f1@1000 -> $device:f1',
      'fold-user@2000 -> fold-user',
      'fold-user@3000 -> fold-user',
      '$device:f1@4000 -> fold-user', // resolved at write time
    ]);
    assert.deepEqual(await folded('$device:f1'), [0]);
    const before = await answers();
    assert.deepEqual(before, {
      $all_events: 2, Viewed: 2, Bought: 1, funnelConverted: 1, cohortViewedTwice: 1,
      browsed: '0:fold-user 500:crm-7 1000:fold-user 2000:fold-user 3000:fold-user 4000:fold-user',
    });

    assert.equal(await foldIdentityLinks(t.svc.deps), 0, 'the links are younger than IDENTITY_FOLD_MIN_AGE_MS');
    if (t.svc.deps.db.client.config.client === 'pg') {
      // Another process folding (holding the advisory lock): the worker's run steps aside.
      let release!: () => void;
      const held = new Promise<void>((r) => { release = r; });
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => { locked = r; });
      const other = t.svc.deps.db.transaction(async (trx) => {
        await trx.raw('SELECT pg_advisory_xact_lock(?)', [FOLD_LOCK]);
        locked();
        await held;
      });
      await isLocked;
      assert.equal(await foldExclusively(t.svc.deps, { minAgeMs: 0 }), null);
      release();
      await other;
      assert.deepEqual(await folded('$device:f1'), [0], 'nothing folded while the other process held the lock');
    }
    assert.equal(await foldExclusively(t.svc.deps, { minAgeMs: 0 }), 2);
    assert.deepEqual(await rows(), [
      '$device:f1@0 -> fold-user',
      'crm-7@500 -> crm-7',
      '$device:f1@1000 -> fold-user',
      'fold-user@2000 -> fold-user',
      'fold-user@3000 -> fold-user',
      '$device:f1@4000 -> fold-user',
    ]);
    assert.deepEqual(await folded('$device:f1'), [1]);
    assert.deepEqual(await folded('crm-7'), [1]);
    assert.deepEqual(await answers(), before);
    assert.equal(await foldIdentityLinks(t.svc.deps, { minAgeMs: 0 }), 0, 'nothing left to fold');

    // A redelivered link (SDKs repeat $device_id/$user_id) is mirrored again unfolded: still the same answers.
    await send(ev('Viewed', 'fold-user', { $device_id: '$device:f1', $user_id: 'fold-user', time: T0 + 5000 }));
    await drained(t);
    assert.deepEqual(await answers(), { ...before, browsed: `${before.browsed} 5000:fold-user` });
  });
});
