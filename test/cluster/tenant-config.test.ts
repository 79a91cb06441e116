import assert from 'node:assert/strict';
import { mkdtemp, readdir, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { writeAtomically } from '../support/kube/index.js';
import { statementsDuring } from '../support/queries.js';
import { ingest } from '../support/ingestion.js';
import { sha256Hex } from '../../apps/server/src/auth/credentials.js';
import { TenantConfigWatcher } from '../../apps/server/src/tenants/watcher.js';
import { registry } from '../../apps/server/src/metrics/registry.js';
import type { Logger } from '../../apps/server/src/http/errors.js';

/**
 * The tenant config as API pods read it: TENANT_CONFIG_PATH is a directory kubelet projects the
 * operator's Secret into (tests write it exactly as kubelet's AtomicWriter does: a timestamped
 * directory, `..data` swapped by renaming `..data_tmp`, `tenants.json` a symlink into `..data`).
 */

interface Entry { projectId: number; organizationId: number; name: string; token: string; flagSecretSha256: string | null; resource: string }
const file = (generation: number, projects: Entry[]) => ({ version: 1, generation, projects });
const write = (dir: string, content: unknown) =>
  writeAtomically(dir, { 'tenants.json': Buffer.from(typeof content === 'string' ? content : JSON.stringify(content)) });

const quiet: Logger & { errors: string[] } = { errors: [], info() {}, error(msg, meta) { this.errors.push(`${msg} ${JSON.stringify(meta)}`); } };
const errorsCounted = async () => (await registry.getSingleMetric('tally_tenant_config_errors_total')!.get()).values[0]?.value ?? 0;

async function until(what: string, check: () => boolean, ms = 10_000): Promise<number> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > ms) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - start;
}

const entry = (projectId: number, token: string, secret: string | null = null): Entry => ({
  projectId, organizationId: 1, name: `p${projectId}`, token, flagSecretSha256: secret ? sha256Hex(secret) : null, resource: `Project/team/p${projectId}`,
});

