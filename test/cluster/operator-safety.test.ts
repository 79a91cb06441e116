import assert from 'node:assert/strict';
import { ApiextensionsV1Api } from '@kubernetes/client-node';
import { configuredBackends, forEachBackend } from '../support/backends.js';
import {
  NS, POD_NS, TEST_TIMING, readyOf, startWorld, useKeyedOperatorWorld, waitFor, waitReady, type World,
} from '../support/operator.js';
import { ApiError, TallyApi } from '../../operator/src/tally-api.js';
import { apiFailure } from '../../operator/src/reconcile/context.js';

/**
 * Production safety of the operator: removing the CRDs never deletes a tenant's data, an
 * Organization without `groups` leaves an adopted organisation's mappings alone, the service's
 * NotManaged refusal is a condition (not an outage), every Kubernetes call has a timeout, and a
 * leader whose Lease renewal hangs steps down before another replica could take the Lease.
 */
const G = 'analytics.tally.dev';
const V = 'v1';
const OPERATOR_KEY = 'test-operator-key-safety-0123456789';
const CRD_GROUP = 'apiextensions.k8s.io';

const metric = async (url: string, name: string) => {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' ') || l.startsWith(name + '{'));
  return line ? Number(line.split(' ').pop()) : undefined;
};

forEachBackend('operator safety', (backend) => {
  const w = useKeyedOperatorWorld(backend, OPERATOR_KEY);
  const applyOrg = (name: string, spec: Record<string, unknown>, annotations?: Record<string, string>) =>
    w().custom.createClusterCustomObject({ group: G, version: V, plural: 'organizations', body: { apiVersion: `${G}/${V}`, kind: 'Organization', metadata: { name, annotations }, spec } });
  const orgReady = (name: string) => waitFor(`Organization ${name} Ready`, async () => {
    const o = await w().custom.getClusterCustomObject({ group: G, version: V, plural: 'organizations', name });
    return readyOf(o)?.reason === 'Reconciled' && o.status?.observedGeneration === o.metadata.generation ? o : undefined;
  });
  const groupsOf = async (id: number) => ((await w().svc.admin.get(`/admin/orgs/${id}/groups`)).body as any[]).map((g) => [g.name, g.role]).sort();

  it('an Organization without groups leaves an adopted organisation\'s group mappings alone; an empty list clears them', async function () {
    this.timeout(30_000);
    const org = (await w().svc.admin.post('/admin/orgs', { name: 'Grouped' })).body;
    const put = await w().svc.admin.put(`/admin/orgs/${org.id}/groups`, { groups: [{ name: 'grouped-eng', role: 'member' }] });
    assert.equal(put.status, 200, put.text);
    await applyOrg('grouped', { displayName: 'Grouped', namespaces: ['team-g'] }, { 'analytics.tally.dev/adopt-id': String(org.id) });
    const ready = await orgReady('grouped');
    assert.equal((ready.status as any).organizationId, org.id);
    await w().operators[0].controller!.queue.idle();
    assert.deepEqual(await groupsOf(org.id), [['grouped-eng', 'member']]);
    // An empty list is "no mappings".
    await w().custom.patchClusterCustomObject({ group: G, version: V, plural: 'organizations', name: 'grouped', body: [{ op: 'add', path: '/spec/groups', value: [] }] });
    await waitFor('mappings cleared', async () => (await groupsOf(org.id)).length === 0);
  });

  it('the service\'s 403 NotManaged is Ready False NotManaged, waiting for a change (no retry)', async () => {
    // An organisation no Organization manages (made by hand): the operator key may not write to it
    // for an Organization, and the service says so.
    const hand = (await w().svc.admin.post('/admin/orgs', { name: 'By hand' })).body;
    const api = new TallyApi(w().svc.url, OPERATOR_KEY, 5_000);
    const err = await api.updateOrg(hand.id, { name: 'taken over' }, 'Organization/someone-else').then(() => undefined, (e) => e);
    assert.ok(err instanceof ApiError, String(err));
    assert.deepEqual([err.kind, err.status, (err.body as any).reason], ['refused', 403, 'NotManaged'], JSON.stringify(err.body));
    const outcome = apiFailure(err, 'organization of Organization/someone-else');
    assert.equal(outcome.ready?.status, 'False');
    assert.equal(outcome.ready?.reason, 'NotManaged');
    assert.match(outcome.ready!.message, /organization of Organization\/someone-else: /);
    assert.equal(outcome.retry, undefined);
    assert.equal((await w().svc.admin.get(`/admin/orgs/${hand.id}`)).body.name, 'By hand');
  });

  // Last: it removes the CRDs of this world.
  it('deleting the CRDs releases the projects, flags and organisations of Delete resources, and deletes none', async function () {
    this.timeout(60_000);
    const doomedOrg = (await applyOrg('doomed', { displayName: 'Doomed', namespaces: ['team-d'], deletionPolicy: 'Delete' }));
    assert.ok(doomedOrg);
    const orgStatus = (await orgReady('doomed')).status as any;
    await w().apply('Project', 'gone-shop', { displayName: 'Gone shop', organizationId: w().orgId, deletionPolicy: 'Delete' });
    const project = (await waitReady(w(), 'Project', 'gone-shop')).status as any;
    await w().apply('FeatureFlag', 'kept-by-default', { projectRef: { name: 'gone-shop' }, key: 'kept-by-default', name: 'Default policy' });
    await w().apply('FeatureFlag', 'kept-delete', { projectRef: { name: 'gone-shop' }, key: 'kept-delete', name: 'Delete policy', deletionPolicy: 'Delete' });
    await w().apply('FeatureFlag', 'deleted-normally', { projectRef: { name: 'gone-shop' }, key: 'deleted-normally', name: 'Deleted' });
    const flagIds: number[] = [];
    for (const name of ['kept-by-default', 'kept-delete', 'deleted-normally']) flagIds.push(((await waitReady(w(), 'FeatureFlag', name)).status as any).flagId);

    // Outside a CRD deletion, Delete deletes (so the assertions below can fail).
    await w().remove('FeatureFlag', 'deleted-normally');
    await waitFor('flag deleted', async () => (await w().svc.admin.get(`/api/flags/${flagIds[2]}`)).status === 404);

    for (const plural of ['featureflags', 'projects', 'organizations']) {
      await w().fake.kubeConfig().makeApiClient(ApiextensionsV1Api).deleteCustomResourceDefinition({ name: `${plural}.${G}` });
    }
    await waitFor('the three CRDs gone', () => {
      const left = ['featureflags', 'projects', 'organizations'].flatMap((plural) => w().fake.storedList(G, plural));
      const crds = ['featureflags', 'projects', 'organizations'].filter((plural) => w().fake.stored(CRD_GROUP, 'customresourcedefinitions', undefined, `${plural}.${G}`));
      if (crds.length === 0) return true;
      // What still holds a CRD, for the failure message.
      throw new Error(left.map((o) => `${o.kind}/${o.metadata.name}: ${JSON.stringify(readyOf(o as never))}`).join('; ') || crds.join(', '));
    }, 30_000);

    for (const id of flagIds.slice(0, 2)) {
      const f = await w().svc.admin.get(`/api/flags/${id}`);
      assert.equal(f.status, 200, `flag ${id}: ${f.text}`);
      assert.equal(f.body.archived_at, null, `flag ${id} archived`);
      assert.equal(f.body.managed_by ?? null, null, `flag ${id} released`);
    }
    const p = await w().svc.admin.get(`/api/projects/${project.projectId}`);
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.managed_by ?? null, null);
    const o = await w().svc.admin.get(`/admin/orgs/${orgStatus.organizationId}`);
    assert.equal(o.status, 200, o.text);
    assert.equal(o.body.managed_by ?? null, null);
    // Why, where `kubectl describe` and `kubectl get events` show it.
    const events = await w().core.listNamespacedEvent({ namespace: NS });
    const why = events.items.filter((e) => e.reason === 'CRDBeingDeleted' && e.type === 'Warning').map((e) => e.involvedObject?.name).sort();
    assert.deepEqual(why, ['gone-shop', 'kept-by-default', 'kept-delete']);
    const orgEvents = await w().core.listNamespacedEvent({ namespace: POD_NS });
    assert.ok(orgEvents.items.some((e) => e.reason === 'CRDBeingDeleted' && e.involvedObject?.name === 'doomed'), 'Event on Organization doomed');
    assert.match(events.items.find((e) => e.reason === 'CRDBeingDeleted')!.message!, /featureflags\.analytics\.tally\.dev|projects\.analytics\.tally\.dev/);
  });
});

