import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import type { Tenant, TestService } from '../support/service.js';
import { withCohortsTenant } from '../support/cohorts.js';
import { buildAnalyses } from '../../apps/server/src/query/analyses.js';

const DAY = 86_400_000;

forEachBackend('cohorts', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let other: Tenant;
  const now = Date.now();
  withCohortsTenant(backend, 'c', {
    events: [
      { event: 'buy', distinct_id: 'anon', time: now - DAY, insert_id: 'a', props: {} },
      { event: 'buy', distinct_id: 'u1', time: now - 2 * DAY, insert_id: 'b', props: {} },
      { event: 'buy', distinct_id: 'u2', time: now - 40 * DAY, insert_id: 'c', props: {} },
      { event: 'view', distinct_id: 'u3', time: now - DAY, insert_id: 'd', props: {} },
    ],
    links: [{ distinct_id: 'anon', canonical_id: 'u1', from_time: 0 }, { distinct_id: 'dev', canonical_id: 'u3', from_time: 0 }],
    profiles: [
      { distinct_id: 'dev', props: { plan: 'pro' } },
      { distinct_id: 'u4', props: { plan: 'free' } },
      { distinct_id: 'gone', props: { plan: 'pro' }, deleted: true },
    ],
  }, (c) => ({ t, tenant, other } = c));

  const buyers = { op: 'and', criteria: [{ kind: 'behavior', event: 'buy', op: 'gte', count: 2, windowDays: 30 }] };
  const proOrNoBuy = { op: 'or', criteria: [{ kind: 'property', filter: { key: 'plan', op: 'eq', value: 'pro' } }, { kind: 'behavior', event: 'buy', op: 'eq', count: 0, windowDays: 0 }] };

  it('preview: count and sample, identity-resolved, property and behaviour criteria', async () => {
    const member = t.client(tenant.tokens.viewer);
    const a = await member.post('/api/cohorts/preview', { projectId: tenant.project.id, definition: buyers });
    assert.equal(a.status, 200, a.text);
    assert.deepEqual(a.body, { count: 1, sample: ['u1'] });
    const b = await member.post('/api/cohorts/preview', { projectId: tenant.project.id, definition: proOrNoBuy });
    // u3 (profile of its linked id `dev` is pro; no buy), u4 (no buy); the deleted profile is gone.
    assert.deepEqual(b.body, { count: 2, sample: ['u3', 'u4'] });
    const none = await member.post('/api/cohorts/preview', { projectId: tenant.project.id, definition: { op: 'and', criteria: [{ kind: 'property', filter: { key: 'plan', op: 'not_set' } }] } });
    assert.deepEqual(none.body, { count: 2, sample: ['u1', 'u2'] });
  });

  it('CRUD with size on read, members, roles and cross-organisation 404', async () => {
    const viewer = t.client(tenant.tokens.viewer);
    const member = t.client(tenant.tokens.member);
    assert.equal((await viewer.post('/api/cohorts', { projectId: tenant.project.id, name: 'x', definition: buyers })).status, 403);
    const created = await member.post('/api/cohorts', { projectId: tenant.project.id, name: 'buyers', definition: buyers });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.size, 1);
    assert.equal(created.body.description, null);
    const id = created.body.id;
    assert.equal((await viewer.get(`/api/cohorts/${id}`)).body.size, 1);
    assert.deepEqual((await viewer.get(`/api/cohorts/${id}/members`)).body, { members: ['u1'] });
    const list = await viewer.get(`/api/cohorts?projectId=${tenant.project.id}`);
    assert.deepEqual(list.body.map((c: any) => [c.name, c.size]), [['buyers', 1]]);
    const upd = await member.put(`/api/cohorts/${id}`, { definition: proOrNoBuy, description: 'd' });
    assert.equal(upd.status, 200, upd.text);
    assert.equal(upd.body.size, 2);
    assert.equal(upd.body.description, 'd');
    const foreign = t.client(other.tokens.owner);
    assert.equal((await foreign.get(`/api/cohorts/${id}`)).status, 404);
    assert.equal((await foreign.get(`/api/cohorts/${id}/members`)).status, 404);
    assert.equal((await foreign.delete(`/api/cohorts/${id}`)).status, 404);
    assert.equal((await viewer.delete(`/api/cohorts/${id}`)).status, 403);
    assert.deepEqual((await member.delete(`/api/cohorts/${id}`)).body, { ok: true });
    assert.equal((await viewer.get(`/api/cohorts/${id}`)).status, 404);
  });

  it('validation: criteria limits', async () => {
    const member = t.client(tenant.tokens.member);
    const crit = { kind: 'behavior', event: 'buy', op: 'gte', count: 1, windowDays: 1 };
    for (const definition of [
      { op: 'and', criteria: Array(21).fill(crit) },
      { op: 'and', criteria: [{ ...crit, count: 1_000_001 }] },
      { op: 'and', criteria: [{ ...crit, windowDays: 367 }] },
      { op: 'xor', criteria: [] },
      { op: 'and', criteria: [{ kind: 'property', filter: { key: 'k', op: 'eq' } }] },
    ]) {
      assert.equal((await member.post('/api/cohorts/preview', { projectId: tenant.project.id, definition })).status, 400, JSON.stringify(definition));
    }
  });

  it('CohortMembership isMember / projectOf (used by remote flag evaluation)', async () => {
    const c = await t.client(tenant.tokens.member).post('/api/cohorts', { projectId: tenant.project.id, name: 'pro', definition: proOrNoBuy });
    const { membership } = buildAnalyses(t.svc.deps.db, t.svc.deps.events);
    assert.equal(await membership.projectOf(c.body.id), tenant.project.id);
    assert.equal(await membership.projectOf(999_999), undefined);
    assert.equal(await membership.isMember(tenant.project.id, c.body.id, 'u3'), true);
    assert.equal(await membership.isMember(tenant.project.id, c.body.id, 'u1'), false);
    assert.equal(await membership.isMember(tenant.project.id, c.body.id, 'nobody'), false);
    assert.equal(await membership.isMember(other.project.id, c.body.id, 'u3'), false);
  });
});
