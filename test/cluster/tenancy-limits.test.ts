import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { writeAtomically } from '../support/kube/index.js';
import { ev, ingest } from '../support/ingestion.js';

/**
 * Per-tenant limits applied by a running API: a project's rate limit and an organisation's quota
 * written into the tenant config later reach ingestion within 10 s (from memory), and a project
 * outside the config takes its database value (PATCH by an admin) through the token cache.
 */
forEachBackend('tenancy: per-project rate limits and quotas', (backend) => {
  let t: TestService;
  let dir: string;
  let listed: Tenant;
  let plain: Tenant;
  const write = (content: unknown) => writeAtomically(dir, { 'tenants.json': Buffer.from(JSON.stringify(content)) });
  const entry = (x: Tenant, extra: Record<string, unknown> = {}) => ({
    projectId: x.project.id, organizationId: x.org.id, name: x.project.name, token: x.project.token, flagSecretSha256: null,
    resource: `Project/team/${x.project.id}`, ...extra,
  });

  before(async function () {
    this.timeout(60_000);
    dir = await mkdtemp(join(tmpdir(), 'tenancy-limits-'));
    t = await startTestService(backend, { TENANT_CONFIG_PATH: dir, TENANT_CONFIG_POLL_MS: '2000' });
    listed = await createTenant(t, 'listed');
    plain = await createTenant(t, 'plain');
    await write({ version: 1, generation: 1, projects: [entry(listed)] });
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Sends /track requests until one is refused; the statuses. */
  const burst = async (token: string, n: number) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await ingest(t, token).post('/track', [ev('e', `u${i}`)])).status);
    return out;
  };

  it('a rate limit written into the tenant config later applies within 10 s (429 after the limit)', async function () {
    this.timeout(30_000);
    assert.deepEqual(await burst(listed.project.token, 5), [200, 200, 200, 200, 200], 'the default limit first');
    const written = Date.now();
    await write({ version: 1, generation: 2, projects: [entry(listed, { rateLimit: { requestsPer10Seconds: 3 }, retentionDays: 30 })] });
    let statuses: number[] = [];
    while (Date.now() - written < 10_000) {
      statuses = await burst(listed.project.token, 4);
      if (statuses.includes(429)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const took = Date.now() - written;
    assert.ok(statuses.includes(429), `no 429 within 10 s: ${statuses}`);
    assert.ok(took < 10_000, `took ${took} ms`);
    const refused = await ingest(t, listed.project.token).post('/track', [ev('e', 'late')]);
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    // Another project keeps the default.
    assert.deepEqual(await burst(plain.project.token, 5), [200, 200, 200, 200, 200]);
  });

  it("a listed organisation's quota comes from the config (the database has none)", async function () {
    this.timeout(30_000);
    const month = new Date().toISOString().slice(0, 7);
    const used = (await t.admin.get(`/admin/usage?month=${month}`)).body.find((u: { org_id: number }) => u.org_id === listed.org.id).events;
    assert.equal((await t.admin.get(`/admin/orgs/${listed.org.id}`)).body.monthly_event_quota, null);
    await write({
      version: 1, generation: 3, projects: [entry(listed)],
      organizations: [{ organizationId: listed.org.id, name: listed.org.name, monthlyEventQuota: used + 2, resource: 'Organization/listed' }],
    });
    const start = Date.now();
    let status = 0;
    while (Date.now() - start < 10_000) {
      // Windows of the previous limit may still count: 429 for the rate limit is not the quota's.
      const res = await ingest(t, listed.project.token).post('/track', [ev('q', 'q1'), ev('q', 'q2'), ev('q', 'q3')]);
      status = res.status;
      if (res.status === 429 && res.body.error === 'monthly event quota exceeded') break;
      assert.notEqual(res.status, 200, 'three events over a quota of two more must not pass');
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(status, 429);
    const two = await ingest(t, listed.project.token).post('/track', [ev('q', 'q1'), ev('q', 'q2')]);
    assert.equal(two.status, 200, two.text);
  });

  it("a project outside the config: its database rateLimit (PATCH by an admin) applies through the token cache", async function () {
    this.timeout(30_000);
    const admin = t.client(plain.tokens.admin);
    const set = await admin.patch(`/api/projects/${plain.project.id}`, { rateLimit: { requestsPer10Seconds: 2 } });
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(await burst(plain.project.token, 3), [200, 200, 429]);
    await admin.patch(`/api/projects/${plain.project.id}`, { rateLimit: null });
    assert.equal((await ingest(t, plain.project.token).post('/track', [ev('e', 'back')])).status, 200, 'null: the default limit again');
  });

  it('a config with bad limits is refused whole and the last good one stays', async () => {
    await write({ version: 1, generation: 4, projects: [entry(listed, { rateLimit: { requestsPer10Seconds: 0 } })] });
    const start = Date.now();
    while (!t.svc.deps.tenants!.lastError && Date.now() - start < 10_000) await new Promise((r) => setTimeout(r, 50));
    assert.match(t.svc.deps.tenants!.lastError ?? '', /projects\.0\.rateLimit\.requestsPer10Seconds/);
    assert.equal(t.svc.deps.tenants!.config.generation, 3);
  });
});
