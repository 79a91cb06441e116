import assert from 'node:assert/strict';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { forEachBackend } from '../support/backends.js';
import {
  OPERATOR_USER, POD_NS, readyOf, startApiProxy, startWorld, useKeyedOperatorWorld, waitFor, type World,
} from '../support/operator.js';
import { ApiError, TallyApi } from '../../operator/src/tally-api.js';
import type { AnyResource, KindName } from '../../operator/src/kinds.js';

/**
 * The boundary between teams, attacked from a team's own namespace. Acme owns team-a, Bravo owns
 * team-b; Acme's project is made through the API (unmanaged, as the console makes it) with events,
 * a flag and a flag secret. Everything Bravo can write in team-b (an adopt-id annotation, an
 * organisation id, a forged status, a deletion policy) must leave Acme's project, its flags, its
 * flag secret and its events as they were, and the tenant config must never carry Acme's token.
 */
const G = 'analytics.tally.dev';
const V = 'v1';
const OPERATOR_KEY = 'test-operator-key-boundary-0123456789';
const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const ADOPT = 'analytics.tally.dev/adopt-id';
const PLURAL: Record<KindName, string> = { Project: 'projects', FlagSecret: 'flagsecrets', FeatureFlag: 'featureflags', ApiToken: 'apitokens', Experiment: 'experiments', Organization: 'organizations' };
const today = () => new Date().toISOString().slice(0, 10);

