import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import type { Tenant, TestService } from '../support/service.js';
import { withCohortsTenant } from '../support/cohorts.js';
import { buildAnalyses } from '../../apps/server/src/query/analyses.js';
import { LIMITS } from '../../apps/server/src/limits.js';

const DAY = 86_400_000;

/** Static cohorts: a list of people saved as they were (a drill-down's, a funnel drop-off's). */
forEachBackend('cohorts: static criteria', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let other: Tenant;
  const now = Date.now();
  withCohortsTenant(backend, 'st', {
    events: [
      { event: 'buy', distinct_id: 'anon', time: now - DAY, insert_id: 'a', props: {} },
      { event: 'buy', distinct_id: 'u1', time: now - 2 * DAY, insert_id: 'b', props: {} },
      { event: 'buy', distinct_id: 'u2', time: now - 3 * DAY, insert_id: 'c', props: {} },
      { event: 'view', distinct_id: 'u3', time: now - DAY, insert_id: 'd', props: {} },
      { event: 'view', distinct_id: "o'brien", time: now - DAY, insert_id: 'e', props: {} },
    ],
    links: [{ distinct_id: 'anon', canonical_id: 'u1', from_time: 0 }],
    profiles: [{ distinct_id: 'u4', props: { plan: 'pro' } }, { distinct_id: 'u3', props: { plan: 'pro' } }],
  }, (c) => ({ t, tenant, other } = c));

  const listed = (ids: string[]) => ({ op: 'and', criteria: [{ kind: 'static', ids }] });

  it('members are the identities the listed ids resolve to (events or profile); unknown ids select nobody', async () => {
    const member = t.client(tenant.tokens.member);
    // anon is linked to u1; u4 has only a profile; ghost has nothing; o'brien needs quoting.
    const c = await member.post('/api/cohorts', { projectId: tenant.project.id, name: 'picked', definition: listed(['anon', 'u2', 'u4', 'ghost', "o'brien"]) });
    assert.equal(c.status, 201, c.text);
    assert.equal(c.body.size, 4);
    assert.deepEqual(c.body.definition, listed(['anon', 'u2', 'u4', 'ghost', "o'brien"]));
    assert.deepEqual((await member.get(`/api/cohorts/${c.body.id}/members`)).body, { members: ["o'brien", 'u1', 'u2', 'u4'] });
    const preview = await member.post('/api/cohorts/preview', { projectId: tenant.project.id, definition: listed(['u3']) });
    assert.deepEqual(preview.body, { count: 1, sample: ['u3'] });
  });

  it('combines with property and behaviour criteria (and / or)', async () => {
    const viewer = t.client(tenant.tokens.viewer);
    const pro = { kind: 'property', filter: { key: 'plan', op: 'eq', value: 'pro' } };
    const buyer = { kind: 'behavior', event: 'buy', op: 'gte', count: 1, windowDays: 30 };
    const and = await viewer.post('/api/cohorts/preview', { projectId: tenant.project.id, definition: { op: 'and', criteria: [{ kind: 'static', ids: ['u2', 'u3', 'u4'] }, pro] } });
    assert.deepEqual(and.body, { count: 2, sample: ['u3', 'u4'] });
    const or = await viewer.post('/api/cohorts/preview', { projectId: tenant.project.id, definition: { op: 'or', criteria: [{ kind: 'static', ids: ['u3'] }, buyer] } });
    assert.deepEqual(or.body, { count: 3, sample: ['u1', 'u2', 'u3'] });
    const notBuyer = await viewer.post('/api/cohorts/preview', { projectId: tenant.project.id, definition: { op: 'and', criteria: [{ kind: 'static', ids: ['anon', 'u3'] }, { ...buyer, op: 'eq', count: 0 }] } });
    assert.deepEqual(notBuyer.body, { count: 1, sample: ['u3'] });
  });

  it('a flag targeting a static cohort evaluates its members on, others off', async () => {
    const owner = t.client(tenant.tokens.owner);
    const c = await owner.post('/api/cohorts', { projectId: tenant.project.id, name: 'beta', definition: listed(['anon', 'u3']) });
    assert.equal(c.status, 201, c.text);
    const f = await owner.post('/api/flags', { projectId: tenant.project.id, key: 'static-beta', name: 'beta', rules: [{ rolloutPct: 100, cohortId: c.body.id }] });
    assert.equal(f.status, 201, f.text);
    const evaluate = async (id: string) => {
      const r = await t.anon.post('/flags/evaluate', { distinct_id: id, flag_keys: ['static-beta'] }, { headers: { 'x-service-token': tenant.project.token } });
      assert.equal(r.status, 200, r.text);
      return r.body.flags['static-beta'].enabled;
    };
    assert.deepEqual(await Promise.all(['u1', 'u3', 'u2', 'u4', 'ghost'].map(evaluate)), [true, true, false, false, false]);
    const { membership } = buildAnalyses(t.svc.deps.db, t.svc.deps.events);
    assert.equal(await membership.isMember(tenant.project.id, c.body.id, 'u1'), true);
    assert.equal(await membership.isMember(tenant.project.id, c.body.id, 'u2'), false);
    assert.equal(await membership.isMember(other.project.id, c.body.id, 'u1'), false);
  });

  it('limits: 400 naming the problem, nothing written; the largest list allowed runs', async () => {
    const member = t.client(tenant.tokens.member);
    const before = (await member.get(`/api/cohorts?projectId=${tenant.project.id}`)).body.length;
    const tooMany = Array.from({ length: LIMITS.cohortStaticIds + 1 }, (_, i) => `id-${i}`);
    const tooLong = Array.from({ length: 200 }, (_, i) => `${i}-${'x'.repeat(250)}`);
    for (const [definition, message] of [
      [listed(tooMany), /criteria/],
      [{ op: 'and', criteria: [{ kind: 'static', ids: tooMany.slice(0, 600) }, { kind: 'static', ids: tooMany.slice(600) }] }, /at most 1000 ids/],
      [listed(tooLong), /40000 characters/],
      [listed([]), /criteria/],
      [listed(['']), /criteria/],
      [listed(['x'.repeat(LIMITS.overrideIdLength + 1)]), /criteria/],
    ] as const) {
      const r = await member.post('/api/cohorts', { projectId: tenant.project.id, name: 'bad', definition });
      assert.equal(r.status, 400, r.text);
      assert.match(JSON.stringify(r.body), message);
    }
    assert.equal((await member.get(`/api/cohorts?projectId=${tenant.project.id}`)).body.length, before);
    // The largest allowed list (ids of 200 quote-heavy characters) still fits the engines' statements.
    const big = Array.from({ length: LIMITS.cohortStaticIdsChars / 200 - 1 }, (_, i) => `${String(i).padStart(4, '0')}${"'".repeat(196)}`);
    const r = await member.post('/api/cohorts/preview', { projectId: tenant.project.id, definition: { op: 'or', criteria: [{ kind: 'static', ids: big }, { kind: 'static', ids: ['u2'] }] } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { count: 1, sample: ['u2'] });
  });

  it('ids with quotes, backslashes and non-ASCII characters are literals on both engines; NUL is refused', async () => {
    const viewer = t.client(tenant.tokens.viewer);
    const nul = await viewer.post('/api/cohorts/preview', { projectId: tenant.project.id, definition: listed(['nul\u0000id']) });
    assert.equal(nul.status, 400, nul.text);
    assert.match(nul.body.error, /ids\.0: must not contain NUL/);
    for (const id of ['a\\b', "x' OR 1=1 --", 'é😀', '\\', "'"]) {
      const r = await viewer.post('/api/cohorts/preview', { projectId: tenant.project.id, definition: { op: 'or', criteria: [{ kind: 'static', ids: [id] }, { kind: 'static', ids: ['u2'] }] } });
      assert.equal(r.status, 200, `${JSON.stringify(id)}: ${r.text}`);
      assert.deepEqual(r.body, { count: 1, sample: ['u2'] }, JSON.stringify(id));
    }
  });

  it('writes leave audit rows; a viewer cannot save one', async () => {
    const viewer = t.client(tenant.tokens.viewer);
    assert.equal((await viewer.post('/api/cohorts', { projectId: tenant.project.id, name: 'x', definition: listed(['u1']) })).status, 403);
    const member = t.client(tenant.tokens.member);
    const c = await member.post('/api/cohorts', { projectId: tenant.project.id, name: 'audited', definition: listed(['u1']) });
    const log = await t.client(tenant.tokens.admin).get(`/api/audit-log?projectId=${tenant.project.id}&targetKind=cohort`);
    assert.equal(log.status, 200, log.text);
    const row = log.body.entries.find((e: any) => e.target.id === c.body.id);
    assert.ok(row, JSON.stringify(log.body).slice(0, 2000));
    assert.deepEqual(row.after.definition, listed(['u1']));
  });
});
