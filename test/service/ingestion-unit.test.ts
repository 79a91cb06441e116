import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type TestService } from '../support/service.js';
import { applyBatch, applyUnit } from '../../apps/server/src/ingestion/apply.js';
import type { IngestionBatch } from '../../apps/server/src/ports/buffer/port.js';

/**
 * applyUnit (what the in-process buffer hands a run of queued batches to: one write per store and
 * table) stores exactly what applying the same batches one by one stores: events with the same
 * person_id, the same links (metadata and event store, same from_time) and the same profiles,
 * for a mix of track, alias and engage batches whose answers depend on their order. Each case
 * uses fresh projects: one gets the batches one by one, the other as one unit.
 */
const T0 = Date.UTC(2024, 2, 1, 9);
const MIN = 60_000;
const at = (m: number) => T0 + m * MIN;

type Rec = Record<string, unknown>;
let eventId = 1;
const e = (event: string, distinctId: string, minute: number, props: Rec = {}): Rec => {
  const insertId = `${event}-${distinctId}-${minute}`;
  return { t: 'e', id: eventId++, event, distinct_id: distinctId, time: at(minute), insert_id: insertId, received_at: at(minute), properties: { $insert_id: insertId, ...props } };
};

/** The batches, in acceptance order (fresh records each call: applying mutates them). */
function batches(projectId: number): IngestionBatch[] {
  const b = (i: number, kind: IngestionBatch['kind'], records: Rec[]): IngestionBatch => ({ id: `b${i}`, kind, projectId, acceptedAt: at(100 + i), records });
  return [
    // A $set_once on an anonymous id before it is identified, and a profile of a CRM id.
    b(0, 'engage', [{ index: 0, distinct_id: '$device:a', set_once: { first_page: '/home' } }, { index: 1, distinct_id: 'crm-1', set: { plan: 'pro', seats: 3 } }]),
    b(1, 'track', [
      e('view', '$device:a', 1), e('view', '$device:a', 2),
      e('view', 'legacy', 3),
      e('view', '$device:b', 4),
      e('$identify', 'bea', 5, { $anon_distinct_id: '$device:b' }),
      e('view', 'bea', 6, { $device_id: '$device:b', $user_id: 'bea' }),
    ]),
    // Anonymous: retroactive.
    b(2, 'alias', [{ alias: '$device:a', distinct_id: 'alice' }]),
    b(3, 'track', [
      e('signup', 'alice', 7),
      // legacy has history (batch 1): only from the alias call on.
      { t: 'a', alias: 'legacy', distinct_id: 'bob', time: at(8) },
      e('buy', 'legacy', 9), e('buy', 'legacy', 2.5),
      e('view', 'pending', 10),
    ]),
    // Keyed by the cluster now: alice's profile (which batch 2 merged $device:a's into), and bob's twice.
    b(4, 'engage', [{ index: 0, distinct_id: '$device:a', set: { name: 'Alice' } }, { index: 1, distinct_id: 'legacy', add: { visits: 2 } }, { index: 2, distinct_id: 'bob', add: { visits: 1 } }]),
    // crm-1 has a profile and no events: retroactive, its profile merges into alice's.
    b(5, 'alias', [{ alias: 'crm-1', distinct_id: 'alice' }]),
    // pending has events earlier in the unit (batch 3): not retroactive, from this batch's accept time;
    // batch 3's rows keep pending as their person, batch 6's get carol.
    b(6, 'track', [e('view', 'pending', 106.5), e('view', 'crm-1', 11)]),
    b(7, 'alias', [{ alias: 'pending', distinct_id: 'carol' }]),
    b(8, 'track', [e('view', 'pending', 108.5), e('view', 'carol', 12)]),
    // A profile created then deleted (a deleted row), and a delete of one that never existed (no row).
    b(9, 'engage', [{ index: 0, distinct_id: 'ghost', set: { a: 1 } }, { index: 1, distinct_id: 'never', delete: true }]),
    b(10, 'engage', [{ index: 0, distinct_id: 'ghost', delete: true }, { index: 1, distinct_id: 'alice', set_once: { first_page: '/pricing', name: 'Nope' }, add: { logins: 1 } }]),
    // Refused: an alias already in a cluster, and one that would merge two users.
    b(11, 'alias', [{ alias: '$device:a', distinct_id: 'bob' }, { alias: 'alice', distinct_id: 'bob' }]),
  ];
}

const PROFILE_IDS = ['$device:a', '$device:b', 'alice', 'bea', 'bob', 'legacy', 'crm-1', 'carol', 'pending', 'ghost', 'never'];

