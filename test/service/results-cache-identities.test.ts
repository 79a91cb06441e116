import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { Client } from '../support/http.js';
import { DAY, T0, loadDataset } from '../support/reference/harness.js';
import type { RefEvent } from '../support/reference/index.js';
import { readsIdentities } from '../../apps/server/src/results-cache/identities.js';

const H = 3_600_000;
const ev = (event: string, distinct_id: string, time: number, insert_id: string): RefEvent => ({ event, distinct_id, time, insert_id, props: {} });
const range = { from: '2024-01-01', to: '2024-01-07' };
const total = { event: 'view', unit: 'day', type: 'total', ...range };
const unique = { event: 'view', unit: 'week', type: 'unique', ...range };
const irCount = { v: 2, dateRange: { kind: 'absolute', ...range }, metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'day' } };
const sum = (card: any) => card.result.series.reduce((s: number, x: any) => s + x.data.reduce((a: number, d: any) => a + d.value, 0), 0);

describe('results cache: which answers depend on identities', () => {
  it('only event counts and property aggregations of trends say no', () => {
    const key = (t: string, q: unknown) => ({ e: 'duckdb', q: { t, q, o: {} } });
    assert.equal(readsIdentities(key('segmentation', total)), false);
    assert.equal(readsIdentities(key('segmentation', irCount)), false);
    assert.equal(readsIdentities(key('segmentation', { ...irCount, metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'sum', property: 'x' } }] })), false);
    assert.equal(readsIdentities(key('segmentation', unique)), true);
    assert.equal(readsIdentities(key('segmentation', { ...irCount, metrics: [...irCount.metrics, { id: 'B', kind: 'event', event: 'view', aggregation: { op: 'unique' } }] })), true);
    assert.equal(readsIdentities(key('segmentation', { ...irCount, metrics: [{ id: 'A', kind: 'calculated', definitionId: 1 }] })), true);
    assert.equal(readsIdentities(key('segmentation', { ...irCount, analysis: { kind: 'funnel', steps: ['A'] } })), true);
    assert.equal(readsIdentities(key('segmentation', { ...total, filters: [{ key: 'country', op: 'eq', value: 'fr' }], breakdown: 'country' })), false);
    assert.equal(readsIdentities({ e: 'duckdb', q: { t: 'segmentation', q: total, o: { f: [{ cohort: 3, op: 'in' }] } } }), true);
    assert.equal(readsIdentities(key('segmentation', { ...irCount, filters: [{ cohort: 3, op: 'in' }] })), true);
    assert.equal(readsIdentities(key('segmentation', { ...irCount, breakdown: { cohorts: [3], notInAny: true } })), true);
    assert.equal(readsIdentities(key('segmentation', { ...irCount, breakdown: { property: 'country' } })), false);
    assert.equal(readsIdentities(key('funnel', { steps: ['view', 'buy'], ...range })), true);
    assert.equal(readsIdentities(key('retention', { bornEvent: 'view', returnEvent: 'buy' })), true);
    assert.equal(readsIdentities({ e: 'duckdb', q: { x: 'experiment', v: 2, spec: {} } }), true);
    assert.equal(readsIdentities(undefined), true);
  });
});

/**
 * The identity fold (identity/fold.ts) rewrites the person of a linked project's events: it
 * invalidates the unique counts of that project only, and keeps its event counts and every answer
 * of a project without links cached.
 */
forEachBackend('results cache and the identity fold', (backend) => {
  let t: TestService;
  let linked: Tenant;
  let other: Tenant;
  const boards = new Map<Tenant, number>();

  const run = async (tenant: Tenant) => {
    const r = await new Client(t.url, tenant.tokens.member).post(`/api/boards/${boards.get(tenant)}/run`, {});
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body.cards.every((c: any) => c.status === 'ok'), JSON.stringify(r.body.cards));
    return r.body.cards as any[];
  };
  const board = async (tenant: Tenant, reports: Array<[string, string, unknown]>) => {
    const member = t.client(tenant.tokens.member);
    const ids = [];
    for (const [name, type, query] of reports) {
      const r = await member.post('/api/reports', { projectId: tenant.project.id, name, type, query });
      assert.equal(r.status, 201, r.text);
      ids.push(r.body.id);
    }
    const b = await member.post('/api/boards', { projectId: tenant.project.id, name: 'Fold', cards: ids.map((reportId) => ({ reportId })) });
    assert.equal(b.status, 201, b.text);
    boards.set(tenant, b.body.id);
  };

  before(async function () {
    this.timeout(90_000);
    t = await startTestService(backend, { RESULTS_CACHE_FRESH_MS: '600000' });
    linked = await createTenant(t, 'fold-linked');
    other = await createTenant(t, 'fold-other');
    const events = [ev('view', 'u1', T0 + H, 'f1'), ev('view', 'anon', T0 + DAY + H, 'f2'), ev('view', 'u2', T0 + 2 * DAY + H, 'f3')];
    // `anon` is u1 from the start: one person, unfolded (the rows carry their own distinct_id).
    await loadDataset(t.svc.deps, linked.project.id, { events, links: [{ distinct_id: 'anon', canonical_id: 'u1', from_time: 0 }] }, 'links only');
    await loadDataset(t.svc.deps, other.project.id, { events: events.map((e) => ({ ...e, insert_id: `o-${e.insert_id}` })), links: [] }, 'links only');
    await board(linked, [['views', 'segmentation', total], ['people', 'segmentation', unique], ['views (IR)', 'segmentation', irCount]]);
    await board(other, [['people', 'segmentation', unique]]);
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it('a fold keeps event counts and an unrelated project cached, and computes the linked project\'s unique count again', async function () {
    this.timeout(60_000);
    const [views, people, ir] = await run(linked);
    const [otherPeople] = await run(other);
    for (const c of [views, people, ir, otherPeople]) assert.equal(c.cached_at, undefined, 'computed at first');
    assert.equal(sum(views), 3);
    assert.equal(sum(people), 2, 'anon and u1 are one person');
    assert.equal(sum(otherPeople), 3);
    assert.ok((await run(linked)).every((c) => typeof c.cached_at === 'number'), 'cached before the fold');

    assert.equal(await t.svc.deps.events.foldLinks(1_000, Date.now()), 1);

    const after = await run(linked);
    assert.equal(typeof after[0].cached_at, 'number', 'the event count stays cached');
    assert.equal(typeof after[2].cached_at, 'number', 'the IR event count stays cached');
    assert.equal(after[1].cached_at, undefined, 'the unique count is computed again');
    assert.deepEqual(after[1].result, people.result, 'and answers the same');
    const [otherAfter] = await run(other);
    assert.equal(typeof otherAfter.cached_at, 'number', 'the project without links stays cached');
    assert.deepEqual(otherAfter.result, otherPeople.result);
  });
});
