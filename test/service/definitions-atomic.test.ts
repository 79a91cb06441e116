import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';

/**
 * Stored definitions (cohorts, derived events, calculated metrics, flags) are validated as a whole
 * before anything is written: a refused create or update changes nothing (rows, their
 * `updated_at`, flag audit rows), and concurrent writes racing for one name get 409, never a 5xx
 * from the store's unique index.
 */
forEachBackend('definitions: validated whole, a refusal changes nothing', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let other: Tenant;
  let pid: number;
  before(async () => {
    t = await sharedService(backend);
    acme = await createTenant(t, 'Atomic');
    other = await createTenant(t, 'Other');
    pid = acme.project.id;
  });

  const cohortDef = { op: 'and', criteria: [{ kind: 'behavior', event: 'buy', op: 'gte', count: 1, windowDays: 30 }] };
  const sources = [{ event: 'page', filters: [{ key: 'path', op: 'contains', value: '/pricing' }] }];
  const metricBody = { name: 'ratio', formula: 'A / B', metrics: [{ id: 'A', event: 'buy', type: 'total' }, { id: 'B', event: 'page', type: 'unique' }] };

  /** Sends each bad body; every one is a 4xx and the resource reads back exactly as before. */
  async function refusedChangeNothing(path: string, bads: Array<[string, unknown]>, read = () => acme.owner.get(path)) {
    const before = (await read()).body;
    for (const [what, bad] of bads) {
      const r = await acme.owner.put(path, bad);
      assert.ok(r.status >= 400 && r.status < 500, `${what}: ${r.status} ${r.text}`);
      assert.deepEqual((await read()).body, before, `${what} changed ${path}`);
    }
  }

  it('cohorts: a bad update leaves the stored cohort as it was', async () => {
    const c = await acme.owner.post('/api/cohorts', { projectId: pid, name: 'buyers', definition: cohortDef });
    assert.equal(c.status, 201, c.text);
    await refusedChangeNothing(`/api/cohorts/${c.body.id}`, [
      ['NUL deep in a criterion', { definition: { op: 'and', criteria: [{ kind: 'property', filter: { key: 'plan', op: 'eq', value: 'p\u0000' } }] } }],
      ['21 criteria', { definition: { op: 'or', criteria: Array.from({ length: 21 }, () => cohortDef.criteria[0]) } }],
      ['count past the limit', { name: 'renamed', definition: { op: 'and', criteria: [{ ...cohortDef.criteria[0], count: 1_000_001 }] } }],
      ['unknown member inside', { definition: { op: 'and', criteria: [{ ...cohortDef.criteria[0], extra: 1 }] } }],
      ['empty name beside a good definition', { name: '', definition: cohortDef }],
    ]);
    const list = await acme.owner.get(`/api/cohorts?projectId=${pid}`);
    assert.deepEqual(list.body.map((x: any) => x.name), ['buyers']);
  });

  it('derived events and metrics: a bad update or a bad create changes nothing', async () => {
    const e = await acme.owner.post('/api/definitions/events', { projectId: pid, name: 'pricing', sources });
    assert.equal(e.status, 201, e.text);
    const taken = await acme.owner.post('/api/definitions/events', { projectId: pid, name: 'taken', sources });
    assert.equal(taken.status, 201, taken.text);
    await refusedChangeNothing(`/api/definitions/events/${e.body.id}`, [
      ['NUL in a source filter', { sources: [{ event: 'page', filters: [{ key: 'path', op: 'eq', value: 'a\u0000' }] }] }],
      ['a name taken, with good sources', { name: 'taken', sources }],
      ['the reserved name', { name: '$all_events' }],
      ['no sources', { sources: [] }],
      ['an unknown member in a source', { sources: [{ event: 'page', filter: { key: 'path', op: 'set' } }] }],
    ]);
    const m = await acme.owner.post('/api/definitions/metrics', { projectId: pid, ...metricBody });
    assert.equal(m.status, 201, m.text);
    await refusedChangeNothing(`/api/definitions/metrics/${m.body.id}`, [
      ['formula naming an undefined letter', { formula: 'A / C' }],
      ['letters that leave the stored formula dangling', { metrics: [{ id: 'A', event: 'buy', type: 'total' }] }],
      ['duplicate letters', { metrics: [{ id: 'A', event: 'buy', type: 'total' }, { id: 'A', event: 'page', type: 'total' }, { id: 'B', event: 'page', type: 'total' }] }],
      ['a good name beside a bad formula', { name: 'renamed', formula: 'A +' }],
      ['an unknown member in a metric', { metrics: [{ ...metricBody.metrics[0], filter: [] }, metricBody.metrics[1]] }],
    ]);
    for (const bad of [{ name: 'x', formula: 'A / C', metrics: metricBody.metrics }, { ...metricBody, name: 'y', formula: 'A +' }]) {
      assert.equal((await acme.owner.post('/api/definitions/metrics', { projectId: pid, ...bad })).status, 400);
    }
    assert.deepEqual((await acme.owner.get(`/api/definitions/metrics?projectId=${pid}`)).body.map((x: any) => x.name), ['ratio']);
  });

  it('flags: a bad update changes neither the flag nor its audit', async () => {
    const foreignCohort = await other.owner.post('/api/cohorts', { projectId: other.project.id, name: 'theirs', definition: cohortDef });
    assert.equal(foreignCohort.status, 201, foreignCohort.text);
    const f = await acme.owner.post('/api/flags', { projectId: pid, key: 'checkout', name: 'Checkout', variants: [{ key: 'a', rolloutPct: 50 }, { key: 'b', rolloutPct: 50 }], rules: [{ rolloutPct: 100 }] });
    assert.equal(f.status, 201, f.text);
    const audit = () => acme.owner.get(`/api/flags/${f.body.id}/events`);
    const auditBefore = (await audit()).body;
    await refusedChangeNothing(`/api/flags/${f.body.id}`, [
      ['variants not summing to 100', { name: 'renamed', variants: [{ key: 'a', rolloutPct: 50 }, { key: 'b', rolloutPct: 40 }] }],
      ['a cohort of another organisation', { rules: [{ rolloutPct: 100, cohortId: foreignCohort.body.id }] }],
      ['a rule naming an unknown variant', { active: false, rules: [{ rolloutPct: 100, variant: 'zzz' }] }],
      ['NUL in an override id', { rules: [{ rolloutPct: 0, overrideIds: ['ok', 'u\u0000'] }] }],
    ]);
    assert.deepEqual((await audit()).body, auditBefore, 'no audit row for a refused change');
  });

  it('concurrent creates and renames racing for one name: one wins, the others 409, never 5xx', async () => {
    const creates = await Promise.all(Array.from({ length: 6 }, () => acme.owner.post('/api/definitions/events', { projectId: pid, name: 'race', sources })));
    assert.deepEqual(creates.map((r) => r.status).sort(), [201, 409, 409, 409, 409, 409], creates.map((r) => r.text).join('\n'));
    const a = await acme.owner.post('/api/definitions/events', { projectId: pid, name: 'ra', sources });
    const b = await acme.owner.post('/api/definitions/events', { projectId: pid, name: 'rb', sources });
    const renames = await Promise.all([a, b].map((x) => acme.owner.put(`/api/definitions/events/${x.body.id}`, { name: 'rc' })));
    assert.deepEqual(renames.map((r) => r.status).sort(), [200, 409], renames.map((r) => r.text).join('\n'));
    const flags = await Promise.all(Array.from({ length: 4 }, (_, i) => acme.owner.post('/api/flags', { projectId: pid, key: 'same-key', name: `F${i}` })));
    assert.deepEqual(flags.map((r) => r.status).sort(), [201, 409, 409, 409], flags.map((r) => r.text).join('\n'));
  });
});