describe('tenant config watcher (kubelet Secret volume layout)', () => {
  let base: string;
  const watchers: TenantConfigWatcher[] = [];
  before(async () => { base = await mkdtemp(join(tmpdir(), 'tenant-config-')); });
  after(async () => {
    for (const w of watchers) w.stop();
    await rm(base, { recursive: true, force: true });
  });
  const start = async (dir: string, pollMs = 2000) => {
    const w = await new TenantConfigWatcher(dir, quiet, pollMs).start();
    watchers.push(w);
    return w;
  };

  it('writes the layout kubelet writes (sanity check of the test helper)', async () => {
    const dir = join(base, 'layout');
    await write(dir, file(1, []));
    await write(dir, file(2, []));
    const entries = (await readdir(dir)).sort();
    assert.equal(entries.length, 3, entries.join(','));
    assert.deepEqual(entries.filter((e) => !e.startsWith('..')), ['tenants.json']);
    assert.match(await readlink(join(dir, '..data')), /^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d+$/);
    assert.equal(await readlink(join(dir, 'tenants.json')), '..data/tenants.json');
  });

  it('a missing directory is an empty config; once it appears (no watch possible before) the poll applies it', async () => {
    const dir = join(base, 'late');
    const w = await start(dir, 300);
    assert.deepEqual([w.config.generation, w.config.projects], [0, 0]);
    await write(dir, file(4, [entry(10, 'late-token')]));
    await until('generation 4', () => w.config.generation === 4);
    assert.equal(w.projectByToken('late-token')?.id, 10);
  });

  it('applies each new generation swapped in by ..data rename well within 10 s, and resolves from memory', async () => {
    const dir = join(base, 'swap');
    await write(dir, file(1, [entry(1, 'tok-1', 'secret-1')]));
    const w = await start(dir);
    assert.deepEqual([w.config.generation, w.config.projects], [1, 1]);
    assert.deepEqual(w.projectByToken('tok-1'), { id: 1, org_id: 1, name: 'p1', token: 'tok-1' });
    assert.equal(w.projectByFlagSecretSha256(sha256Hex('secret-1'))?.id, 1);
    const waits: number[] = [];
    for (let g = 2; g <= 6; g++) {
      await write(dir, file(g, [entry(1, 'tok-1', `secret-${g}`), entry(g, `tok-${g}`)]));
      waits.push(await until(`generation ${g}`, () => w.config.generation === g));
      assert.equal(w.projectByFlagSecretSha256(sha256Hex(`secret-${g - 1}`)), undefined, 'the rotated secret is gone');
      assert.equal(w.projectByFlagSecretSha256(sha256Hex(`secret-${g}`))?.id, 1);
      assert.equal(w.projectByToken(`tok-${g - 1}`), g - 1 === 1 ? w.projectByToken('tok-1') : undefined, 'a project dropped from the list is gone');
    }
    assert.ok(Math.max(...waits) < 10_000, `waits ${waits}`);
  });

  it('keeps the last good config on a bad file (counted once per bad content, logged) and recovers on the next good one', async () => {
    const dir = join(base, 'bad');
    await write(dir, file(7, [entry(7, 'good-token')]));
    const w = await start(dir, 200);
    const bad: Array<[string, unknown, RegExp]> = [
      ['truncated JSON', '{"version": 1, "generation": 8, "projects": [', /invalid JSON/],
      ['wrong version', { version: 2, generation: 8, projects: [] }, /version/],
      ['bad hash', file(8, [{ ...entry(8, 't'), flagSecretSha256: 'xyz' }]), /projects\.0\.flagSecretSha256/],
      ['token listed twice', file(8, [entry(8, 'dup'), entry(9, 'dup')]), /projects\.1\.token: listed twice/],
      ['not an object', '[]', /expected object/],
      ['empty file', '', /invalid JSON/],
    ];
    for (const [what, content, message] of bad) {
      const before = await errorsCounted();
      await write(dir, content);
      await until(`${what} refused`, () => w.lastError !== undefined && message.test(w.lastError));
      await new Promise((r) => setTimeout(r, 500)); // a few polls: the same bad content is not counted again
      assert.equal(await errorsCounted(), before + 1, what);
      assert.deepEqual([w.config.generation, w.projectByToken('good-token')?.id], [7, 7], what);
    }
    assert.ok(quiet.errors.some((e) => e.includes('tenant config refused')));
    await write(dir, file(9, [entry(9, 'next-token')]));
    await until('generation 9', () => w.config.generation === 9);
    assert.equal(w.lastError, undefined);
    assert.equal(w.projectByToken('good-token'), undefined);
  });
});

