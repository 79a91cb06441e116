import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, startTestService, type Tenant, type TestService } from '../support/service.js';
import { Tally } from '../../apps/sdk/src/index.js';
import { sqlInt } from '../../apps/server/src/ports/events/index.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** A fetch that records what the SDK sends and passes it on to the real service. */
function recordingFetch(log: Array<{ path: string; records: number; status?: number }>): typeof fetch {
  return async (input, init) => {
    const url = new URL(String(input));
    const body = init?.body ? JSON.parse(String(init.body)) : undefined;
    const entry: { path: string; records: number; status?: number } = { path: url.pathname, records: Array.isArray(body) ? body.length : 1 };
    log.push(entry);
    const res = await fetch(input, init);
    entry.status = res.status;
    return res;
  };
}

forEachBackend('sdk ingestion', (backend) => {
  let t: TestService;
  let acme: Tenant;

  before(async function () {
    t = await sharedService(backend);
    acme = await createTenant(t, 'SdkIngest');
    const probe = await t.anon.post('/track', [], { headers: { 'x-service-token': acme.project.token } });
    if (probe.status === 404) this.skip(); // the ingestion routes are not registered in this tree yet
  });

  const count = async (table: 'events' | 'profiles', where = '') =>
    Number((await t.svc.deps.events.query<{ n: number }>(`SELECT count(*) AS n FROM ${table} WHERE project_id = ${sqlInt(acme.project.id)}${where}`))[0].n);
  const waitFor = async (what: () => Promise<boolean>, ms = 15_000) => {
    const deadline = Date.now() + ms;
    while (!(await what())) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  it('sends track in batches of at most 500 and everything arrives', async () => {
    const log: Array<{ path: string; records: number; status?: number }> = [];
    const c = new Tally({ token: acme.project.token, host: t.url, flushOnExit: false, fetch: recordingFetch(log) });
    const before = await count('events');
    for (let i = 0; i < 1201; i++) c.track('batched', `b-${i % 37}`, { i, plan: 'pro' });
    await c.shutdown();
    const tracks = log.filter((l) => l.path === '/track');
    assert.deepEqual(tracks.map((l) => l.records), [500, 500, 201]);
    assert.ok(tracks.every((l) => l.status === 200));
    await waitFor(async () => (await count('events')) === before + 1201);
    const rows = await t.svc.deps.events.query<{ n: number }>(`SELECT count(*) AS n FROM events WHERE project_id = ${sqlInt(acme.project.id)} AND event = 'batched' AND distinct_id = 'b-0'`);
    assert.equal(Number(rows[0].n), 33);
  });

  it('engage and alias go to their endpoints; alias after the events queued before it', async () => {
    const log: Array<{ path: string; records: number; status?: number }> = [];
    const c = new Tally({ token: acme.project.token, host: t.url, flushOnExit: false, fetch: recordingFetch(log) });
    c.track('visit', '$device:sdk-1');
    c.engage({ distinct_id: 'sdk-user', $set: { plan: 'pro' } });
    c.alias('$device:sdk-1', 'sdk-user');
    await c.shutdown();
    assert.deepEqual(log.map((l) => [l.path, l.status]), [['/track', 200], ['/engage', 200], ['/alias', 200]]);
    await waitFor(async () => (await count('profiles', ` AND distinct_id = 'sdk-user'`)) > 0);
    // The alias is applied after the profile (a later record of the same batch stream): wait for it too.
    const linked = () => t.svc.deps.db('identity_links').where({ project_id: acme.project.id, distinct_id: '$device:sdk-1' }).first('canonical_id').then((r: any) => r?.canonical_id);
    await waitFor(async () => (await linked()) !== undefined);
    assert.equal(await linked(), 'sdk-user');
  });

  it('retries 429 honouring Retry-After, without losing or duplicating events', async () => {
    const small = await startTestService(backend, { RATE_LIMIT_PER_PROJECT: '1', RATE_LIMIT_WINDOW_MS: '1000' });
    try {
      const org = (await small.admin.post('/admin/orgs', { name: 'rl' })).body;
      const project = (await small.admin.post(`/admin/orgs/${org.id}/projects`, { name: 'rl' })).body;
      const log: Array<{ path: string; records: number; status?: number }> = [];
      const c = new Tally({ token: project.token, host: small.url, flushOnExit: false, batchSize: 2, retry: { baseDelayMs: 1 }, fetch: recordingFetch(log) });
      const started = Date.now();
      for (let i = 0; i < 4; i++) c.track('limited', `u-${i}`);
      await c.shutdown();
      assert.ok(log.some((l) => l.status === 429), JSON.stringify(log));
      assert.ok(Date.now() - started >= 700, 'waited for Retry-After rather than the 1 ms backoff');
      assert.equal(c.stats.sent, 4);
      assert.equal(c.stats.dropped, 0);
      const n = async () => Number((await small.svc.deps.events.query<{ n: number }>(`SELECT count(*) AS n FROM events WHERE project_id = ${sqlInt(project.id)}`))[0].n);
      await waitFor(async () => (await n()) === 4);
    } finally {
      await small.close();
    }
  });

  it('cohort rules end to end: membership from tracked events, identity from /alias', async () => {
    const cohort = await acme.owner.post('/api/cohorts', {
      projectId: acme.project.id, name: 'buyers',
      definition: { op: 'and', criteria: [{ kind: 'behavior', event: 'purchase', op: 'gte', count: 1, windowDays: 30 }] },
    });
    assert.equal(cohort.status, 201, JSON.stringify(cohort.body));
    const flag = await acme.owner.post('/api/flags', {
      projectId: acme.project.id, key: 'buyers-banner', name: 'buyers',
      variants: [{ key: 'gold', rolloutPct: 100, payload: { tier: 'gold' } }],
      rules: [{ rolloutPct: 100, cohortId: cohort.body.id }],
    });
    assert.equal(flag.status, 201, JSON.stringify(flag.body));
    const secret = (await acme.owner.post(`/api/projects/${acme.project.id}/flag-secret`)).body.secret;
    const c = new Tally({ token: acme.project.token, host: t.url, flagSecret: secret, flushOnExit: false });
    await c.ready();
    assert.equal((await c.getFlag('buyers-banner', 'buyer-x')).reason, 'no_match');
    c.track('purchase', 'buyer-x', { amount: 10 });
    c.alias('$device:buyer-phone', 'buyer-x');
    await c.flush();
    await waitFor(async () => (await count('events', ` AND event = 'purchase' AND distinct_id = 'buyer-x'`)) === 1);
    const expected = { enabled: true, variant: 'gold', payload: { tier: 'gold' }, reason: 'rule:0' };
    for (const id of ['buyer-x', '$device:buyer-phone']) {
      const viaSdk = await c.getFlag('buyers-banner', id);
      assert.equal(viaSdk.source, 'remote', 'cohort flags are evaluated remotely');
      const { source: _s, ...plain } = viaSdk;
      assert.deepEqual(plain, expected, id);
      assert.deepEqual((await acme.owner.post(`/api/flags/${flag.body.id}/preview`, { distinctId: id })).body, expected);
    }
    assert.equal((await c.getFlag('buyers-banner', 'someone-else')).reason, 'no_match');
    await c.shutdown();
  });

  it('flushes queued events when the process exits', async () => {
    const before = await count('events', ` AND event = 'on-exit'`);
    const script = `
      import { Tally } from ${JSON.stringify(path.join(ROOT, 'apps/sdk/src/index.ts'))};
      const c = new Tally({ token: ${JSON.stringify(acme.project.token)}, host: ${JSON.stringify(t.url)}, flushIntervalMs: 60000 });
      for (let i = 0; i < 3; i++) c.track('on-exit', 'exit-user-' + i);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, stdio: 'inherit' });
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
    await waitFor(async () => (await count('events', ` AND event = 'on-exit'`)) === before + 3);
  });
});
