import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { forEachBackend } from '../support/backends.js';
import { NS, POD_NS, readyOf, startWorld, waitFor, waitReady, type World } from '../support/operator.js';

/**
 * The operator end to end: resources on the fake Kubernetes API (RBAC enforced from
 * permissions.ts) → operator → the service's API → tenant config Secret → projected directory →
 * the API's reload → /track, /flags/evaluate and /flags/local-evaluation; then every row of the
 * deletion and conflict rules and the bad-input rules of docs/operator.md.
 */
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const secretValue = (s: { data?: Record<string, string> } | undefined, key = 'secret') => Buffer.from(s?.data?.[key] ?? '', 'base64').toString('utf8');

forEachBackend('operator', (backend) => {
  let w: World;
  before(async function () {
    this.timeout(60_000);
    w = await startWorld(backend);
    await w.startOperator();
  });
  after(async function () {
    this.timeout(30_000);
    await w?.close();
  });

  const status = async (kind: 'Project' | 'FlagSecret' | 'FeatureFlag', name: string) => (await w.get(kind, name))?.status as any;
  const evaluate = async (token: string, key: string, distinctId = 'user-1') =>
    (await w.svc.anon.post('/flags/evaluate', { token, distinct_id: distinctId, flag_keys: [key] })).body?.flags?.[key];

  describe('the whole chain', () => {
    let token: string;
    let projectId: number;

    it('a Project becomes a project of its organisation, with its id and token in status', async () => {
      await w.apply('Project', 'shop', { displayName: 'Shop (web)', organizationId: w.orgId });
      const p = await waitReady(w, 'Project', 'shop');
      ({ projectId, token } = p.status as any);
      assert.ok(projectId > 0 && /^[0-9a-f-]{36}$/.test(token), JSON.stringify(p.status));
      assert.ok(p.metadata.finalizers?.includes('analytics.tally.dev/finalizer'));
      const listed = (await w.svc.admin.get(`/api/projects?managedBy=${encodeURIComponent('Project/team-a/shop')}`)).body;
      assert.deepEqual(listed.map((x: any) => [x.id, x.name, x.org_id, x.managed_by]), [[projectId, 'Shop (web)', w.orgId, 'Project/team-a/shop']]);
      assert.equal((await w.svc.anon.post('/track', { event: 'signup', properties: { token, distinct_id: 'u1' } })).status, 200);
    });

    it('writes the tenant config Secret, which the API pods reload from the projected directory', async () => {
      const tc = await waitFor('tenant config listing shop', async () => {
        const c = await w.tenantConfig();
        return c?.projects.some((p) => p.resource === 'Project/team-a/shop') ? c : undefined;
      });
      assert.equal(tc.version, 1);
      assert.deepEqual(tc.projects.find((p) => p.resource === 'Project/team-a/shop'), {
        projectId, organizationId: w.orgId, name: 'Shop (web)', token, flagSecretSha256: null, resource: 'Project/team-a/shop',
      });
      await w.projection.settled();
      const health = await waitFor('API reload of the tenant config', async () => {
        const h = (await w.svc.anon.get('/health')).body;
        return h?.tenantConfig?.generation === tc.generation ? h : undefined;
      }, 15_000);
      assert.equal(health.tenantConfig.projects, tc.projects.length);
    });

    it('a FlagSecret mints an owned Secret whose uuid opens /flags/local-evaluation', async () => {
      await w.apply('FlagSecret', 'shop-flags', { projectRef: { name: 'shop' } });
      const fs = await waitReady(w, 'FlagSecret', 'shop-flags');
      assert.deepEqual([(fs.status as any).projectId, (fs.status as any).secretName], [projectId, 'shop-flags-flag-secret']);
      const secret = await w.core.readNamespacedSecret({ namespace: NS, name: 'shop-flags-flag-secret' });
      assert.equal(secret.metadata?.ownerReferences?.[0]?.uid, fs.metadata.uid);
      const value = secretValue(secret as any);
      assert.match(value, /^[0-9a-f-]{36}$/);
      const local = await w.svc.anon.get('/flags/local-evaluation', { token: value });
      assert.equal(local.status, 200, local.text);
      await waitFor('flagSecretSha256 in the tenant config', async () =>
        (await w.tenantConfig())?.projects.find((p) => p.projectId === projectId)?.flagSecretSha256 === sha256(value));
    });

    it('a FeatureFlag becomes a flag; a change of its spec is the new answer of /flags/evaluate', async () => {
      await w.apply('FeatureFlag', 'new-checkout', {
        projectRef: { name: 'shop' }, key: 'new-checkout', name: 'New checkout', rules: [{ rolloutPct: 100 }],
      });
      const f = await waitReady(w, 'FeatureFlag', 'new-checkout');
      assert.equal((f.status as any).projectId, projectId);
      assert.deepEqual(await evaluate(token, 'new-checkout'), { enabled: true, variant: null, payload: null, reason: 'rule:0' });
      await w.patchSpec('FeatureFlag', 'new-checkout', { rules: [{ rolloutPct: 0 }] });
      await waitFor('the flag off for user-1', async () => (await evaluate(token, 'new-checkout'))?.reason === 'no_match');
      await w.patchSpec('FeatureFlag', 'new-checkout', { active: false });
      await waitFor('the flag inactive', async () => (await evaluate(token, 'new-checkout'))?.reason === 'disabled');
      const flag = (await w.svc.admin.get(`/api/flags/${(f.status as any).flagId}`)).body;
      assert.equal(flag.managed_by, 'FeatureFlag/team-a/new-checkout');
      const audit = (await w.svc.admin.get(`/api/flags/${flag.id}/events`)).body;
      assert.ok(audit.length >= 3, `one audit row per change: ${JSON.stringify(audit.map((e: any) => e.action))}`);
    });

    it('a managed flag refuses writes from anyone but its resource with the 409 of the contract', async () => {
      const { flagId } = await status('FeatureFlag', 'new-checkout');
      const put = await w.svc.admin.put(`/api/flags/${flagId}`, { name: 'edited by hand' });
      assert.equal(put.status, 409);
      assert.deepEqual(put.body, { error: 'managed by resource', resource: 'FeatureFlag/team-a/new-checkout' });
    });
  });

  describe('deletion policies', () => {
    it('FeatureFlag Delete (default): the flag is archived, then deleted', async () => {
      await w.apply('FeatureFlag', 'gone-flag', { projectRef: { name: 'shop' }, key: 'gone-flag', name: 'Gone' });
      const { flagId } = (await waitReady(w, 'FeatureFlag', 'gone-flag')).status as any;
      await w.remove('FeatureFlag', 'gone-flag');
      await waitFor('the resource gone', async () => !(await w.get('FeatureFlag', 'gone-flag')));
      assert.equal((await w.svc.admin.get(`/api/flags/${flagId}`)).status, 404);
    });

    it('FeatureFlag Retain: the flag stays, released (writable by hand again)', async () => {
      await w.apply('FeatureFlag', 'kept-flag', { projectRef: { name: 'shop' }, key: 'kept-flag', name: 'Kept', deletionPolicy: 'Retain' });
      const { flagId } = (await waitReady(w, 'FeatureFlag', 'kept-flag')).status as any;
      await w.remove('FeatureFlag', 'kept-flag');
      await waitFor('the resource gone', async () => !(await w.get('FeatureFlag', 'kept-flag')));
      const flag = (await w.svc.admin.get(`/api/flags/${flagId}`)).body;
      assert.equal(flag.archived_at, null);
      assert.equal(flag.managed_by ?? null, null);
      assert.equal((await w.svc.admin.put(`/api/flags/${flagId}`, { name: 'edited by hand' })).status, 200);
    });

    it('Project Retain: the project stays, released, and leaves the tenant config', async () => {
      await w.apply('Project', 'kept-project', { displayName: 'Kept', organizationId: w.orgId });
      const { projectId } = (await waitReady(w, 'Project', 'kept-project')).status as any;
      await waitFor('in the tenant config', async () => (await w.tenantConfig())?.projects.some((p) => p.projectId === projectId));
      await w.remove('Project', 'kept-project');
      await waitFor('the resource gone', async () => !(await w.get('Project', 'kept-project')));
      const p = (await w.svc.admin.get(`/api/projects/${projectId}`));
      assert.equal(p.status, 200);
      assert.equal(p.body.managed_by ?? null, null);
      await waitFor('out of the tenant config', async () => !(await w.tenantConfig())?.projects.some((x) => x.projectId === projectId));
    });

    it('Project Delete: the project is deleted and leaves the tenant config', async () => {
      await w.apply('Project', 'doomed', { displayName: 'Doomed', organizationId: w.orgId, deletionPolicy: 'Delete' });
      const { projectId } = (await waitReady(w, 'Project', 'doomed')).status as any;
      await w.remove('Project', 'doomed');
      await waitFor('the resource gone', async () => !(await w.get('Project', 'doomed')));
      assert.equal((await w.svc.admin.get(`/api/projects/${projectId}`)).status, 404);
      await waitFor('out of the tenant config', async () => !(await w.tenantConfig())?.projects.some((x) => x.projectId === projectId));
    });

    it('FlagSecret: deleting it revokes the flag secret (and its minted Secret goes with it)', async () => {
      await w.apply('Project', 'revoked', { displayName: 'Revoked', organizationId: w.orgId });
      const { projectId } = (await waitReady(w, 'Project', 'revoked')).status as any;
      await w.apply('FlagSecret', 'revoked-flags', { projectRef: { name: 'revoked' } });
      await waitReady(w, 'FlagSecret', 'revoked-flags');
      const value = secretValue(await w.core.readNamespacedSecret({ namespace: NS, name: 'revoked-flags-flag-secret' }) as any);
      assert.equal((await w.svc.anon.get('/flags/local-evaluation', { token: value })).status, 200);
      await w.remove('FlagSecret', 'revoked-flags');
      await waitFor('the resource gone', async () => !(await w.get('FlagSecret', 'revoked-flags')));
      await waitFor('the minted Secret collected', async () => !w.fake.api.store.get('/secrets', NS, 'revoked-flags-flag-secret'));
      await waitFor('no flag secret in the tenant config', async () =>
        (await w.tenantConfig())?.projects.find((p) => p.projectId === projectId)?.flagSecretSha256 === null);
      // API pods answer from the tenant config: refused once they have reloaded it (within 10 s).
      await waitFor('the old secret refused', async () => (await w.svc.anon.get('/flags/local-evaluation', { token: value })).status === 401, 15_000);
      assert.equal((await w.svc.admin.get('/api/projects')).body.find((p: any) => p.id === projectId).has_flag_secret, false);
    });
  });

  describe('conflicts and rotation', () => {
    it('a second FlagSecret for one Project is Conflict, and takes over when the first goes', async () => {
      await w.apply('Project', 'contested', { displayName: 'Contested', organizationId: w.orgId });
      await waitReady(w, 'Project', 'contested');
      await w.apply('FlagSecret', 'first', { projectRef: { name: 'contested' } });
      await waitReady(w, 'FlagSecret', 'first');
      await w.apply('FlagSecret', 'second', { projectRef: { name: 'contested' } });
      const second = await waitReady(w, 'FlagSecret', 'second', 'Conflict');
      assert.match(readyOf(second)!.message, /first/);
      assert.equal(readyOf(second)!.status, 'False');
      await w.remove('FlagSecret', 'first');
      await waitReady(w, 'FlagSecret', 'second');
      const value = secretValue(await w.core.readNamespacedSecret({ namespace: NS, name: 'second-flag-secret' }) as any);
      await waitFor('the second secret in effect', async () => (await w.svc.anon.get('/flags/local-evaluation', { token: value })).status === 200);
    });

    it('changing the Secret a FlagSecret refers to rotates the flag secret', async () => {
      await w.apply('Project', 'rotating', { displayName: 'Rotating', organizationId: w.orgId });
      const { projectId } = (await waitReady(w, 'Project', 'rotating')).status as any;
      const v1 = '0b7a3c1e-9a64-4d4c-8f7e-2c1d9e5b6a41';
      const v2 = '7d3f4b2a-1c5e-4e8f-9a6b-3c2d1e0f9a8b';
      await w.core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'my-flag-secret' }, stringData: { value: v1 + '\n' } } });
      await w.apply('FlagSecret', 'rotating-flags', { projectRef: { name: 'rotating' }, secretRef: { name: 'my-flag-secret', key: 'value' } });
      await waitReady(w, 'FlagSecret', 'rotating-flags');
      assert.equal((await w.svc.anon.get('/flags/local-evaluation', { token: v1 })).status, 200);
      await w.core.replaceNamespacedSecret({ namespace: NS, name: 'my-flag-secret', body: { metadata: { name: 'my-flag-secret' }, stringData: { value: v2 } } });
      await waitFor('the new hash in the tenant config', async () =>
        (await w.tenantConfig())?.projects.find((p) => p.projectId === projectId)?.flagSecretSha256 === sha256(v2));
      await waitFor('the new secret in effect', async () => (await w.svc.anon.get('/flags/local-evaluation', { token: v2 })).status === 200, 15_000);
      await waitFor('the old secret refused', async () => (await w.svc.anon.get('/flags/local-evaluation', { token: v1 })).status === 401, 15_000);
    });

    it('two FeatureFlags with one key in one project: the second is Conflict with the API message', async () => {
      await w.apply('FeatureFlag', 'dup-a', { projectRef: { name: 'shop' }, key: 'dup', name: 'A' });
      await waitReady(w, 'FeatureFlag', 'dup-a');
      await w.apply('FeatureFlag', 'dup-b', { projectRef: { name: 'shop' }, key: 'dup', name: 'B' });
      const b = await waitReady(w, 'FeatureFlag', 'dup-b', 'Conflict');
      assert.match(readyOf(b)!.message, /already exists/);
      const events = await w.core.listNamespacedEvent({ namespace: NS });
      assert.ok(events.items.some((e) => e.involvedObject?.name === 'dup-b' && e.reason === 'Conflict' && e.type === 'Warning'), 'a Warning event');
    });
  });

  describe('bad input', () => {
    it('what the CRD can refuse is refused at admission', async () => {
      await assert.rejects(
        w.apply('FeatureFlag', 'too-much', { projectRef: { name: 'shop' }, key: 'too-much', name: 'x', rules: [{ rolloutPct: 101 }] }),
        (err: any) => err.code === 422,
      );
    });

    it('what only the API knows is Invalid with its message, and Ready once fixed', async () => {
      // The CRD checks the flag's own consistency (CEL); whether a cohort belongs to the project only the API knows.
      await w.apply('FeatureFlag', 'bad-cohort', {
        projectRef: { name: 'shop' }, key: 'bad-cohort', name: 'Bad',
        rules: [{ rolloutPct: 100, cohortId: 987654 }],
      });
      const bad = await waitReady(w, 'FeatureFlag', 'bad-cohort', 'Invalid');
      assert.match(readyOf(bad)!.message, /cohort 987654 is not a cohort of this project/);
      await w.patchSpec('FeatureFlag', 'bad-cohort', { rules: [{ rolloutPct: 100 }] });
      await waitReady(w, 'FeatureFlag', 'bad-cohort');
    });

    it('a missing Project waits with ProjectNotFound and reconciles by itself once it appears', async () => {
      await w.apply('FeatureFlag', 'early', { projectRef: { name: 'later' }, key: 'early', name: 'Early' });
      await waitReady(w, 'FeatureFlag', 'early', 'ProjectNotFound');
      await w.apply('Project', 'later', { displayName: 'Later', organizationId: w.orgId });
      const f = await waitReady(w, 'FeatureFlag', 'early');
      assert.equal((f.status as any).projectId, (await status('Project', 'later')).projectId);
    });

    it('an organisation id that no Organization manages (unknown, or made by hand) is NamespaceNotAllowed, saying to adopt it', async () => {
      await w.apply('Project', 'orphan', { displayName: 'Orphan', organizationId: 987654 });
      const p = await waitReady(w, 'Project', 'orphan', 'NamespaceNotAllowed');
      assert.equal(p.status?.conditions?.length, 1);
      assert.match(readyOf(p)!.message, /not managed by an Organization resource.*adopts it with an Organization/);
      assert.equal((p.status as any).projectId, undefined);
    });

    it('status is written only when it changes', async () => {
      const before = await w.get('FeatureFlag', 'new-checkout');
      const writes = () => w.fake.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith('/featureflags/new-checkout/status')).length;
      const n = writes();
      // Reconciling again (as a resync does) finds nothing to change.
      w.operators[0].controller!.queue.add('FeatureFlag/team-a/new-checkout');
      await w.operators[0].controller!.queue.idle();
      assert.equal(writes(), n);
      assert.equal((await w.get('FeatureFlag', 'new-checkout'))!.status?.conditions?.[0].lastTransitionTime, before!.status?.conditions?.[0].lastTransitionTime);
    });
  });

  describe('afterwards', () => it('the operator used only the verbs permissions.ts grants (RBAC enforced: no 403)', () => {
    const refused = w.fake.requests.filter((r) => r.status === 403);
    assert.deepEqual(refused.map((r) => `${r.method} ${r.path}`), []);
    assert.ok(w.fake.requests.some((r) => r.user !== 'admin' && r.path.includes(`/namespaces/${POD_NS}/leases`)));
  }));
});