forEachBackend('ingestion: unit apply', (backend) => {
  let t: TestService;
  before(async () => {
    t = await startTestService(backend);
  });
  after(async () => t?.close());

  const project = async (name: string) => (await createTenant(t, name)).project.id;

  /** What the stores hold for a project, without its id and write times. */
  async function stored(projectId: number) {
    const { events, db } = t.svc.deps;
    const final = events.dialect === 'clickhouse' ? 'FINAL' : '';
    const rows = await events.query<Rec>(
      `SELECT event, distinct_id, time, insert_id, person_id FROM events ${final} WHERE project_id = ${projectId} ORDER BY time, event, distinct_id`,
    );
    const mirror = await events.query<Rec>(
      `SELECT distinct_id, canonical_id, from_time FROM identity_links ${final} WHERE project_id = ${projectId} ORDER BY distinct_id`,
    );
    const links = await db('identity_links').where({ project_id: projectId }).orderBy('distinct_id').select('distinct_id', 'canonical_id', 'from_time');
    const profiles = (await events.latestProfiles(projectId, PROFILE_IDS))
      .map((p) => ({ distinct_id: p.distinct_id, deleted: Boolean(p.deleted), properties: JSON.parse(p.properties) }))
      .sort((a, b) => a.distinct_id.localeCompare(b.distinct_id));
    const plain = (r: Rec) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'bigint' || k === 'time' || k === 'from_time' ? Number(v) : v]));
    return { events: rows.map(plain), mirror: mirror.map(plain), links: links.map(plain), profiles };
  }

  async function oneByOne(name: string) {
    const id = await project(name);
    for (const b of batches(id)) await applyBatch(t.svc.deps, b);
    return stored(id);
  }

  it('a mixed unit stores the same events, links and profiles as its batches applied one by one', async () => {
    const expected = await oneByOne('One by one');
    const id = await project('Unit');
    await applyUnit(t.svc.deps, batches(id));
    const got = await stored(id);
    assert.deepEqual(got, expected);
    // The order mattered (the cases are what the test is about).
    const person = (event: string, time: number) => expected.events.find((r) => r.event === event && r.time === time)?.person_id;
    assert.equal(person('view', at(1)), '$device:a'); // written before its alias: the fold or the readers' join moves it
    assert.equal(person('signup', at(7)), 'alice');
    assert.equal(person('buy', at(2.5)), 'legacy'); // before the alias call
    assert.equal(person('buy', at(9)), 'bob');
    assert.equal(person('view', at(10)), 'pending');
    assert.equal(person('view', at(106.5)), 'pending'); // its alias comes in the next batch
    assert.equal(person('view', at(108.5)), 'carol');
    assert.deepEqual(expected.links.find((l) => l.distinct_id === 'pending'), { distinct_id: 'pending', canonical_id: 'carol', from_time: at(107) });
    assert.deepEqual(expected.links.find((l) => l.distinct_id === 'legacy'), { distinct_id: 'legacy', canonical_id: 'bob', from_time: at(8) });
    const alice = expected.profiles.find((p) => p.distinct_id === 'alice');
    assert.deepEqual(alice?.properties, { first_page: '/home', name: 'Alice', plan: 'pro', seats: 3, logins: 1 });
    assert.deepEqual(expected.profiles.find((p) => p.distinct_id === 'bob')?.properties, { visits: 3 });
    assert.equal(expected.profiles.find((p) => p.distinct_id === 'ghost')?.deleted, true);
    assert.equal(expected.profiles.find((p) => p.distinct_id === 'never'), undefined);
  });

  it('a unit retried after some of its batches were applied (flagged redelivered) stores the same', async () => {
    const expected = await oneByOne('One by one, retried');
    const id = await project('Unit, retried');
    // The first attempt applied the first five batches and failed; the retry carries them again and more.
    await applyUnit(t.svc.deps, batches(id).slice(0, 5));
    await applyUnit(t.svc.deps, batches(id).map((b, i) => (i < 5 ? { ...b, redelivered: true } : b)));
    assert.deepEqual(await stored(id), expected);
    // And once more, whole: nothing changes ($add not applied twice).
    await applyUnit(t.svc.deps, batches(id).map((b) => ({ ...b, redelivered: true })));
    assert.deepEqual(await stored(id), expected);
  });

  it('the in-process buffer hands every queued batch of a project to applyUnit at once, in order', async () => {
    const { MemoryBuffer } = await import('../../apps/server/src/ports/buffer/memory.js');
    const buffer = new MemoryBuffer();
    const mk = (id: string, projectId: number, kind: IngestionBatch['kind']): IngestionBatch => ({ id, kind, projectId, acceptedAt: 1, records: [{}] });
    for (const b of [mk('a', 1, 'track'), mk('b', 1, 'alias'), mk('c', 1, 'engage'), mk('d', 1, 'track'), mk('e', 2, 'track'), mk('f', 1, 'track')]) await buffer.publish(b);
    const units: string[][] = [];
    let failOnce = true;
    const consumer = buffer.consume(async () => assert.fail('handler called'), {
      applyUnit: async (unit) => {
        units.push(unit.map((b) => `${b.id}${b.redelivered ? '*' : ''}`));
        if (failOnce) {
          failOnce = false;
          throw new Error('store down');
        }
      },
    });
    await buffer.idle();
    await consumer.stop();
    assert.deepEqual(units, [['a', 'b', 'c', 'd'], ['a*', 'b*', 'c*', 'd*'], ['e'], ['f']]);
  });

  it('the in-process buffer holds publishers back while the worker is behind, and lets them in, in order, as it takes units', async () => {
    const { MemoryBuffer } = await import('../../apps/server/src/ports/buffer/memory.js');
    const buffer = new MemoryBuffer();
    const mk = (id: string, n: number): IngestionBatch => ({ id, kind: 'track', projectId: 1, acceptedAt: 1, records: new Array(n).fill({}) });
    // 10,000 queued records is the bound: 21 batches of 500 pass it.
    for (let i = 0; i < 21; i++) await buffer.publish(mk(`q${i}`, 500));
    const entered: string[] = [];
    const waiting = ['w0', 'w1', 'w2'].map((id) => buffer.publish(mk(id, 500)).then(() => entered.push(id)));
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(entered, [], 'no room yet: the publishers wait');
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const units: string[][] = [];
    const consumer = buffer.consume(async () => assert.fail('handler called'), {
      applyUnit: async (unit) => {
        units.push(unit.map((b) => b.id));
        await held;
      },
    });
    const t0 = Date.now();
    await Promise.all(waiting);
    assert.ok(Date.now() - t0 < 1000, 'woken when the worker took the queue, not by a timeout');
    assert.deepEqual(entered, ['w0', 'w1', 'w2']);
    release();
    await buffer.idle();
    await consumer.stop();
    assert.deepEqual(units.flat(), [...Array.from({ length: 21 }, (_, i) => `q${i}`), 'w0', 'w1', 'w2']);
  });

  it('an instrumented buffer times each unit and counts its records stored, or the failure', async () => {
    const { MemoryBuffer } = await import('../../apps/server/src/ports/buffer/memory.js');
    const { instrumentBuffer } = await import('../../apps/server/src/metrics/instrument.js');
    const { ingestMetrics } = await import('../../apps/server/src/metrics/registry.js');
    const value = async (m: { get(): Promise<{ values: Array<{ value: number; labels: Record<string, unknown>; metricName?: string }> }> }, kind?: string) =>
      (await m.get()).values.filter((v) => (kind ? v.labels.kind === kind : !v.metricName || v.metricName.endsWith('_count'))).reduce((a, v) => a + v.value, 0);
    const before = { track: await value(ingestMetrics.stored, 'track'), alias: await value(ingestMetrics.stored, 'alias'), failures: await value(ingestMetrics.storeFailures), timed: await value(ingestMetrics.insertSeconds) };
    const buffer = instrumentBuffer(new MemoryBuffer());
    const mk = (id: string, kind: IngestionBatch['kind'], n: number): IngestionBatch => ({ id, kind, projectId: 1, acceptedAt: 1, records: Array.from({ length: n }, () => ({})) });
    for (const b of [mk('a', 'track', 3), mk('b', 'alias', 2), mk('c', 'track', 4)]) await buffer.publish(b);
    let failOnce = true;
    const consumer = buffer.consume(async () => assert.fail('handler called'), {
      applyUnit: async () => {
        if (failOnce) {
          failOnce = false;
          throw new Error('store down');
        }
      },
    });
    await buffer.idle();
    await consumer.stop();
    assert.equal(await value(ingestMetrics.stored, 'track') - before.track, 7);
    assert.equal(await value(ingestMetrics.stored, 'alias') - before.alias, 2);
    assert.equal(await value(ingestMetrics.storeFailures) - before.failures, 1);
    assert.equal(await value(ingestMetrics.insertSeconds) - before.timed, 2); // the failed unit and its retry
  });
});
