import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { OpenFeature, ErrorCode, StandardResolutionReasons } from '@openfeature/server-sdk';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, startTestService, type Tenant, type TestService } from '../support/service.js';
import { Tally, bucket, evaluateFlag, pickVariant } from '../../apps/sdk/src/index.js';
import { TallyProvider } from '../../apps/sdk/src/openfeature.js';
import { DefinitionStore } from '../../apps/server/src/definitions/store.js';
import type { CohortDefinition } from '../../apps/server/src/cohorts/schema.js';

const vectors = JSON.parse(readFileSync(new URL('../vectors/flag-bucketing.json', import.meta.url), 'utf8'));

describe('SDK bucketing vectors', () => {
  it('reproduces every vector of test/vectors/flag-bucketing.json', () => {
    assert.ok(vectors.vectors.length >= 50);
    for (const v of vectors.vectors) {
      assert.equal(bucket(`${v.flagKey}.${v.id}`), v.bucket, `${v.flagKey}.${v.id}`);
      assert.equal(bucket(`${v.flagKey}.${v.id}.variant`), v.variantBucket);
      assert.equal(pickVariant(v.flagKey, v.id, v.variants)?.key, v.variant);
      const r = evaluateFlag({ key: v.flagKey, active: true, variants: v.variants, rules: [{ rolloutPct: v.rolloutPct }] }, { bucketingId: v.id, overrideIds: [v.id] });
      assert.equal(r.enabled, v.inRollout);
      assert.equal(r.variant, v.inRollout ? v.variant : null);
    }
  });
});