forEachBackend('operator boundary between teams', (backend) => {
  const w = useKeyedOperatorWorld(backend, OPERATOR_KEY);

  const applyOrg = (name: string, spec: Record<string, unknown>, annotations?: Record<string, string>) =>
    w().custom.createClusterCustomObject({ group: G, version: V, plural: 'organizations', body: { apiVersion: `${G}/${V}`, kind: 'Organization', metadata: { name, annotations }, spec } });
  const getOrg = async (name: string): Promise<AnyResource | undefined> => w().custom.getClusterCustomObject({ group: G, version: V, plural: 'organizations', name });
  const applyIn = (namespace: string, kind: KindName, name: string, spec: Record<string, unknown>, annotations?: Record<string, string>) =>
    w().custom.createNamespacedCustomObject({
      group: G, version: V, namespace, plural: PLURAL[kind], body: { apiVersion: `${G}/${V}`, kind, metadata: { name, namespace, annotations }, spec },
    });
  /** What a tenant with `patch` on `<kind>/status` (or anyone else) could write. */
  const forgeStatus = (namespace: string, kind: KindName, name: string, status: Record<string, unknown>) =>
    w().custom.patchNamespacedCustomObjectStatus({ group: G, version: V, namespace, plural: PLURAL[kind], name, body: { status } }, MERGE);
  const waitIn = (namespace: string, kind: KindName, name: string, reason = 'Reconciled') => waitFor(`${kind} ${namespace}/${name} ${reason}`, async () => {
    const o = await w().get(kind, name, namespace);
    return readyOf(o)?.reason === reason && o!.status?.observedGeneration === o!.metadata.generation ? o : undefined;
  });
  const gone = (namespace: string, kind: KindName, name: string) => waitFor(`${kind} ${namespace}/${name} gone`, async () => (await w().get(kind, name, namespace)) === undefined);
  const managedProjects = async (resource: string) => (await w().svc.admin.get(`/api/projects?managedBy=${encodeURIComponent(resource)}`)).body as any[];
  const countEvents = async (projectId: number) => {
    const r = await w().svc.admin.post('/api/query/segmentation', { projectId, event: 'signup', from: today(), to: today(), unit: 'day', type: 'total' });
    assert.equal(r.status, 200, r.text);
    return (r.body.series as any[]).flatMap((s) => s.data).reduce((n: number, d: any) => n + d.value, 0);
  };
  const flagsOf = async (projectId: number) => ((await w().svc.admin.get(`/api/flags?projectId=${projectId}`)).body as any[]).map((f) => [f.id, f.key, f.managed_by ?? null, f.archived_at]);

  let acmeId: number;
  let bravoId: number;
  let acme: { id: number; token: string };
  const acmeSecret = '5d1c7f0e-2b9a-4e61-8c3d-7a0b9e4f2c16';
  let acmeFlags: unknown[];
  let acmeEvents: number;

  /** Acme's project is as it was: unmanaged, editable by its owners, its flags, flag secret and events untouched. */
  const acmeUntouched = async () => {
    const p = await w().svc.admin.get(`/api/projects/${acme.id}`);
    assert.equal(p.status, 200, p.text);
    assert.deepEqual([p.body.managed_by ?? null, p.body.token, p.body.org_id], [null, acme.token, acmeId]);
    assert.deepEqual(await flagsOf(acme.id), acmeFlags);
    assert.equal((await w().svc.anon.get('/flags/local-evaluation', { token: acmeSecret })).status, 200, 'the flag secret still works');
    assert.equal(await countEvents(acme.id), acmeEvents);
    const edit = await w().svc.admin.patch(`/api/projects/${acme.id}`, { name: 'Acme web' });
    assert.equal(edit.status, 200, `its owners still edit it: ${edit.text}`);
  };
  /** Acme's token is in no tenant config entry (no resource manages Acme's project). */
  const acmeTokenNotInTenantConfig = async () => {
    const tc = await w().tenantConfig();
    assert.ok(!JSON.stringify(tc ?? {}).includes(acme.token), 'the tenant config never carries Acme\'s token');
    assert.ok(!(tc?.projects ?? []).some((e: any) => e.projectId === acme.id));
  };

  before(async function () {
    this.timeout(60_000);
    await applyOrg('acme', { displayName: 'Acme', namespaces: ['team-a'] });
    await applyOrg('bravo', { displayName: 'Bravo', namespaces: ['team-b'] });
    const ready = async (name: string) => waitFor(`Organization ${name}`, async () => {
      const o = await getOrg(name);
      return readyOf(o)?.reason === 'Reconciled' ? (o!.status as any).organizationId as number : undefined;
    });
    acmeId = await ready('acme');
    bravoId = await ready('bravo');
    // The Organizations' namespaces reach the service, which enforces the same boundary.
    assert.deepEqual((await w().svc.admin.get(`/admin/orgs/${acmeId}`)).body.namespaces, ['team-a']);
    const made = await w().svc.admin.post(`/admin/orgs/${acmeId}/projects`, { name: 'Acme web' });
    assert.equal(made.status, 201, made.text);
    acme = made.body;
    const flag = await w().svc.admin.post('/api/flags', { projectId: acme.id, key: 'acme-checkout', name: 'Acme checkout' });
    assert.equal(flag.status, 201, flag.text);
    assert.equal((await w().svc.admin.put(`/api/projects/${acme.id}/flag-secret`, { secret: acmeSecret })).status < 300, true);
    for (let i = 0; i < 3; i++) assert.equal((await w().svc.anon.post('/track', { event: 'signup', properties: { token: acme.token, distinct_id: `a${i}` } })).status, 200);
    acmeEvents = await waitFor('Acme\'s 3 events stored', async () => ((await countEvents(acme.id)) === 3 ? 3 : undefined), 20_000);
    acmeFlags = await flagsOf(acme.id);
    assert.equal(acmeFlags.length, 1);
  });

  it('an Organization sends its namespaces to the service and follows changes of them', async () => {
    await w().custom.patchClusterCustomObject({ group: G, version: V, plural: 'organizations', name: 'bravo', body: { spec: { namespaces: ['team-b', 'team-b2'] } } }, MERGE);
    await waitFor('bravo namespaces in the service', async () => JSON.stringify((await w().svc.admin.get(`/admin/orgs/${bravoId}`)).body.namespaces?.slice().sort()) === '["team-b","team-b2"]');
    await w().custom.patchClusterCustomObject({ group: G, version: V, plural: 'organizations', name: 'bravo', body: { spec: { namespaces: ['team-b'] } } }, MERGE);
    await waitFor('bravo namespaces back', async () => JSON.stringify((await w().svc.admin.get(`/admin/orgs/${bravoId}`)).body.namespaces) === '["team-b"]');
  });

  it("takeover by annotation: a team-b Project adopting Acme's project is AdoptionRefused; nothing of Acme's changes, not even by its flags, flag secret or deletion", async () => {
    await applyIn('team-b', 'Project', 'grab', { displayName: 'Grab', organizationRef: { name: 'bravo' }, deletionPolicy: 'Delete' }, { [ADOPT]: String(acme.id) });
    const grab = await waitIn('team-b', 'Project', 'grab', 'AdoptionRefused');
    assert.equal(readyOf(grab)!.status, 'False');
    assert.match(readyOf(grab)!.message, new RegExp(`project ${acme.id} is not a project of organization ${bravoId}`));
    assert.deepEqual([(grab.status as any).projectId, (grab.status as any).token, (grab.status as any).organizationId], [undefined, undefined, undefined]);
    assert.ok(!grab.metadata.finalizers?.length, 'refused before anything was done outside, so no finalizer');
    assert.deepEqual(await managedProjects('Project/team-b/grab'), []);
    const events = await w().core.listNamespacedEvent({ namespace: 'team-b' });
    assert.ok(events.items.some((e) => e.involvedObject?.name === 'grab' && e.reason === 'AdoptionRefused' && e.type === 'Warning'));

    await applyIn('team-b', 'FeatureFlag', 'grab-flag', { projectRef: { name: 'grab' }, key: 'grab-flag', name: 'Grab' });
    await applyIn('team-b', 'FlagSecret', 'grab-secret', { projectRef: { name: 'grab' } });
    await waitIn('team-b', 'FeatureFlag', 'grab-flag', 'ProjectNotFound');
    await waitIn('team-b', 'FlagSecret', 'grab-secret', 'ProjectNotFound');
    await acmeUntouched();
    await acmeTokenNotInTenantConfig();

    await w().remove('Project', 'grab', 'team-b');
    await gone('team-b', 'Project', 'grab');
    await acmeUntouched();
  });

  it('adoption inside its own organisation and namespace still works (the migration path)', async () => {
    const legacy = (await w().svc.admin.post(`/admin/orgs/${bravoId}/projects`, { name: 'Bravo legacy' })).body;
    await applyIn('team-b', 'Project', 'legacy', { displayName: 'Bravo legacy', organizationRef: { name: 'bravo' } }, { [ADOPT]: String(legacy.id) });
    const p = await waitIn('team-b', 'Project', 'legacy');
    assert.deepEqual([(p.status as any).projectId, (p.status as any).token], [legacy.id, legacy.token]);
    // From a namespace its organisation does not list, the same annotation gets nothing.
    await applyIn('team-a', 'Project', 'cross', { displayName: 'Cross', organizationRef: { name: 'bravo' } }, { [ADOPT]: String(legacy.id) });
    await waitIn('team-a', 'Project', 'cross', 'NamespaceNotAllowed');
  });

  it('organizationId is open no more: an organisation nobody manages (made by hand) or another team\'s is NamespaceNotAllowed, and nothing is created', async () => {
    const hand = (await w().svc.admin.post('/admin/orgs', { name: 'By hand' })).body;
    await applyIn('team-b', 'Project', 'by-hand', { displayName: 'By hand', organizationId: hand.id });
    await applyIn('team-b', 'Project', 'by-id', { displayName: 'By id', organizationId: acmeId });
    const byHand = await waitIn('team-b', 'Project', 'by-hand', 'NamespaceNotAllowed');
    assert.match(readyOf(byHand)!.message, /not managed by an Organization resource.*adopts it with an Organization/);
    await waitIn('team-b', 'Project', 'by-id', 'NamespaceNotAllowed');
    assert.deepEqual(await managedProjects('Project/team-b/by-hand'), []);
    assert.deepEqual(await managedProjects('Project/team-b/by-id'), []);
    assert.deepEqual((await w().svc.admin.get(`/admin/orgs/${hand.id}`)).body.managed_by ?? null, null);
  });

  it('a forged status is rewritten within one reconcile; the tenant config and FeatureFlags never follow it; deletion acts only on what the service records', async () => {
    await applyIn('team-b', 'Project', 'own', { displayName: 'Own', organizationRef: { name: 'bravo' }, deletionPolicy: 'Delete' });
    const own = await waitIn('team-b', 'Project', 'own');
    const mine = { projectId: (own.status as any).projectId, token: (own.status as any).token, organizationId: bravoId };
    assert.equal((own.status as any).organizationId, bravoId);
    await waitFor('own in the tenant config', async () => (await w().tenantConfig())?.projects.some((e: any) => e.resource === 'Project/team-b/own'));

    await forgeStatus('team-b', 'Project', 'own', { projectId: acme.id, token: acme.token, organizationId: acmeId });
    // No resync within this test (resyncMs is minutes): the status change itself brings the reconcile.
    const restored = await waitFor('the forged status rewritten', async () => {
      const tc = await w().tenantConfig();
      assert.ok(!JSON.stringify(tc ?? {}).includes(acme.token), 'the forged token never reaches the tenant config');
      const s = (await w().get('Project', 'own', 'team-b'))?.status as any;
      return s?.projectId === mine.projectId && s.token === mine.token && s.organizationId === bravoId ? s : undefined;
    }, 10_000);
    assert.ok(restored);
    const entry = (await w().tenantConfig())!.projects.find((e: any) => e.resource === 'Project/team-b/own');
    assert.deepEqual([entry.projectId, entry.token, entry.organizationId], [mine.projectId, mine.token, bravoId]);

    // A FeatureFlag and a FlagSecret applied while the Project's status claims Acme's project write to Bravo's.
    await forgeStatus('team-b', 'Project', 'own', { projectId: acme.id, token: acme.token });
    await applyIn('team-b', 'FeatureFlag', 'own-flag', { projectRef: { name: 'own' }, key: 'own-flag', name: 'Own' });
    await applyIn('team-b', 'FlagSecret', 'own-secret', { projectRef: { name: 'own' } });
    const ff = await waitIn('team-b', 'FeatureFlag', 'own-flag');
    assert.equal((ff.status as any).projectId, mine.projectId);
    const fs = await waitIn('team-b', 'FlagSecret', 'own-secret');
    assert.equal((fs.status as any).projectId, mine.projectId);
    await acmeUntouched();

    // Forged status on the FeatureFlag and FlagSecret naming Acme's flag and project, then deleted.
    const acmeFlagId = (acmeFlags[0] as unknown[])[0] as number;
    await forgeStatus('team-b', 'FeatureFlag', 'own-flag', { projectId: acme.id, flagId: acmeFlagId });
    await forgeStatus('team-b', 'FlagSecret', 'own-secret', { projectId: acme.id });
    await w().remove('FeatureFlag', 'own-flag', 'team-b');
    await w().remove('FlagSecret', 'own-secret', 'team-b');
    await gone('team-b', 'FeatureFlag', 'own-flag');
    await gone('team-b', 'FlagSecret', 'own-secret');
    assert.deepEqual((await flagsOf(mine.projectId)).filter((f) => f[1] === 'own-flag'), [], 'its own flag was deleted');

    // deletionPolicy Delete with a status naming Acme's project deletes Bravo's own project only.
    await forgeStatus('team-b', 'Project', 'own', { projectId: acme.id, token: acme.token, organizationId: acmeId });
    await w().remove('Project', 'own', 'team-b');
    await gone('team-b', 'Project', 'own');
    assert.equal((await w().svc.admin.get(`/api/projects/${mine.projectId}`)).status, 404, 'its own project deleted');
    await acmeUntouched();
    await acmeTokenNotInTenantConfig();
  });

  it('in its own namespace the operator reads only the tenant config Secret, by name', () => {
    const own = w().fake.requests.filter((r) => r.user === OPERATOR_USER && r.path.startsWith(`/api/v1/namespaces/${POD_NS}/secrets`));
    assert.ok(own.length > 0);
    for (const r of own) {
      const byName = r.path === `/api/v1/namespaces/${POD_NS}/secrets/tally-tenant-config`
        || (r.path === `/api/v1/namespaces/${POD_NS}/secrets` && (r.method === 'POST' || decodeURIComponent(r.query).includes('fieldSelector=metadata.name=tally-tenant-config')));
      assert.ok(byName, `${r.method} ${r.path}?${r.query}`);
    }
  });

  it('a restart during an API outage keeps every tenant config entry; the next reconcile confirms them', async function () {
    this.timeout(40_000);
    await applyIn('team-b', 'Project', 'steady', { displayName: 'Steady', organizationRef: { name: 'bravo' } });
    await waitIn('team-b', 'Project', 'steady');
    await waitFor('steady in the tenant config', async () => (await w().tenantConfig())?.projects.some((e: any) => e.resource === 'Project/team-b/steady'));
    await w().operators[0].controller!.queue.idle();
    const before = await w().tenantConfig();
    await Promise.all(w().operators.splice(0).map((o) => o.close()));
    const proxy = await startApiProxy(w().svc.url);
    try {
      proxy.down = true;
      const op = await w().startOperator({ apiKey: OPERATOR_KEY, apiUrl: proxy.url });
      await waitIn('team-b', 'Project', 'steady', 'ApiUnavailable');
      await new Promise((r) => setTimeout(r, 1_500));
      assert.deepEqual((await w().tenantConfig())?.projects, before!.projects, 'no entry dropped while the API is down');
      const steady = (await w().get('Project', 'steady', 'team-b'))!.status as any;
      assert.ok(steady.projectId && steady.token, 'the status keeps the last known project');
      proxy.down = false;
      await waitIn('team-b', 'Project', 'steady');
      await op.controller!.queue.idle();
      assert.deepEqual((await w().tenantConfig())?.projects, before!.projects);
    } finally {
      await Promise.all(w().operators.splice(0).map((o) => o.close()));
      await proxy.close();
      await w().startOperator({ apiKey: OPERATOR_KEY });
    }
  });

  // Last: it needs the service's own check on its adopt route; were that missing, the call would take Acme's project.
  it("the service's own refusal (403 with a boundary reason) is a refusal, not an outage", async () => {
    const api = new TallyApi(w().svc.url, OPERATOR_KEY, 5_000);
    const err = await api.adoptProject(acme.id, 'Project/team-b/direct').then(() => undefined, (e) => e);
    assert.ok(err instanceof ApiError, String(err));
    assert.deepEqual([err.kind, err.status], ['refused', 403]);
    assert.ok(['AdoptionRefused', 'NamespaceNotAllowed'].includes((err.body as any).reason), JSON.stringify(err.body));
    await acmeUntouched();
  });
});

