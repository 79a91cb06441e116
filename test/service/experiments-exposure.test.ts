import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';
import { drained, ingest } from '../support/ingestion.js';
import { sqlInt, sqlString } from '../../apps/server/src/ports/events/index.js';
import { Tally } from '../../apps/sdk/src/index.js';

/**
 * Exposures without extra code (both backends): `/flags/evaluate {exposure: true}` records
 * `$experiment_started` through ingestion, and the SDK sends it the first time it serves a variant
 * to a distinct id (opt-out, bounded memory); an experiment on the flag then counts those units in
 * the variants they were served.
 */
forEachBackend('experiment exposures from /flags/evaluate and the SDK', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let pid: number;

  /** Stored `$experiment_started` events of a distinct id. */
  const exposuresOf = async (distinctId: string) =>
    Number((await t.svc.deps.events.query<{ n: number }>(
      `SELECT count(*) AS n FROM events WHERE project_id = ${sqlInt(pid)} AND event = '$experiment_started' AND distinct_id = ${sqlString(t.svc.deps.events.dialect, distinctId)}`,
    ))[0].n);

  /** Creates the flag `key` (two variants, 50/50) and an open experiment on it. */
  const experimentOn = async (key: string) => {
    const flag = await acme.owner.post('/api/flags', { projectId: pid, key, name: key, variants: [{ key: 'control', rolloutPct: 50 }, { key: 'treatment', rolloutPct: 50 }], rules: [{ rolloutPct: 100 }] });
    assert.equal(flag.status, 201, flag.text);
    const e = await acme.owner.post('/api/experiments', { projectId: pid, key: `${key}-exp`, flagKey: key, metrics: [{ id: 'm', kind: 'conversion', event: 'purchase' }] });
    assert.equal(e.status, 201, e.text);
    return e.body.id as number;
  };
  const exposures = async (id: number) => {
    const r = await acme.owner.get(`/api/experiments/${id}/results`);
    assert.equal(r.status, 200, r.text);
    return r.body.exposures as Record<string, number>;
  };

  before(async function () {
    this.timeout(60_000);
    t = await sharedService(backend);
    acme = await createTenant(t, 'exposure');
    pid = acme.project.id;
  });

  it('/flags/evaluate records an exposure per served variant only when the body asks', async function () {
    this.timeout(60_000);
    const id = await experimentOn('remote-checkout');
    assert.equal((await acme.owner.post('/api/flags', { projectId: pid, key: 'plain-switch', name: 'plain', rules: [{ rolloutPct: 100 }] })).status, 201);
    const flags = ingest(t, acme.project.token);
    const served: Record<string, number> = { control: 0, treatment: 0 };
    for (let i = 0; i < 12; i++) {
      const r = await flags.post('/flags/evaluate', { distinct_id: `remote-${i}`, exposure: true });
      assert.equal(r.status, 200, r.text);
      served[r.body.flags['remote-checkout'].variant]++;
      assert.deepEqual([r.body.flags['plain-switch'].enabled, r.body.flags['plain-switch'].variant], [true, null]);
    }
    const quiet = await flags.post('/flags/evaluate', { distinct_id: 'remote-quiet', flag_keys: ['remote-checkout'] });
    assert.equal(quiet.status, 200, quiet.text);
    await drained(t);
    assert.deepEqual(await exposures(id), served);
    assert.ok(served.control > 0 && served.treatment > 0, JSON.stringify(served));
    // One event per served variant (the plain flag has none) and nothing without `exposure: true`.
    assert.equal(await exposuresOf('remote-0'), 1);
    assert.equal(await exposuresOf('remote-quiet'), 0);
    // A body with exposure of the wrong type is refused like any bad field.
    const bad = await flags.post('/flags/evaluate', { distinct_id: 'remote-bad', exposure: 'yes' });
    assert.equal(bad.status, 400, bad.text);
  });

  it('the SDK sends $experiment_started once per distinct id and variant, locally and remotely evaluated', async function () {
    this.timeout(60_000);
    const id = await experimentOn('sdk-checkout');
    const secret = (await acme.owner.post(`/api/projects/${pid}/flag-secret`)).body.secret;
    const sdk = new Tally({ token: acme.project.token, host: t.url, flagSecret: secret, flushOnExit: false });
    const remoteOnly = new Tally({ token: acme.project.token, host: t.url, flushOnExit: false });
    try {
      await sdk.ready();
      const served: Record<string, number> = { control: 0, treatment: 0 };
      for (let i = 0; i < 10; i++) {
        const client = i % 2 === 0 ? sdk : remoteOnly;
        const first = await client.getFlag('sdk-checkout', `sdk-${i}`);
        assert.equal(first.source, i % 2 === 0 ? 'local' : 'remote');
        served[first.variant!]++;
        // Served again (and through isEnabled): no second event.
        assert.equal((await client.getFlag('sdk-checkout', `sdk-${i}`)).variant, first.variant);
        assert.equal(await client.isEnabled('sdk-checkout', `sdk-${i}`), true);
      }
      await sdk.flush();
      await remoteOnly.flush();
      await drained(t);
      for (let i = 0; i < 10; i++) assert.equal(await exposuresOf(`sdk-${i}`), 1, `sdk-${i}`);
      assert.deepEqual(await exposures(id), served);
    } finally {
      await sdk.shutdown();
      await remoteOnly.shutdown();
    }
  });

  it('experimentExposures: false sends nothing; the remembered set stays within its bound', async function () {
    this.timeout(60_000);
    await experimentOn('bounded-checkout');
    const off = new Tally({ token: acme.project.token, host: t.url, flushOnExit: false, experimentExposures: false });
    const bounded = new Tally({ token: acme.project.token, host: t.url, flushOnExit: false, maxExposuresRemembered: 3 });
    try {
      for (let i = 0; i < 5; i++) assert.ok((await off.getFlag('bounded-checkout', `off-${i}`)).variant);
      assert.equal(off.exposuresRemembered, 0);
      for (let i = 0; i < 8; i++) await bounded.getFlag('bounded-checkout', `b-${i}`);
      assert.equal(bounded.exposuresRemembered, 3);
      // b-0 was forgotten (the oldest): serving it again sends again; b-7 is still remembered.
      await bounded.getFlag('bounded-checkout', 'b-0');
      await bounded.getFlag('bounded-checkout', 'b-7');
      await off.flush();
      await bounded.flush();
      await drained(t);
      for (let i = 0; i < 5; i++) assert.equal(await exposuresOf(`off-${i}`), 0);
      assert.equal(await exposuresOf('b-0'), 2);
      assert.equal(await exposuresOf('b-7'), 1);
    } finally {
      await off.shutdown();
      await bounded.shutdown();
    }
  });
});
