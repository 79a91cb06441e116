import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { TEST_TIMING, readyOf, startApiProxy, startWorld, waitFor, type World } from '../support/operator.js';
import type { AnyResource, KindName } from '../../operator/src/kinds.js';

/**
 * An Organization being deleted goes last: while resources acting for its organisation are being
 * deleted too, it waits (Ready False `Deleting`, naming them), because once the organisation is
 * released the service no longer lets them act for it and they could not let go of what they
 * manage. Here the Experiment's experiments API is out while both are deleted, so the Organization
 * would be done first if it did not wait.
 */
const G = 'analytics.tally.dev';
const V = 'v1';
const OPERATOR_KEY = 'test-operator-key-dependents-0123';
const TEAM = 'team-e';

forEachBackend('operator: an Organization waits for what acts for it', (backend) => {
  let w: World;
  let proxy: Awaited<ReturnType<typeof startApiProxy>>;
  before(async function () {
    this.timeout(60_000);
    w = await startWorld(backend, { serviceEnv: { OPERATOR_KEY } });
    proxy = await startApiProxy(w.svc.url);
    await w.startOperator({ apiKey: OPERATOR_KEY, apiUrl: proxy.url });
  });
  after(async function () {
    this.timeout(30_000);
    await w?.close();
    await proxy?.close();
  });

  const getOrg = async (name: string): Promise<AnyResource | undefined> => {
    try {
      return await w.custom.getClusterCustomObject({ group: G, version: V, plural: 'organizations', name });
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  };
  const readyIn = (kind: KindName, name: string) => waitFor(`${kind} ${TEAM}/${name} Ready`, async () => {
    const o = await w.get(kind, name, TEAM);
    return readyOf(o)?.reason === 'Reconciled' && o!.status?.observedGeneration === o!.metadata.generation ? o : undefined;
  }, 20_000);

  it('deleting an Organization and an Experiment of one of its projects together: the Organization goes after the Experiment', async function () {
    this.timeout(60_000);
    await w.custom.createClusterCustomObject({
      group: G, version: V, plural: 'organizations',
      body: { apiVersion: `${G}/${V}`, kind: 'Organization', metadata: { name: 'acme' }, spec: { displayName: 'Acme', namespaces: [TEAM] } },
    });
    await waitFor('Organization acme Ready', async () => readyOf(await getOrg('acme'))?.reason === 'Reconciled');
    const orgId = ((await getOrg('acme'))!.status as any).organizationId as number;
    await w.apply('Project', 'shop', { displayName: 'Shop', organizationRef: { name: 'acme' } }, TEAM);
    await readyIn('Project', 'shop');
    await w.apply('FeatureFlag', 'checkout', {
      projectRef: { name: 'shop' }, key: 'checkout', name: 'Checkout', variants: [{ key: 'control', rolloutPct: 50 }, { key: 'treatment', rolloutPct: 50 }], rules: [{ rolloutPct: 100 }],
    }, TEAM);
    await w.apply('Experiment', 'exp', {
      projectRef: { name: 'shop' }, flagRef: { name: 'checkout' }, key: 'exp', metrics: [{ id: 'bought', kind: 'conversion', event: 'Purchased' }],
    }, TEAM);
    const experimentId = ((await readyIn('Experiment', 'exp')).status as any).experimentId as number;
    assert.ok(experimentId > 0);

    // The experiments API is out for writes: the Experiment cannot delete its experiment yet.
    proxy.unavailable = (method, url) => url.startsWith('/api/experiments') && method !== 'GET';
    try {
      await w.remove('Experiment', 'exp', TEAM);
      await w.custom.deleteClusterCustomObject({ group: G, version: V, plural: 'organizations', name: 'acme' });
      const waiting = await waitFor('Organization acme waiting for Experiment exp', async () => {
        const o = await getOrg('acme');
        const c = readyOf(o);
        return o?.metadata.deletionTimestamp && c?.reason === 'Deleting' && c.message.includes(`Experiment/${TEAM}/exp`) ? o : undefined;
      }, 15_000);
      assert.ok(waiting.metadata.finalizers?.includes(`${G}/finalizer`));
      assert.equal((await w.svc.admin.get(`/admin/orgs/${orgId}`)).body.managed_by, 'Organization/acme', 'not released while the Experiment is there');
    } finally {
      proxy.unavailable = undefined;
    }

    // The API back: the Experiment deletes its experiment (its default policy), then the Organization releases its organisation.
    await waitFor('Experiment gone', async () => (await w.get('Experiment', 'exp', TEAM)) === undefined, 20_000);
    await waitFor('Organization gone', async () => (await getOrg('acme')) === undefined, 20_000);
    assert.equal((await w.svc.admin.get(`/api/experiments/${experimentId}`)).status, 404, 'the experiment was deleted');
    assert.equal((await w.svc.admin.get(`/admin/orgs/${orgId}`)).body.managed_by ?? null, null, 'the organisation was released');
  });
});