/** Kubernetes-side behaviour (the service backend does not matter): one backend. */
describe('operator timeouts on Kubernetes calls and a hung Lease renewal', () => {
  let w: World;
  before(async function () {
    this.timeout(60_000);
    w = await startWorld(configuredBackends()[0]);
  });
  after(async function () {
    this.timeout(30_000);
    await w?.close();
  });

  it('a Kubernetes call that gets no answer is abandoned after KUBE_REQUEST_TIMEOUT_MS and tried again', async function () {
    this.timeout(30_000);
    const op = await w.startOperator({ identity: 'timeouts', timing: { ...TEST_TIMING, kubeRequestTimeoutMs: 300 } });
    await waitFor('leading', () => op.isLeader);
    const statusPatches = () => w.fake.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith('/projects/hung/status'));
    const restore = w.fake.hangRequests((r) => r.method === 'PATCH' && r.path.endsWith('/projects/hung/status'));
    try {
      await w.apply('Project', 'hung', { displayName: 'Hung', organizationId: w.orgId });
      // Without a timeout the first PATCH would hold its worker for good: here it is sent again.
      await waitFor('the status PATCH sent again after its timeout', () => statusPatches().length >= 2, 10_000);
    } finally {
      restore();
    }
    await waitReady(w, 'Project', 'hung');
    await op.close();
    w.operators.splice(w.operators.indexOf(op), 1);
  });

  it('a leader whose Lease renewal hangs steps down within the renew deadline, before the Lease could expire', async function () {
    this.timeout(30_000);
    const a = await w.startOperator({ identity: 'hangs' });
    await waitFor('hangs leading', () => a.isLeader, 10_000);
    assert.equal(await metric(a.url, 'tally_operator_leader'), 1);
    const lease = () => w.fake.api.store.get('coordination.k8s.io/leases', POD_NS, 'tally-operator') as any;
    const restore = w.fake.hangRequests((r) => r.method === 'PUT' && r.path.includes('/leases/'));
    try {
      await waitFor('hangs stepped down', () => !a.isLeader, 10_000);
      const steppedDown = Date.now();
      const lastRenewal = new Date(lease().spec.renewTime).getTime();
      assert.equal(lease().spec.holderIdentity, 'hangs');
      // Another replica may take the Lease once it has not changed for leaseDuration (2 s here).
      assert.ok(steppedDown - lastRenewal < TEST_TIMING.leaseDurationMs, `stepped down ${steppedDown - lastRenewal} ms after its last renewal`);
      assert.equal(await metric(a.url, 'tally_operator_leader'), 0);
      assert.equal(a.controller, undefined);
      assert.ok(w.fake.requests.some((r) => r.method === 'PUT' && r.path.includes('/leases/') && r.status === -1), 'a renewal hung');
    } finally {
      restore();
    }
    // Once the API server answers again it holds the Lease again (its own record).
    await waitFor('hangs leading again', () => a.isLeader, 10_000);
    assert.equal(await metric(a.url, 'tally_operator_leader'), 1);
  });
});