forEachBackend('tenant config in the API', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let globex: Tenant;
  let dir: string;
  const memoryToken = randomUUID();
  const secret = randomUUID();

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tenant-api-'));
    t = await startTestService(backend, { TENANT_CONFIG_PATH: dir, TENANT_CONFIG_POLL_MS: '500' });
    acme = await createTenant(t, 'TenantAcme');
    globex = await createTenant(t, 'TenantGlobex');
  });
  after(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Metadata statements (their SQL) while `fn` runs. */
  const queriesDuring = async (fn: () => Promise<void>) => (await statementsDuring(t.svc.deps.db, fn)).map((q) => q.sql);
  const readsProjects = (sql: string[]) => sql.filter((s) => /\bprojects\b/.test(s) || /\bmachine_tokens\b|\busers\b|\bmemberships\b/.test(s));

  it('starts with an empty config (no file yet) and shows it in /health', async () => {
    const health = await t.anon.get('/health');
    assert.deepEqual(health.body.tenantConfig, { generation: 0, projects: 0 });
  });

  it('applies the operator’s file, shows generation in /health and /metrics', async () => {
    await write(dir, file(42, [
      { ...entry(acme.project.id, acme.project.token, secret), organizationId: acme.org.id },
      { ...entry(acme.project.id, memoryToken), organizationId: acme.org.id },
    ]));
    await until('generation 42', () => t.svc.deps.tenants!.config.generation === 42);
    const health = await t.anon.get('/health');
    assert.deepEqual(health.body.tenantConfig, { generation: 42, projects: 2 });
    const metrics = (await t.anon.get('/metrics')).text;
    assert.match(metrics, /^tally_tenant_config_generation 42$/m);
    assert.match(metrics, /^tally_tenant_config_errors_total \d+$/m);
  });

  it('/track, /engage, /alias, /flags/evaluate and /flags/local-evaluation of listed projects read no project (nor any credential table) from the database', async () => {
    const flag = await t.client(acme.tokens.member).post(`/api/flags?projectId=${acme.project.id}`, { key: 'tenant-flag', name: 'T', active: true });
    assert.equal(flag.status, 201, flag.text);
    let answers: number[] = [];
    const sql = await queriesDuring(async () => {
      const c = ingest(t, acme.project.token);
      answers = [
        (await c.post('/track', [{ event: 'a', properties: { distinct_id: 'u1' } }, { event: 'b', properties: { distinct_id: 'u2', token: memoryToken } }])).status,
        (await c.post('/engage', [{ $distinct_id: 'u1', $set: { plan: 'pro' } }])).status,
        (await c.post('/alias', { alias: 'a1', distinct_id: 'u1' })).status,
        (await t.anon.post('/flags/evaluate', { distinct_id: 'u1', token: memoryToken })).status,
        (await t.anon.post('/flags/evaluate', { distinct_id: 'u1' }, { headers: { 'x-service-token': acme.project.token } })).status,
        (await t.anon.get('/flags/local-evaluation', { token: secret })).status,
      ];
    });
    assert.deepEqual(answers, [200, 200, 200, 200, 200, 200]);
    assert.ok(sql.length > 0, 'the listener sees the statements these routes do run (usage, flags)');
    assert.deepEqual(readsProjects(sql), []);
    // The memory-only token exists nowhere in the database: only the tenant config can have resolved it.
    assert.equal(await t.svc.deps.db('projects').where({ token: memoryToken }).first(), undefined);
    // And the secret was never set through the API: the database has no flag secret for acme.
    assert.equal((await t.svc.deps.db('projects').where({ id: acme.project.id }).first()).flag_secret_hash, null);
  });

  it('a project not listed still resolves from the database (and that read is seen by the same listener)', async () => {
    const sql = await queriesDuring(async () => {
      const r = await ingest(t, globex.project.token).post('/track', { event: 'x', properties: { distinct_id: 'g1' } });
      assert.equal(r.status, 200);
    });
    assert.ok(readsProjects(sql).length > 0, sql.join('\n'));
  });

  it('a bad file never takes the pod down: the last good config keeps serving', async () => {
    await write(dir, '{not json');
    await until('refused', () => t.svc.deps.tenants!.lastError !== undefined);
    const health = await t.anon.get('/health');
    assert.deepEqual([health.status, health.body.tenantConfig], [200, { generation: 42, projects: 2 }]);
    const r = await t.anon.post('/flags/evaluate', { distinct_id: 'u1', token: memoryToken });
    assert.equal(r.status, 200);
  });

  it('a new generation dropping a project takes its memory-only token and secret away within 10 s', async () => {
    await write(dir, file(43, [{ ...entry(acme.project.id, acme.project.token), organizationId: acme.org.id }]));
    await until('generation 43', () => t.svc.deps.tenants!.config.generation === 43);
    const r = await t.anon.post('/flags/evaluate', { distinct_id: 'u1', token: memoryToken });
    assert.deepEqual([r.status, r.body], [401, { status: 0, error: 'invalid token' }]);
    const local = await t.anon.get('/flags/local-evaluation', { token: secret });
    assert.deepEqual([local.status, local.body], [401, { status: 0, error: 'invalid flag secret' }]);
  });
});