describe('SDK package build', () => {
  it('builds alone and runs from its dist with @tally-analytics/flag-evaluation as a dependency', function () {
    this.timeout(120_000);
    const apps = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../apps');
    const work = mkdtempSync(path.join(tmpdir(), 'sdk-build-'));
    try {
      // Copies, so the build writes nothing into the source tree.
      for (const pkg of ['sdk', 'flag-evaluation']) {
        cpSync(path.join(apps, pkg), path.join(work, 'apps', pkg), { recursive: true, filter: (f) => !f.includes(`${path.sep}dist`) });
      }
      cpSync(path.join(apps, '../tsconfig.json'), path.join(work, 'tsconfig.json'));
      symlinkSync(path.join(apps, '../node_modules'), path.join(work, 'node_modules')); // the compiler's @types/node
      const tsc = path.join(apps, '../node_modules/typescript/bin/tsc');
      execFileSync(process.execPath, [tsc, '-b', path.join(work, 'apps/sdk/tsconfig.build.json')], { stdio: 'pipe' });
      // Installed the way npm would lay the two packages out.
      const modules = path.join(work, 'consumer/node_modules/@tally-analytics');
      cpSync(path.join(work, 'apps/sdk'), path.join(modules, 'node'), { recursive: true });
      cpSync(path.join(work, 'apps/flag-evaluation'), path.join(modules, 'flag-evaluation'), { recursive: true });
      const v = vectors.vectors[0];
      const out = execFileSync(process.execPath, ['--input-type=module', '-e', `
        import { bucket, Tally } from '@tally-analytics/node';
        console.log(JSON.stringify({ tally: typeof Tally, bucket: bucket(${JSON.stringify(`${v.flagKey}.${v.id}`)}) }));
      `], { cwd: path.join(work, 'consumer'), encoding: 'utf8' });
      assert.deepEqual(JSON.parse(out), { tally: 'function', bucket: v.bucket });
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});

forEachBackend('sdk', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let secret: string;
  const clients: Tally[] = [];
  const sdk = (opts: Partial<ConstructorParameters<typeof Tally>[0]> = {}) => {
    const c = new Tally({ token: acme.project.token, host: t.url, flagSecret: secret, flushOnExit: false, retry: { baseDelayMs: 20, maxDelayMs: 200 }, ...opts });
    clients.push(c);
    return c;
  };

  before(async () => {
    t = await sharedService(backend);
    acme = await createTenant(t, 'SdkAcme');
    secret = (await acme.owner.post(`/api/projects/${acme.project.id}/flag-secret`)).body.secret;
    const flags = [
      { key: 'simple', rules: [{ rolloutPct: 40 }] },
      {
        key: 'checkout',
        variants: [{ key: 'control', rolloutPct: 34, payload: { price: 10 } }, { key: 'cheap', rolloutPct: 33, payload: { price: 8 } }, { key: 'premium', rolloutPct: 33, payload: 12 }],
        rules: [{ rolloutPct: 100, distinctIds: ['vip-1', 'vip-2'], variant: 'premium' }, { rolloutPct: 70 }],
      },
      { key: 'off', active: false, rules: [{ rolloutPct: 100 }] },
      { key: 'nobody' },
      { key: 'numbers', variants: [{ key: 'n', rolloutPct: 100, payload: 42 }], rules: [{ rolloutPct: 100 }] },
    ];
    for (const f of flags) assert.equal((await acme.owner.post('/api/flags', { name: f.key, ...f })).status, 201);
  });
  after(async () => {
    for (const c of clients) await c.shutdown();
    await OpenFeature.close();
  });

  const remote = async (id: string) =>
    (await t.anon.post('/flags/evaluate', { distinct_id: id }, { headers: { 'x-service-token': acme.project.token } })).body.flags;

  it('evaluates locally what remote evaluation and preview answer, for the same identities', async () => {
    const c = sdk();
    await c.ready();
    assert.ok(c.flags.hasDefinitions);
    const ids = ['vip-1', 'vip-2', ...Array.from({ length: 40 }, (_, i) => `sdk-user-${i}`)];
    const list = (await acme.owner.get('/api/flags')).body as any[];
    const checkoutId = list.find((f) => f.key === 'checkout').id;
    let enabled = 0;
    for (const id of ids) {
      const local = await c.getAllFlags(id);
      const server = await remote(id);
      assert.deepEqual(Object.keys(local).sort(), Object.keys(server).sort());
      for (const [key, r] of Object.entries(local)) {
        assert.equal(r.source, 'local');
        const { source: _s, ...plain } = r;
        assert.deepEqual(plain, server[key], `${key} for ${id}`);
      }
      const preview = (await acme.owner.post(`/api/flags/${checkoutId}/preview`, { distinctId: id })).body;
      const { source: _s, ...one } = await c.getFlag('checkout', id);
      assert.deepEqual(one, preview);
      if (local.checkout.enabled) enabled++;
    }
    assert.ok(enabled > 10 && enabled < 42, `checkout enabled for ${enabled}`);
    assert.equal(c.flags.stats.remote, 0);
    assert.deepEqual((await c.getFlag('checkout', 'vip-2')).variant, 'premium');
  });

  it('polls with ETag (304 while unchanged) and picks up changes', async () => {
    const c = sdk();
    await c.ready();
    const polls = c.flags.stats.polls;
    await c.flags.refresh();
    await c.flags.refresh();
    assert.equal(c.flags.stats.polls, polls + 2);
    assert.equal(c.flags.stats.notModified, 2);
    const simple = ((await acme.owner.get('/api/flags')).body as any[]).find((f) => f.key === 'simple');
    await acme.owner.put(`/api/flags/${simple.id}`, { rules: [{ rolloutPct: 100 }] });
    await c.flags.refresh();
    assert.equal(c.flags.stats.notModified, 2);
    assert.deepEqual(c.flags.evaluateLocal('simple', 'anyone'), { enabled: true, variant: null, payload: null, reason: 'rule:0' });
    await acme.owner.put(`/api/flags/${simple.id}`, { rules: [{ rolloutPct: 40 }] });
    // the poll interval alone refreshes too
    const fast = sdk({ pollIntervalMs: 50 });
    await fast.ready();
    assert.equal(fast.flags.evaluateLocal('simple', 'anyone')?.enabled, bucket('simple.anyone') < 0.4);
    await acme.owner.put(`/api/flags/${simple.id}`, { active: false });
    const deadline = Date.now() + 3000;
    while (fast.flags.evaluateLocal('simple', 'anyone')?.reason !== 'disabled' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    assert.equal(fast.flags.evaluateLocal('simple', 'anyone')?.reason, 'disabled');
    await acme.owner.put(`/api/flags/${simple.id}`, { active: true });
  });

  it('falls back to remote evaluation for cohort flags, unknown keys, and without usable definitions', async () => {
    const cohort = await new DefinitionStore<CohortDefinition>(t.svc.deps.db, 'cohorts').create({
      projectId: acme.project.id, createdBy: null, name: 'c', description: null,
      definition: { op: 'and', criteria: [{ kind: 'behavior', event: 'x', op: 'gte', count: 1, windowDays: 0 }] },
    });
    assert.equal((await acme.owner.post('/api/flags', { key: 'cohorted', name: 'c', rules: [{ rolloutPct: 100, cohortId: cohort.id }, { rolloutPct: 100 }] })).status, 201);
    const c = sdk();
    await c.ready();
    const r = await c.getFlag('cohorted', 'u-1');
    assert.equal(r.source, 'remote');
    assert.equal(r.reason, 'rule:1');
    const all = await c.getAllFlags('u-1');
    assert.equal(all.cohorted.source, 'remote');
    assert.equal(all.simple.source, 'local');
    const unknown = await c.getFlag('does-not-exist', 'u-1');
    assert.deepEqual(unknown, { enabled: false, variant: null, payload: null, reason: 'not_found', source: 'remote' });
    assert.equal(await c.isEnabled('does-not-exist', 'u-1', true), true);

    // no flag secret: everything remote, same answers
    const plain = sdk({ flagSecret: undefined });
    await plain.ready();
    assert.equal(plain.flags.hasDefinitions, false);
    const viaRemote = await plain.getFlag('checkout', 'sdk-user-3');
    assert.equal(viaRemote.source, 'remote');
    assert.deepEqual({ ...viaRemote, source: 'local' }, await c.getFlag('checkout', 'sdk-user-3'));

    // revoked secret: the next poll drops the definitions and evaluation goes remote
    const rotating = sdk();
    await rotating.ready();
    assert.equal((await rotating.getFlag('simple', 'u')).source, 'local');
    await acme.owner.delete(`/api/projects/${acme.project.id}/flag-secret`);
    try {
      await rotating.flags.refresh();
      assert.equal(rotating.flags.hasDefinitions, false);
      assert.equal((await rotating.getFlag('simple', 'u')).source, 'remote');
    } finally {
      secret = (await acme.owner.post(`/api/projects/${acme.project.id}/flag-secret`)).body.secret;
    }
  });

  it('server unreachable: getFlag rejects after retries, isEnabled returns the default; stale definitions keep working', async () => {
    const dead = sdk({ host: 'http://127.0.0.1:9', retry: { maxRetries: 1, baseDelayMs: 1 } });
    await dead.ready();
    assert.equal(dead.flags.hasDefinitions, false);
    await assert.rejects(dead.getFlag('simple', 'u'));
    assert.equal(await dead.isEnabled('simple', 'u', true), true);
    assert.equal(await dead.isEnabled('simple', 'u'), false);
    const c = sdk();
    await c.ready();
    (c.flags as any).opts.flagSecret = 'wrong-but-network-ok';
    (c.transport as any).host = 'http://127.0.0.1:9';
    await c.flags.refresh();
    assert.ok(c.flags.lastPollError);
    assert.equal(c.flags.hasDefinitions, true, 'a network failure keeps the last good definitions');
    assert.equal((await c.getFlag('checkout', 'vip-1')).variant, 'premium');
  });

  it('honours Retry-After on 429 from the real service', async () => {
    const small = await startTestService(backend, { FLAGS_EVALUATE_RATE_PER_SECOND: '1', FLAGS_EVALUATE_RATE_BURST: '2' });
    try {
      const org = (await small.admin.post('/admin/orgs', { name: 'rl' })).body;
      const project = (await small.admin.post(`/admin/orgs/${org.id}/projects`, { name: 'rl' })).body;
      await small.admin.post('/api/flags', { projectId: project.id, key: 'f', name: 'f', rules: [{ rolloutPct: 100 }] });
      const c = new Tally({ token: project.token, host: small.url, flushOnExit: false, retry: { maxRetries: 3, baseDelayMs: 1 } });
      clients.push(c);
      const started = Date.now();
      const results = [];
      for (let i = 0; i < 3; i++) results.push(await c.getFlag('f', 'u'));
      const elapsed = Date.now() - started;
      assert.ok(results.every((r) => r.enabled && r.source === 'remote'));
      // the third call met a 429 with Retry-After: 1 and waited for it rather than the 1 ms backoff
      assert.ok(elapsed >= 500, `waited ${elapsed} ms`);
      const noRetry = new Tally({ token: project.token, host: small.url, flushOnExit: false, retry: { maxRetries: 0 } });
      clients.push(noRetry);
      let rejected: unknown;
      for (let i = 0; i < 3 && !rejected; i++) await noRetry.getFlag('f', 'u').catch((err) => { rejected = err; });
      assert.match(String(rejected), /HTTP 429: rate limited/);
    } finally {
      await small.close();
    }
  });

  describe('OpenFeature provider', () => {
    it('resolves booleans, variants and payloads with reasons', async () => {
      const c = sdk();
      await OpenFeature.setProviderAndWait('tally', new TallyProvider(c));
      const of = OpenFeature.getClient('tally');
      const vip = { targetingKey: 'vip-1' };
      assert.equal(await of.getBooleanValue('checkout', false, vip), true);
      assert.equal(await of.getStringValue('checkout', 'none', vip), 'premium');
      assert.equal(await of.getNumberValue('checkout', 0, vip), 12);
      assert.equal(await of.getNumberValue('numbers', 0, vip), 42);
      const d = await of.getStringDetails('checkout', 'none', vip);
      assert.equal(d.reason, StandardResolutionReasons.TARGETING_MATCH);
      assert.equal(d.variant, 'premium');
      assert.deepEqual(d.flagMetadata, { reason: 'rule:0', source: 'local' });
      for (let i = 0; i < 20; i++) {
        const id = `of-${i}`;
        const expected = await c.getFlag('checkout', id);
        assert.equal(await of.getBooleanValue('checkout', !expected.enabled, { targetingKey: id }), expected.enabled);
        assert.equal(await of.getStringValue('checkout', 'dflt', { targetingKey: id }), expected.enabled ? expected.variant : 'dflt');
        // object payloads are served; the number payload of `premium` is a type mismatch (default)
        const expectedObject = expected.enabled && expected.payload !== null && typeof expected.payload === 'object' ? expected.payload : { d: 1 };
        assert.deepEqual(await of.getObjectValue('checkout', { d: 1 }, { targetingKey: id }), expectedObject);
      }
      // A disabled flag gives the caller's default for every type, true and false alike.
      const off = await of.getBooleanDetails('off', true, vip);
      assert.equal(off.value, true);
      assert.equal(off.reason, StandardResolutionReasons.DISABLED);
      assert.equal(off.errorCode, undefined);
      assert.equal(await of.getBooleanValue('off', false, vip), false);
      assert.equal(await of.getStringValue('off', 'dflt', vip), 'dflt');
      assert.equal(await of.getNumberValue('off', 5, vip), 5);
      assert.deepEqual(await of.getObjectValue('off', { d: 2 }, vip), { d: 2 });
      assert.equal((await of.getStringDetails('off', 'dflt', vip)).reason, StandardResolutionReasons.DISABLED);
      const none = await of.getBooleanDetails('nobody', true, vip);
      assert.equal(none.value, false);
      assert.equal(none.reason, StandardResolutionReasons.DEFAULT);
      const missing = await of.getBooleanDetails('no-such-flag', true, vip);
      assert.equal(missing.value, true);
      assert.equal(missing.errorCode, ErrorCode.FLAG_NOT_FOUND);
      assert.equal(missing.reason, StandardResolutionReasons.ERROR);
      assert.equal(await of.getStringValue('no-such-flag', 'dflt', vip), 'dflt');
      assert.equal(await of.getNumberValue('no-such-flag', 5, vip), 5);
      const noKey = await of.getBooleanDetails('checkout', true, {});
      assert.equal(noKey.value, true);
      assert.equal(noKey.errorCode, ErrorCode.TARGETING_KEY_MISSING);
      const mismatch = await of.getNumberDetails('checkout', 7, { targetingKey: 'vip-1' });
      assert.equal(mismatch.value, 12);
      const typeErr = await of.getObjectDetails('numbers', { a: 1 }, vip);
      assert.equal(typeErr.errorCode, ErrorCode.TYPE_MISMATCH);
      assert.deepEqual(typeErr.value, { a: 1 });
    });
  });
});
