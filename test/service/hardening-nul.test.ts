import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';

/**
 * NUL characters: neither engine takes them in a SQL literal and PostgreSQL text refuses them, so
 * validated input holding one is refused at the edge with a 400 naming the field, on every backend,
 * and nothing is written (a half-written definition used to take a project's queries and flag
 * evaluation down).
 */
forEachBackend('hardening: NUL characters', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let pid: number;
  before(async () => {
    t = await sharedService(backend);
    acme = await createTenant(t, 'Nul');
    pid = acme.project.id;
  });

  const segmentation = (event: string, extra: Record<string, unknown> = {}) =>
    acme.owner.post('/api/query/segmentation', { projectId: pid, event, from: '2024-01-01', to: '2024-01-02', unit: 'day', type: 'total', ...extra });

  it('a query naming an event or a filter value with NUL answers 400 naming the field', async () => {
    const event = await segmentation('vi\u0000ew');
    assert.equal(event.status, 400, event.text);
    assert.equal(event.body.error, 'event: must not contain NUL characters');
    const filter = await segmentation('view', { filters: [{ key: 'country', op: 'eq', value: 'f\u0000r' }] });
    assert.equal(filter.status, 400, filter.text);
    assert.equal(filter.body.error, 'filters.0.value: must not contain NUL characters');
    assert.equal((await segmentation('view')).status, 200);
  });

  it('a cohort or derived event holding NUL is refused whole: nothing written, later queries and flags unaffected', async () => {
    const cohort = await acme.owner.post('/api/cohorts', {
      projectId: pid, name: 'bad', definition: { op: 'and', criteria: [{ kind: 'behavior', event: 'b\u0000uy', op: 'gte', count: 1, windowDays: 0 }] },
    });
    assert.equal(cohort.status, 400, cohort.text);
    assert.equal(cohort.body.error, 'definition.criteria.0.event: must not contain NUL characters');
    const derived = await acme.owner.post('/api/definitions/events', {
      projectId: pid, name: 'checkout', sources: [{ event: 'buy', filters: [{ key: 'plan', op: 'eq', value: 'p\u0000ro' }] }],
    });
    assert.equal(derived.status, 400, derived.text);
    assert.match(derived.body.error, /must not contain NUL characters$/);
    assert.deepEqual((await acme.owner.get(`/api/cohorts?projectId=${pid}`)).body, []);
    assert.deepEqual((await acme.owner.get(`/api/definitions/events?projectId=${pid}`)).body, []);
    assert.equal((await segmentation('view')).status, 200);
  });

  it('/flags/evaluate and GET /flags with a NUL distinct_id answer 400 even when a flag has a cohort rule', async () => {
    const cohort = await acme.owner.post('/api/cohorts', {
      projectId: pid, name: 'buyers', definition: { op: 'and', criteria: [{ kind: 'behavior', event: 'buy', op: 'gte', count: 1, windowDays: 0 }] },
    });
    assert.equal(cohort.status, 201, cohort.text);
    const flag = await acme.owner.post('/api/flags', { projectId: pid, key: 'buyers-only', name: 'Buyers only', rules: [{ rolloutPct: 100, cohortId: cohort.body.id }] });
    assert.equal(flag.status, 201, flag.text);
    const evaluate = (distinctId: string) => t.anon.post('/flags/evaluate', { distinct_id: distinctId }, { headers: { 'x-service-token': acme.project.token } });
    const bad = await evaluate('a\u0000b');
    assert.equal(bad.status, 400, bad.text);
    assert.deepEqual(bad.body, { status: 0, error: 'distinct_id: must not contain NUL characters' });
    const ok = await evaluate('someone');
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.flags['buyers-only'].enabled, false);
    const context = encodeURIComponent(JSON.stringify({ distinct_id: 'a\u0000b' }));
    const mixpanel = await t.anon.get(`/flags?context=${context}&token=${acme.project.token}`);
    assert.equal(mixpanel.status, 400, mixpanel.text);
    assert.match(JSON.stringify(mixpanel.body), /must not contain NUL characters/);
  });
});
