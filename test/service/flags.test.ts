import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, startTestService, type Tenant, type TestService } from '../support/service.js';
import type { Client } from '../support/http.js';
import { bucket, evaluateFlag, pickVariant } from '../../apps/flag-evaluation/src/index.js';
import { isPostgres } from '../../apps/server/src/ports/metadata/knex.js';
import { DefinitionStore } from '../../apps/server/src/definitions/store.js';
import type { CohortDefinition } from '../../apps/server/src/cohorts/schema.js';

const vectors = JSON.parse(readFileSync(new URL('../vectors/flag-bucketing.json', import.meta.url), 'utf8'));

describe('flag bucketing vectors (server module)', () => {
  it('has vectors', () => assert.ok(vectors.vectors.length >= 50));
  for (const v of vectors.vectors) {
    it(`${v.flagKey.slice(0, 20)} / ${v.id.slice(0, 20)}`, () => {
      assert.equal(bucket(`${v.flagKey}.${v.id}`), v.bucket);
      assert.equal(bucket(`${v.flagKey}.${v.id}.variant`), v.variantBucket);
      assert.equal(pickVariant(v.flagKey, v.id, v.variants)?.key, v.variant);
      const r = evaluateFlag(
        { key: v.flagKey, active: true, variants: v.variants, rules: [{ rolloutPct: v.rolloutPct }] },
        { bucketingId: v.id, overrideIds: [v.id] },
      );
      assert.equal(r.enabled, v.inRollout);
      assert.equal(r.variant, v.inRollout ? v.variant : null);
    });
  }
  it('spreads ids evenly and keeps everyone in when a percentage rises', () => {
    let in20 = 0;
    for (let i = 0; i < 20000; i++) {
      const b = bucket(`spread.user-${i}`);
      assert.ok(b >= 0 && b < 1);
      if (b < 0.2) {
        in20++;
        assert.ok(b < 0.3);
      }
    }
    assert.ok(in20 > 3700 && in20 < 4300, `20% rollout took ${in20} of 20000`);
  });
});

let seq = 0;
const uniqueKey = (p = 'f') => `${p}-${Date.now().toString(36)}-${seq++}`;