forEachBackend('operator boundary: TENANCY_ALLOW_UNMANAGED_ORGS', (backend) => {
  let w: World;
  before(async function () {
    this.timeout(60_000);
    w = await startWorld(backend, { serviceEnv: { OPERATOR_KEY, TENANCY_ALLOW_UNMANAGED_ORGS: 'true' } });
    await w.startOperator({ apiKey: OPERATOR_KEY, allowUnmanagedOrgs: true });
  });
  after(async function () {
    this.timeout(30_000);
    await w?.close();
  });

  it('restores the old behaviour: an organisation nobody manages is reachable by id from any namespace', async () => {
    const hand = (await w.svc.admin.post('/admin/orgs', { name: 'By hand' })).body;
    await w.apply('Project', 'migrating', { displayName: 'Migrating', organizationId: hand.id }, 'team-z');
    const p = await waitFor('Project team-z/migrating Ready', async () => {
      const o = await w.get('Project', 'migrating', 'team-z');
      return readyOf(o)?.reason === 'Reconciled' ? o : undefined;
    });
    assert.equal((p.status as any).organizationId, hand.id);
    const [project] = (await w.svc.admin.get(`/api/projects?managedBy=${encodeURIComponent('Project/team-z/migrating')}`)).body;
    assert.equal(project.org_id, hand.id);
    // An organisation an Organization manages keeps its boundary even so.
    await w.apply('Project', 'not-listed', { displayName: 'Not listed', organizationId: w.orgId }, 'team-z');
    await waitFor('NamespaceNotAllowed', async () => readyOf(await w.get('Project', 'not-listed', 'team-z'))?.reason === 'NamespaceNotAllowed');
  });
});