forEachBackend('flags', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let globex: Tenant;
  let owner: Client;
  let member: Client;
  let viewer: Client;

  before(async () => {
    t = await sharedService(backend);
    acme = await createTenant(t, 'FlagAcme');
    globex = await createTenant(t, 'FlagGlobex');
    owner = acme.owner;
    member = t.client(acme.tokens.member);
    viewer = t.client(acme.tokens.viewer);
  });

  const db = () => t.svc.deps.db;
  /** Links inserted straight into the store (as another process would) reach the evaluator within one poll (docs/flags.md). */
  const linksPolled = () => new Promise((r) => setTimeout(r, t.svc.deps.links.pollMs + 300));
  const rowCounts = async () => {
    const [{ n: flags }] = await db()('flags').count({ n: '*' });
    const [{ n: events }] = await db()('flag_events').count({ n: '*' });
    return { flags: Number(flags), events: Number(events) };
  };
  const create = async (c: Client, body: Record<string, unknown>) => {
    const r = await c.post(`/api/flags?projectId=${acme.project.id}`, { name: 'A flag', ...body });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  };
  const events = async (id: number) => (await member.get(`/api/flags/${id}/events`)).body as any[];
  const evaluate = (body: Record<string, unknown>, token = acme.project.token) =>
    t.anon.post('/flags/evaluate', body, { headers: { 'x-service-token': token } });

  describe('validation (400 naming the field; nothing written)', () => {
    const variants2 = [{ key: 'a', rolloutPct: 50 }, { key: 'b', rolloutPct: 50 }];
    const cases: Array<[string, Record<string, unknown>, string | RegExp]> = [
      ['variant sum', { variants: [{ key: 'a', rolloutPct: 50 }, { key: 'b', rolloutPct: 40 }] }, 'variants: rolloutPct must sum to exactly 100 (got 90)'],
      ['variant sum over', { variants: [{ key: 'a', rolloutPct: 70 }, { key: 'b', rolloutPct: 40 }] }, 'variants: rolloutPct must sum to exactly 100 (got 110)'],
      ['unknown variant in rule', { variants: variants2, rules: [{ rolloutPct: 100, variant: 'zzz' }] }, 'rules.0.variant: unknown variant "zzz"'],
      ['rule variant without variants', { rules: [{ rolloutPct: 100 }, { rolloutPct: 100, variant: 'a' }] }, 'rules.1.variant: unknown variant "a"'],
      ['duplicate variant', { variants: [{ key: 'a', rolloutPct: 50 }, { key: 'a', rolloutPct: 50 }] }, 'variants.1.key: duplicate variant key "a"'],
      ['override needs 100', { rules: [{ rolloutPct: 50, distinctIds: ['u1'] }] }, 'rules.0.rolloutPct: must be 100 when distinctIds is non-empty (got 50)'],
      ['cohort that does not exist', { rules: [{ rolloutPct: 100, cohortId: 987654 }] }, 'rules.0.cohortId: cohort 987654 is not a cohort of this project'],
      ['key pattern (upper case)', { key: 'Bad-Key' }, 'key: must match ^[a-z0-9][a-z0-9_-]{0,199}$'],
      ['key pattern (leading dash)', { key: '-x' }, 'key: must match ^[a-z0-9][a-z0-9_-]{0,199}$'],
      ['key pattern (empty)', { key: '' }, 'key: must match ^[a-z0-9][a-z0-9_-]{0,199}$'],
      ['key length', { key: 'k'.repeat(201) }, 'key: must be at most 200 characters'],
      ['key missing', { key: undefined }, 'key: required'],
      ['name missing', { name: undefined }, 'name: required'],
      ['name empty', { name: '  ' }, 'name: must not be empty'],
      ['type', { type: 'nope' }, /^type: must be one of release, experiment/],
      ['active type', { active: 'yes' }, 'active: must be a boolean'],
      ['11 variants', { variants: Array.from({ length: 11 }, (_, i) => ({ key: `v${i}`, rolloutPct: i ? 9 : 10 })) }, 'variants: at most 10 variants'],
      ['variant key empty', { variants: [{ key: '', rolloutPct: 100 }] }, 'variants.0.key: must be 1..200 characters'],
      ['variant key long', { variants: [{ key: 'v'.repeat(201), rolloutPct: 100 }] }, 'variants.0.key: must be 1..200 characters'],
      ['variant pct', { variants: [{ key: 'a', rolloutPct: 100.5 }] }, 'variants.0.rolloutPct: must be an integer 0..100'],
      ['11 rules', { rules: Array.from({ length: 11 }, () => ({ rolloutPct: 10 })) }, 'rules: at most 10 rules'],
      ['rule pct missing', { rules: [{}] }, 'rules.0.rolloutPct: required'],
      ['rule pct range', { rules: [{ rolloutPct: 101 }] }, 'rules.0.rolloutPct: must be an integer 0..100'],
      ['51 overrides', { rules: [{ rolloutPct: 100, distinctIds: Array.from({ length: 51 }, (_, i) => `u${i}`) }] }, 'rules.0.distinctIds: at most 50 ids per rule'],
      ['override length', { rules: [{ rolloutPct: 100, distinctIds: ['ok', 'x'.repeat(256)] }] }, 'rules.0.distinctIds.1: must be 1..255 characters'],
      ['override empty', { rules: [{ rolloutPct: 100, distinctIds: [''] }] }, 'rules.0.distinctIds.0: must be 1..255 characters'],
      ['rules not an array', { rules: { rolloutPct: 1 } }, 'rules: must be an array'],
      ['unknown member', { colour: 'red' }, /colour/],
    ];
    for (const [title, patch, message] of cases) {
      it(title, async () => {
        const before = await rowCounts();
        const r = await member.post(`/api/flags?projectId=${acme.project.id}`, { key: uniqueKey(), name: 'n', ...patch });
        assert.equal(r.status, 400, JSON.stringify(r.body));
        if (typeof message === 'string') assert.equal(r.body.error, message);
        else assert.match(r.body.error, message);
        assert.deepEqual(await rowCounts(), before);
      });
    }

    it('accepts the limits themselves (10 variants, 10 rules, 50 overrides of 255 chars, 200-char key)', async () => {
      const flag = await create(member, {
        key: 'k'.repeat(200),
        variants: Array.from({ length: 10 }, (_, i) => ({ key: `v${i}`, rolloutPct: 10, payload: { i } })),
        rules: [
          { rolloutPct: 100, distinctIds: Array.from({ length: 50 }, (_, i) => `${i}`.padEnd(255, 'x')) },
          ...Array.from({ length: 9 }, (_, i) => ({ rolloutPct: i * 10, variant: `v${i}` })),
        ],
      });
      assert.equal(flag.variants.length, 10);
      assert.equal(flag.rules.length, 10);
      assert.equal(flag.active, true);
      assert.equal(flag.type, 'release');
      assert.equal(flag.description, null);
      assert.equal(flag.archived_at, null);
    });

    it('invalid json', async () => {
      const before = await rowCounts();
      const r = await member.post(`/api/flags?projectId=${acme.project.id}`, undefined, { raw: '{"key": "x",', headers: { 'content-type': 'application/json' } });
      assert.equal(r.status, 400);
      assert.equal(r.body.error, 'invalid json');
      assert.deepEqual(await rowCounts(), before);
    });

    it('PUT: invalid bodies change neither the flag nor its audit trail', async () => {
      const flag = await create(member, { key: uniqueKey(), variants: variants2, rules: [{ rolloutPct: 100, variant: 'a' }] });
      const bad: Array<[Record<string, unknown>, string]> = [
        [{ key: 'other-key' }, `key: is immutable (cannot change "${flag.key}" to "other-key")`],
        [{ variants: [{ key: 'c', rolloutPct: 100 }] }, 'rules.0.variant: unknown variant "a"'],
        [{ variants: [] }, 'rules.0.variant: unknown variant "a"'],
        [{ variants: [{ key: 'a', rolloutPct: 99 }] }, 'variants: rolloutPct must sum to exactly 100 (got 99)'],
        [{ rules: [{ rolloutPct: 100, variant: 'nope' }] }, 'rules.0.variant: unknown variant "nope"'],
        [{ rules: [{ rolloutPct: 10, distinctIds: ['x'] }] }, 'rules.0.rolloutPct: must be 100 when distinctIds is non-empty (got 10)'],
        [{ rules: [{ rolloutPct: 100, cohortId: 424242 }] }, 'rules.0.cohortId: cohort 424242 is not a cohort of this project'],
        [{ name: '' }, 'name: must not be empty'],
        [{ active: 1 }, 'active: must be a boolean'],
      ];
      const before = await rowCounts();
      for (const [body, message] of bad) {
        const r = await member.put(`/api/flags/${flag.id}`, body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.body.error, message);
      }
      assert.deepEqual(await rowCounts(), before);
      assert.deepEqual((await member.get(`/api/flags/${flag.id}`)).body, flag);
      // A same-key PUT and the read-only members are fine; changing variants together with rules too.
      const ok = await member.put(`/api/flags/${flag.id}`, { ...flag, variants: [{ key: 'c', rolloutPct: 100 }], rules: [{ rolloutPct: 100, variant: 'c' }] });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.deepEqual(ok.body.variants, [{ key: 'c', rolloutPct: 100 }]);
    });

    it('events limit: default 50, max 200', async () => {
      const flag = await create(member, { key: uniqueKey() });
      for (let i = 0; i < 55; i++) await member.put(`/api/flags/${flag.id}`, { name: `n${i}` });
      assert.equal((await member.get(`/api/flags/${flag.id}/events`)).body.length, 50);
      assert.equal((await member.get(`/api/flags/${flag.id}/events?limit=3`)).body.length, 3);
      assert.equal((await member.get(`/api/flags/${flag.id}/events?limit=200`)).body.length, 56);
      const over = await member.get(`/api/flags/${flag.id}/events?limit=201`);
      assert.equal(over.status, 400);
      assert.equal(over.body.error, 'limit: must be 1..200');
    });
  });

  describe('flag lifecycle (every row of the state table)', () => {
    it('(none) -> POST -> exists, active true unless given; event created', async () => {
      const a = await create(owner, { key: uniqueKey(), description: 'why' });
      assert.equal(a.active, true);
      assert.equal(a.project_id, acme.project.id);
      assert.equal(typeof a.created_by, 'number');
      assert.equal(a.created_at, a.updated_at);
      const b = await create(owner, { key: uniqueKey(), active: false, type: 'kill_switch' });
      assert.equal(b.active, false);
      assert.equal(b.type, 'kill_switch');
      const ev = await events(a.id);
      assert.equal(ev.length, 1);
      assert.equal(ev[0].action, 'created');
      assert.equal(ev[0].before, null);
      assert.deepEqual(ev[0].after, a);
      assert.equal(ev[0].actor_user_id, a.created_by);
      assert.equal(ev[0].actor_mcp_token_id, null);
      assert.equal(ev[0].flag_id, a.id);
      assert.equal(ev[0].project_id, acme.project.id);
      // the superadmin has no user id
      const s = await t.admin.post('/api/flags', { projectId: acme.project.id, key: uniqueKey(), name: 'sa' });
      assert.equal(s.status, 201);
      assert.equal(s.body.created_by, null);
      assert.equal((await events(s.body.id))[0].actor_user_id, null);
    });

    it('active=false -> PUT active true -> active=true; event activated', async () => {
      const f = await create(member, { key: uniqueKey(), active: false });
      const r = await member.put(`/api/flags/${f.id}`, { active: true });
      assert.equal(r.status, 200);
      assert.equal(r.body.active, true);
      const ev = await events(f.id);
      assert.deepEqual(ev.map((e) => e.action), ['activated', 'created']);
      assert.equal(ev[0].before.active, false);
      assert.equal(ev[0].after.active, true);
      assert.deepEqual(ev[0].after, r.body);
    });

    it('active=true -> PUT active false -> active=false; event deactivated', async () => {
      const f = await create(member, { key: uniqueKey() });
      const r = await member.put(`/api/flags/${f.id}`, { active: false, name: 'renamed' });
      assert.equal(r.body.active, false);
      const ev = await events(f.id);
      assert.deepEqual(ev.map((e) => e.action), ['deactivated', 'created']);
      assert.equal(ev[0].after.name, 'renamed');
    });

    it('any -> PUT not flipping active -> unchanged activity; event updated', async () => {
      const f = await create(member, { key: uniqueKey(), active: false });
      const r1 = await member.put(`/api/flags/${f.id}`, { description: 'd' });
      assert.equal(r1.body.active, false);
      const r2 = await member.put(`/api/flags/${f.id}`, { active: false, type: 'experiment' });
      assert.equal(r2.body.active, false);
      assert.equal(r2.body.type, 'experiment');
      const on = await create(member, { key: uniqueKey() });
      const r3 = await member.put(`/api/flags/${on.id}`, { active: true, rules: [{ rolloutPct: 5 }] });
      assert.equal(r3.body.active, true);
      assert.deepEqual((await events(f.id)).map((e) => e.action), ['updated', 'updated', 'created']);
      const ev = await events(on.id);
      assert.deepEqual(ev.map((e) => e.action), ['updated', 'created']);
      assert.deepEqual(ev[0].before.rules, []);
      assert.deepEqual(ev[0].after.rules, [{ rolloutPct: 5 }]);
      assert.equal(r3.body.key, on.key);
    });

    it('not archived -> archive -> archived; event archived', async () => {
      const f = await create(member, { key: uniqueKey() });
      const r = await member.post(`/api/flags/${f.id}/archive`);
      assert.equal(r.status, 200);
      assert.equal(typeof r.body.archived_at, 'number');
      const ev = await events(f.id);
      assert.deepEqual(ev.map((e) => e.action), ['archived', 'created']);
      assert.equal(ev[0].before.archived_at, null);
      assert.equal(ev[0].after.archived_at, r.body.archived_at);
      // archived flags are listed only with archived=1
      const plain = (await member.get(`/api/flags?projectId=${acme.project.id}`)).body;
      assert.ok(!plain.some((x: any) => x.id === f.id));
      for (const q of ['archived=0', 'archived=true', 'archived=']) {
        assert.ok(!(await member.get(`/api/flags?projectId=${acme.project.id}&${q}`)).body.some((x: any) => x.id === f.id));
      }
      const all = (await member.get(`/api/flags?projectId=${acme.project.id}&archived=1`)).body;
      assert.ok(all.some((x: any) => x.id === f.id));
    });

    it('archived -> archive -> unchanged; flag returned, no event', async () => {
      const f = await create(member, { key: uniqueKey() });
      const first = (await member.post(`/api/flags/${f.id}/archive`)).body;
      const again = await member.post(`/api/flags/${f.id}/archive`);
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, first);
      assert.deepEqual((await events(f.id)).map((e) => e.action), ['archived', 'created']);
    });

    it('archived -> revive -> not archived; event revived', async () => {
      const f = await create(member, { key: uniqueKey() });
      await member.post(`/api/flags/${f.id}/archive`);
      const r = await member.post(`/api/flags/${f.id}/revive`);
      assert.equal(r.status, 200);
      assert.equal(r.body.archived_at, null);
      const ev = await events(f.id);
      assert.deepEqual(ev.map((e) => e.action), ['revived', 'archived', 'created']);
      assert.equal(typeof ev[0].before.archived_at, 'number');
      assert.equal(ev[0].after.archived_at, null);
    });

    it('not archived -> revive -> unchanged; flag returned, no event', async () => {
      const f = await create(member, { key: uniqueKey() });
      const r = await member.post(`/api/flags/${f.id}/revive`);
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, f);
      assert.deepEqual((await events(f.id)).map((e) => e.action), ['created']);
    });

    it('archived -> DELETE -> removed with its event history', async () => {
      const f = await create(member, { key: uniqueKey() });
      await member.put(`/api/flags/${f.id}`, { name: 'x' });
      await member.post(`/api/flags/${f.id}/archive`);
      const r = await member.delete(`/api/flags/${f.id}`);
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, { ok: true });
      assert.equal((await member.get(`/api/flags/${f.id}`)).status, 404);
      assert.equal((await member.get(`/api/flags/${f.id}/events`)).status, 404);
      const [{ n }] = await db()('flag_events').where({ flag_id: f.id }).count({ n: '*' });
      assert.equal(Number(n), 0);
      assert.equal((await member.delete(`/api/flags/${f.id}`)).status, 404);
    });

    it('not archived -> DELETE -> unchanged; 409 not archived', async () => {
      const f = await create(member, { key: uniqueKey() });
      const r = await member.delete(`/api/flags/${f.id}`);
      assert.equal(r.status, 409);
      assert.equal(r.body.error, 'not archived');
      assert.deepEqual((await member.get(`/api/flags/${f.id}`)).body, f);
      assert.deepEqual((await events(f.id)).map((e) => e.action), ['created']);
    });
  });

  describe('keys, limits, roles and tenancy', () => {
    it('409 key taken (per project; the same key is free in another project)', async () => {
      const key = uniqueKey();
      await create(member, { key });
      const before = await rowCounts();
      const r = await member.post(`/api/flags?projectId=${acme.project.id}`, { key, name: 'again' });
      assert.equal(r.status, 409);
      assert.equal(r.body.error, 'key taken');
      assert.deepEqual(await rowCounts(), before);
      const other = await t.client(globex.tokens.member).post('/api/flags', { key, name: 'globex' });
      assert.equal(other.status, 201);
      assert.equal(other.body.project_id, globex.project.id);
    });

    it('409 flag limit reached at the 101st flag (archived flags count)', async () => {
      const p = (await t.admin.post(`/admin/orgs/${acme.org.id}/projects`, { name: 'limits' })).body;
      for (let i = 0; i < 100; i++) {
        const r = await member.post('/api/flags', { projectId: p.id, key: `lim-${i}`, name: 'n' });
        assert.equal(r.status, 201);
        if (i === 0) await member.post(`/api/flags/${r.body.id}/archive`);
      }
      const before = await rowCounts();
      const r = await member.post('/api/flags', { projectId: p.id, key: 'lim-100', name: 'n' });
      assert.equal(r.status, 409);
      assert.equal(r.body.error, 'flag limit reached');
      assert.deepEqual(await rowCounts(), before);
    });

    it('concurrent creates of one key: exactly one succeeds', async () => {
      const key = uniqueKey('race');
      const replies = await Promise.all(
        Array.from({ length: 12 }, () => member.post(`/api/flags?projectId=${acme.project.id}`, { key, name: 'race' })),
      );
      const statuses = replies.map((r) => r.status).sort();
      assert.equal(statuses.filter((s) => s === 201).length, 1, JSON.stringify(replies.map((r) => r.body)));
      assert.ok(statuses.filter((s) => s !== 201).every((s) => s === 409));
      assert.ok(replies.filter((r) => r.status === 409).every((r) => r.body.error === 'key taken'));
      const [{ n }] = await db()('flags').where({ project_id: acme.project.id, key }).count({ n: '*' });
      assert.equal(Number(n), 1);
      const [{ e }] = await db()('flag_events').join('flags', 'flags.id', 'flag_events.flag_id').where({ 'flags.key': key }).count({ e: '*' });
      assert.equal(Number(e), 1);
    });

    it('concurrent creates around the 100th flag: never more than 100', async () => {
      const p = (await t.admin.post(`/admin/orgs/${acme.org.id}/projects`, { name: 'race-limit' })).body;
      for (let i = 0; i < 95; i++) assert.equal((await member.post('/api/flags', { projectId: p.id, key: `r-${i}`, name: 'n' })).status, 201);
      const replies = await Promise.all(
        Array.from({ length: 15 }, (_, i) => member.post('/api/flags', { projectId: p.id, key: `race-${i}`, name: 'n' })),
      );
      assert.equal(replies.filter((r) => r.status === 201).length, 5);
      assert.equal(replies.filter((r) => r.status === 409 && r.body.error === 'flag limit reached').length, 10);
      const [{ n }] = await db()('flags').where({ project_id: p.id }).count({ n: '*' });
      assert.equal(Number(n), 100);
    });

    it('viewer reads but cannot write; member writes', async () => {
      const f = await create(member, { key: uniqueKey() });
      assert.equal((await viewer.get(`/api/flags/${f.id}`)).status, 200);
      assert.equal((await viewer.get(`/api/flags?projectId=${acme.project.id}`)).status, 200);
      assert.equal((await viewer.get(`/api/flags/${f.id}/events`)).status, 200);
      assert.equal((await viewer.post(`/api/flags/${f.id}/preview`, { distinctId: 'u' })).status, 200);
      const before = await rowCounts();
      for (const r of [
        await viewer.post(`/api/flags?projectId=${acme.project.id}`, { key: uniqueKey(), name: 'v' }),
        await viewer.put(`/api/flags/${f.id}`, { name: 'v' }),
        await viewer.post(`/api/flags/${f.id}/archive`),
        await viewer.post(`/api/flags/${f.id}/revive`),
        await viewer.delete(`/api/flags/${f.id}`),
      ]) {
        assert.equal(r.status, 403);
        assert.equal(r.body.error, 'forbidden');
      }
      assert.deepEqual(await rowCounts(), before);
    });

    it("another organisation's flag ids answer 404; a foreign projectId 403", async () => {
      const f = await create(member, { key: uniqueKey() });
      const g = t.client(globex.tokens.owner);
      for (const r of [
        await g.get(`/api/flags/${f.id}`),
        await g.put(`/api/flags/${f.id}`, { name: 'x' }),
        await g.post(`/api/flags/${f.id}/archive`),
        await g.post(`/api/flags/${f.id}/revive`),
        await g.delete(`/api/flags/${f.id}`),
        await g.post(`/api/flags/${f.id}/preview`, { distinctId: 'u' }),
        await g.get(`/api/flags/${f.id}/events`),
      ]) {
        assert.equal(r.status, 404);
        assert.equal(r.body.error, 'not found');
      }
      assert.equal((await g.get(`/api/flags?projectId=${acme.project.id}`)).status, 403);
      assert.equal((await g.post('/api/flags', { projectId: acme.project.id, key: uniqueKey(), name: 'x' })).status, 403);
      assert.equal((await t.anon.get(`/api/flags/${f.id}`)).status, 401);
      // without projectId a user gets their organisation's oldest project
      const mine = (await g.get('/api/flags')).body;
      assert.ok(mine.every((x: any) => x.project_id === globex.project.id));
    });

    it('superadmin without projectId and no project at all: 400', async () => {
      const { startTestService: start } = await import('../support/service.js');
      const empty = await start(backend);
      try {
        for (const r of [await empty.admin.get('/api/flags'), await empty.admin.post('/api/flags', { key: 'a', name: 'b' })]) {
          assert.equal(r.status, 400);
        }
      } finally {
        await empty.close();
      }
    });

    it('a failure in the middle of an update leaves the flag and its audit trail as they were', async () => {
      const f = await create(member, { key: uniqueKey() });
      const pg = isPostgres(db());
      if (pg) {
        await db().raw(`CREATE FUNCTION flags_test_fail() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'injected'; END $$ LANGUAGE plpgsql`);
        await db().raw(`CREATE TRIGGER flags_test_fail BEFORE INSERT ON flag_events FOR EACH ROW EXECUTE PROCEDURE flags_test_fail()`);
      } else {
        await db().raw(`CREATE TRIGGER flags_test_fail BEFORE INSERT ON flag_events BEGIN SELECT RAISE(ABORT, 'injected'); END`);
      }
      try {
        const before = await rowCounts();
        for (const r of [
          await member.put(`/api/flags/${f.id}`, { name: 'half', active: false }),
          await member.post(`/api/flags/${f.id}/archive`),
          await member.post(`/api/flags?projectId=${acme.project.id}`, { key: uniqueKey(), name: 'n' }),
        ]) assert.equal(r.status, 500);
        assert.deepEqual(await rowCounts(), before);
        assert.deepEqual((await member.get(`/api/flags/${f.id}`)).body, f);
      } finally {
        await db().raw('DROP TRIGGER flags_test_fail' + (pg ? ' ON flag_events' : ''));
        if (pg) await db().raw('DROP FUNCTION flags_test_fail()');
      }
      assert.equal((await member.put(`/api/flags/${f.id}`, { name: 'whole' })).body.name, 'whole');
    });
  });

  describe('flag secret (every row of the state table)', () => {
    const secretOf = async (c: Client, id = acme.project.id) => c.post(`/api/projects/${id}/flag-secret`);
    const local = (secret?: string, headers: Record<string, string> = {}) => t.anon.get('/flags/local-evaluation', { token: secret, headers });
    const hasSecret = async () => (await owner.get('/api/projects')).body.find((p: any) => p.id === acme.project.id).has_flag_secret;

    it('no secret -> POST -> secret set; value returned once, stored only as a hash', async () => {
      await owner.delete(`/api/projects/${acme.project.id}/flag-secret`);
      assert.equal(await hasSecret(), false);
      const r = await secretOf(owner);
      assert.equal(r.status, 200);
      assert.match(r.body.secret, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      assert.equal(await hasSecret(), true);
      const row = await db()('projects').where({ id: acme.project.id }).first();
      assert.notEqual(row.flag_secret_hash, r.body.secret);
      assert.match(row.flag_secret_hash, /^[0-9a-f]{64}$/);
      assert.ok(!JSON.stringify(await owner.get('/api/projects')).includes(r.body.secret));
      assert.ok(!JSON.stringify(await owner.get(`/api/projects/${acme.project.id}`)).includes(r.body.secret));
      assert.equal((await local(r.body.secret)).status, 200);
    });

    it('secret set -> POST -> new secret set; old value invalid immediately', async () => {
      const first = (await secretOf(owner)).body.secret;
      assert.equal((await local(first)).status, 200);
      const second = (await secretOf(t.admin)).body.secret;
      assert.notEqual(first, second);
      const old = await local(first);
      assert.equal(old.status, 401);
      assert.deepEqual(old.body, { status: 0, error: 'invalid flag secret' });
      assert.equal((await local(second)).status, 200);
    });

    it('secret set or none -> DELETE -> no secret; idempotent; later requests 401', async () => {
      const s = (await secretOf(owner)).body.secret;
      for (let i = 0; i < 2; i++) {
        const r = await owner.delete(`/api/projects/${acme.project.id}/flag-secret`);
        assert.equal(r.status, 200);
        assert.deepEqual(r.body, { ok: true });
      }
      assert.equal(await hasSecret(), false);
      assert.deepEqual((await local(s)).body, { status: 0, error: 'invalid flag secret' });
      assert.equal((await local(s)).status, 401);
    });

    it('owner or superadmin only; another organisation gets 404', async () => {
      for (const role of ['admin', 'member', 'viewer'] as const) {
        const c = t.client(acme.tokens[role]);
        assert.equal((await secretOf(c)).status, 403);
        assert.equal((await c.delete(`/api/projects/${acme.project.id}/flag-secret`)).status, 403);
      }
      const g = t.client(globex.tokens.owner);
      assert.equal((await secretOf(g)).status, 404);
      assert.equal((await g.delete(`/api/projects/${acme.project.id}/flag-secret`)).status, 404);
      assert.equal((await secretOf(t.admin, 999999)).status, 404);
      assert.equal((await t.anon.post(`/api/projects/${acme.project.id}/flag-secret`)).status, 401);
    });

    it('is accepted on local evaluation only; nothing else is accepted there', async () => {
      const s = (await secretOf(owner)).body.secret;
      // the flag secret elsewhere
      assert.equal((await t.client(s).get('/api/flags')).status, 401);
      assert.equal((await t.client(s).get('/api/projects')).status, 401);
      const ev = await evaluate({ distinct_id: 'u' }, s);
      assert.deepEqual([ev.status, ev.body], [401, { status: 0, error: 'invalid token' }]);
      assert.equal((await t.anon.post('/flags/evaluate', { distinct_id: 'u' }, { token: s })).status, 401);
      // other credentials on local evaluation
      for (const r of [
        await local(acme.project.token),
        await local(undefined, { 'x-service-token': acme.project.token }),
        await local('test-superadmin-key'),
        await local(acme.tokens.owner),
        await local(),
      ]) assert.deepEqual([r.status, r.body], [401, { status: 0, error: 'invalid flag secret' }]);
    });
  });

  describe('remote and local evaluation', () => {
    let secret: string;
    let ev: Tenant;
    before(async () => {
      ev = await createTenant(t, 'FlagEval');
      secret = (await ev.owner.post(`/api/projects/${ev.project.id}/flag-secret`)).body.secret;
    });
    const mk = async (body: Record<string, unknown>) => {
      const r = await ev.owner.post('/api/flags', { name: 'n', ...body });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body;
    };
    const evalAs = (body: Record<string, unknown>) => t.anon.post('/flags/evaluate', body, { headers: { 'x-service-token': ev.project.token } });

    it('evaluates every non-archived flag with the reasons of docs/decisions.md', async () => {
      await mk({ key: 'on', rules: [{ rolloutPct: 100 }] });
      await mk({ key: 'off', active: false, rules: [{ rolloutPct: 100 }] });
      await mk({ key: 'empty' });
      await mk({ key: 'zero', rules: [{ rolloutPct: 0 }] });
      const arch = await mk({ key: 'gone', rules: [{ rolloutPct: 100 }] });
      await ev.owner.post(`/api/flags/${arch.id}/archive`);
      await mk({
        key: 'multi',
        variants: [{ key: 'red', rolloutPct: 50, payload: { c: '#f00' } }, { key: 'blue', rolloutPct: 50, payload: [1, 2] }],
        rules: [{ rolloutPct: 100, distinctIds: ['vip'], variant: 'blue' }, { rolloutPct: 100 }],
      });
      const r = await evalAs({ distinct_id: 'user-1' });
      assert.equal(r.status, 200);
      const f = r.body.flags;
      assert.deepEqual(Object.keys(f).sort(), ['empty', 'multi', 'off', 'on', 'zero']);
      assert.deepEqual(f.on, { enabled: true, variant: null, payload: null, reason: 'rule:0' });
      assert.deepEqual(f.off, { enabled: false, variant: null, payload: null, reason: 'disabled' });
      assert.deepEqual(f.empty, { enabled: false, variant: null, payload: null, reason: 'no_match' });
      assert.deepEqual(f.zero, { enabled: false, variant: null, payload: null, reason: 'no_match' });
      const expected = pickVariant('multi', 'user-1', [{ key: 'red', rolloutPct: 50 }, { key: 'blue', rolloutPct: 50 }])!.key;
      assert.equal(f.multi.variant, expected);
      assert.equal(f.multi.reason, 'rule:1');
      assert.deepEqual(f.multi.payload, expected === 'red' ? { c: '#f00' } : [1, 2]);
      const vip = (await evalAs({ distinct_id: 'vip', flag_keys: ['multi', 'gone', 'nope'] })).body.flags;
      assert.deepEqual(vip, {
        multi: { enabled: true, variant: 'blue', payload: [1, 2], reason: 'rule:0' },
        gone: { enabled: false, variant: null, payload: null, reason: 'not_found' },
        nope: { enabled: false, variant: null, payload: null, reason: 'not_found' },
      });
      // rules: [] on an active flag evaluates as disabled by configuration
      const on = (await ev.owner.get('/api/flags')).body.find((x: any) => x.key === 'on');
      await ev.owner.put(`/api/flags/${on.id}`, { rules: [] });
      assert.deepEqual((await evalAs({ distinct_id: 'user-1', flag_keys: ['on'] })).body.flags.on, { enabled: false, variant: null, payload: null, reason: 'no_match' });
    });

    it('rollout is deterministic per identity and follows the bucket', async () => {
      await mk({ key: 'half', rules: [{ rolloutPct: 50 }] });
      let enabled = 0;
      for (let i = 0; i < 40; i++) {
        const id = `person-${i}`;
        const a = (await evalAs({ distinct_id: id, flag_keys: ['half'] })).body.flags.half;
        const b = (await evalAs({ distinct_id: id, flag_keys: ['half'] })).body.flags.half;
        assert.deepEqual(a, b);
        assert.equal(a.enabled, bucket(`half.${id}`) < 0.5);
        if (a.enabled) enabled++;
      }
      assert.ok(enabled > 5 && enabled < 35);
    });

    it('uses the canonical id: overrides match the raw and the canonical id, bucketing uses the canonical', async () => {
      await mk({ key: 'vip-only', rules: [{ rolloutPct: 100, distinctIds: ['the-user'] }] });
      await mk({ key: 'raw-only', rules: [{ rolloutPct: 100, distinctIds: ['$device:abc'] }] });
      // find a canonical id that is in a 30% rollout and a device id that alone is not
      let user = '';
      let device = '';
      for (let i = 0; !user || !device; i++) {
        if (!user && bucket(`thirty.user-${i}`) < 0.3) user = `user-${i}`;
        if (!device && bucket(`thirty.$device:${i}`) >= 0.3) device = `$device:${i}`;
      }
      await mk({ key: 'thirty', rules: [{ rolloutPct: 30 }] });
      await db()('identity_links').insert([
        { project_id: ev.project.id, distinct_id: device, canonical_id: user, from_time: 0, created_at: Date.now() },
        { project_id: ev.project.id, distinct_id: '$device:abc', canonical_id: 'the-user', from_time: 0, created_at: Date.now() },
      ]);
      await linksPolled();
      const dev = (await evalAs({ distinct_id: device })).body.flags;
      assert.equal(dev.thirty.enabled, true, 'device id evaluates as its user');
      const viaDevice = (await evalAs({ distinct_id: '$device:abc' })).body.flags;
      assert.equal(viaDevice['vip-only'].reason, 'rule:0');
      assert.equal(viaDevice['raw-only'].reason, 'rule:0');
      const asUser = (await evalAs({ distinct_id: 'the-user' })).body.flags;
      assert.equal(asUser['vip-only'].enabled, true);
      assert.equal(asUser['raw-only'].enabled, false);
    });

    it('preview runs the same evaluator, scoped to one flag', async () => {
      const f = await mk({
        key: 'pv',
        variants: [{ key: 'a', rolloutPct: 30 }, { key: 'b', rolloutPct: 70, payload: 'B' }],
        rules: [{ rolloutPct: 60 }],
      });
      for (let i = 0; i < 25; i++) {
        const id = `pv-${i}`;
        const p = await ev.owner.post(`/api/flags/${f.id}/preview`, { distinctId: id });
        assert.equal(p.status, 200);
        assert.deepEqual(p.body, (await evalAs({ distinct_id: id, flag_keys: ['pv'] })).body.flags.pv);
      }
      for (const body of [{}, { distinctId: '' }, { distinctId: 3 }, undefined]) {
        const r = await ev.owner.post(`/api/flags/${f.id}/preview`, body);
        assert.deepEqual([r.status, r.body.error], [400, 'distinctId required']);
      }
    });

    it('runtime errors use {status: 0, error}', async () => {
      for (const [r, status, error] of [
        [await evalAs({}), 400, 'distinct_id required'],
        [await evalAs({ distinct_id: '' }), 400, 'distinct_id required'],
        [await evalAs({ distinct_id: 5 }), 400, 'distinct_id required'],
        [await evalAs({ distinct_id: 'u', flag_keys: 'x' }), 400, 'flag_keys: must be an array of strings'],
        [await t.anon.post('/flags/evaluate', { distinct_id: 'u' }), 401, 'invalid token'],
        [await t.anon.post('/flags/evaluate', { distinct_id: 'u', token: 'nope' }), 401, 'invalid token'],
        [await t.anon.post('/flags/evaluate', undefined, { raw: '{', headers: { 'x-service-token': ev.project.token } }), 400, 'invalid json'],
      ] as const) {
        assert.equal(r.status, status, JSON.stringify(r.body));
        assert.deepEqual(r.body, { status: 0, error });
      }
      // the body token works and wins over the header
      const ok = await t.anon.post('/flags/evaluate', { distinct_id: 'u', token: ev.project.token }, { headers: { 'x-service-token': 'bad' } });
      assert.equal(ok.status, 200);
    });

    it('local evaluation: non-archived definitions, localEvaluable, ETag and 304', async () => {
      const r = await t.anon.get('/flags/local-evaluation', { token: secret });
      assert.equal(r.status, 200);
      const etag = r.headers.get('etag')!;
      assert.match(etag, /^".+"$/);
      const keys = r.body.flags.map((d: any) => d.key);
      assert.ok(keys.includes('multi') && keys.includes('off') && !keys.includes('gone'));
      const multi = r.body.flags.find((d: any) => d.key === 'multi');
      assert.deepEqual(Object.keys(multi).sort(), ['active', 'key', 'localEvaluable', 'name', 'rules', 'variants']);
      assert.equal(multi.localEvaluable, true);
      const same = await t.anon.get('/flags/local-evaluation', { token: secret, headers: { 'if-none-match': etag } });
      assert.equal(same.status, 304);
      assert.equal(same.text, '');
      await mk({ key: 'fresh' });
      const changed = await t.anon.get('/flags/local-evaluation', { token: secret, headers: { 'if-none-match': etag } });
      assert.equal(changed.status, 200);
      assert.notEqual(changed.headers.get('etag'), etag);
      assert.ok(changed.body.flags.some((d: any) => d.key === 'fresh'));
    });

    it('cohort rules: same-project cohorts only, canonical membership, not locally evaluable', async () => {
      const cohorts = new DefinitionStore<CohortDefinition>(db(), 'cohorts');
      const definition = { op: 'and' as const, criteria: [{ kind: 'behavior' as const, event: 'purchase', op: 'gte' as const, count: 1, windowDays: 0 }] };
      const mine = await cohorts.create({ projectId: ev.project.id, createdBy: null, name: 'buyers', description: null, definition });
      const theirs = await cohorts.create({ projectId: globex.project.id, createdBy: null, name: 'buyers', description: null, definition });
      const before = await rowCounts();
      const bad = await ev.owner.post('/api/flags', { key: 'cohort-bad', name: 'n', rules: [{ rolloutPct: 100, cohortId: theirs.id }] });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error, `rules.0.cohortId: cohort ${theirs.id} is not a cohort of this project`);
      assert.deepEqual(await rowCounts(), before);
      const f = await mk({ key: 'buyers-only', rules: [{ rolloutPct: 100, cohortId: mine.id }] });
      const bad2 = await ev.owner.put(`/api/flags/${f.id}`, { rules: [{ rolloutPct: 100, cohortId: theirs.id }] });
      assert.equal(bad2.status, 400);
      // one stored event makes `buyer-1` a member; `$device:zz` is linked to it
      const now = Date.now();
      await t.svc.deps.events.insertEvents([{
        project_id: ev.project.id, id: 1, event: 'purchase', distinct_id: 'buyer-1', time: now - 1000, insert_id: 'p1',
        prop_keys: [], prop_values: [], prop_types: '', received_at: now,
      }]);
      const link = { project_id: ev.project.id, distinct_id: '$device:zz', canonical_id: 'buyer-1', from_time: 0, created_at: now };
      await db()('identity_links').insert(link);
      await t.svc.deps.events.insertRows('identity_links', [link]);
      await linksPolled();
      const res = async (id: string) => (await evalAs({ distinct_id: id, flag_keys: ['buyers-only'] })).body.flags['buyers-only'];
      assert.deepEqual(await res('buyer-1'), { enabled: true, variant: null, payload: null, reason: 'rule:0' });
      assert.deepEqual(await res('$device:zz'), { enabled: true, variant: null, payload: null, reason: 'rule:0' });
      assert.deepEqual(await res('stranger'), { enabled: false, variant: null, payload: null, reason: 'no_match' });
      assert.deepEqual((await ev.owner.post(`/api/flags/${f.id}/preview`, { distinctId: '$device:zz' })).body.reason, 'rule:0');
      const defs = (await t.anon.get('/flags/local-evaluation', { token: secret })).body.flags;
      const d = defs.find((x: any) => x.key === 'buyers-only');
      assert.equal(d.localEvaluable, false);
      assert.deepEqual(d.rules, [{ rolloutPct: 100, cohortId: mine.id }]);
      assert.ok(defs.filter((x: any) => x.key !== 'buyers-only').every((x: any) => x.localEvaluable === true));
    });

    it('a flag changed straight in the store (as another process would) is evaluated within the TTL; its project revision moves with every write', async () => {
      const revision = async (projectId: number) => Number((await db()('flag_revisions').where({ project_id: projectId }).first('revision'))?.revision ?? 0);
      const f = await mk({ key: 'elsewhere', rules: [{ rolloutPct: 100 }] });
      const res = async () => (await evalAs({ distinct_id: 'user-1', flag_keys: ['elsewhere'] })).body.flags.elsewhere.enabled;
      assert.equal(await res(), true);
      const r0 = await revision(ev.project.id);
      assert.ok(r0 > 0);
      await db()('flags').where({ id: f.id }).update({ active: false });
      assert.equal(await revision(ev.project.id), r0 + 1);
      const deadline = Date.now() + 3000;
      while ((await res()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      assert.equal(await res(), false, 'seen within the TTL (1 s; 3 s of slack)');
      // other projects' writes leave this one's number alone; deletes move it
      await globex.owner.post('/api/flags', { name: 'n', key: uniqueKey() });
      assert.equal(await revision(ev.project.id), r0 + 1);
      const g = await mk({ key: 'short-lived' });
      await db()('flags').where({ id: g.id }).delete();
      assert.equal(await revision(ev.project.id), r0 + 3);
    });

    it("deleting a project with flags takes its revision row with it", async () => {
      const doomed = await createTenant(t, 'FlagDoomed');
      assert.equal((await doomed.owner.post('/api/flags', { name: 'n', key: 'x' })).status, 201);
      assert.ok(await db()('flag_revisions').where({ project_id: doomed.project.id }).first());
      assert.equal((await t.admin.delete(`/api/projects/${doomed.project.id}`)).status, 200);
      assert.equal(await db()('flag_revisions').where({ project_id: doomed.project.id }).first(), undefined);
      assert.equal(await db()('flags').where({ project_id: doomed.project.id }).first(), undefined);
    });

    it('a flag secret of one project never shows another project', async () => {
      const g = (await globex.owner.post(`/api/projects/${globex.project.id}/flag-secret`)).body.secret;
      const r = await t.anon.get('/flags/local-evaluation', { token: g });
      assert.equal(r.status, 200);
      assert.ok(!r.body.flags.some((d: any) => d.key === 'multi'));
    });
  });

  describe('rate limit', () => {
    it('limits /flags/evaluate per project token and /flags/local-evaluation per flag secret with Retry-After', async () => {
      const small = await startTestService(backend, {
        FLAGS_EVALUATE_RATE_PER_SECOND: '1', FLAGS_EVALUATE_RATE_BURST: '3', FLAGS_LOCAL_RATE_PER_SECOND: '1', FLAGS_LOCAL_RATE_BURST: '1',
      });
      try {
        const org = (await small.admin.post('/admin/orgs', { name: 'rl' })).body;
        const project = (await small.admin.post(`/admin/orgs/${org.id}/projects`, { name: 'rl' })).body;
        const secret = (await small.admin.post(`/api/projects/${project.id}/flag-secret`)).body.secret;
        const statuses: number[] = [];
        for (let i = 0; i < 3; i++) statuses.push((await small.anon.post('/flags/evaluate', { distinct_id: 'u', token: project.token })).status);
        assert.deepEqual(statuses, [200, 200, 200]);
        assert.equal((await small.anon.get('/flags/local-evaluation', { token: secret })).status, 200, 'its own bucket');
        for (const r of [
          await small.anon.post('/flags/evaluate', { distinct_id: 'u', token: project.token }),
          await small.anon.get('/flags/local-evaluation', { token: secret }),
        ]) {
          assert.equal(r.status, 429);
          assert.deepEqual(r.body, { status: 0, error: 'rate limited' });
          assert.ok(Number(r.headers.get('retry-after')) >= 1);
        }
      } finally {
        await small.close();
      }
    });
  });
});
