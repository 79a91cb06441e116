import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { drained, ev, ingest } from '../support/ingestion.js';
import { NS, TEST_TIMING, readyOf, startWorld, waitFor, type World } from '../support/operator.js';
import type { AnyResource } from '../../operator/src/kinds.js';

/**
 * The Experiment kind on the fake Kubernetes API (the operator's RBAC from permissions.ts) against
 * a real service, the operator holding OPERATOR_KEY only: an experiment on a FeatureFlag's
 * variants, managed by the resource (hand edits 409); its status follows the results within
 * EXPERIMENT_STATUS_INTERVAL_MS; the boundary between teams; deletion per deletionPolicy.
 */
const OPERATOR_KEY = 'test-operator-key-experiments-0123';
const INTERVAL_MS = 1_000;

forEachBackend('operator: Experiment', (backend) => {
  let w: World;
  let projectId: number;
  let token: string;
  let experimentId: number;
  before(async function () {
    this.timeout(60_000);
    w = await startWorld(backend, { serviceEnv: { OPERATOR_KEY } });
    await w.startOperator({ apiKey: OPERATOR_KEY, timing: { ...TEST_TIMING, experimentStatusIntervalMs: INTERVAL_MS } });
  });
  after(async function () {
    this.timeout(30_000);
    await w?.close();
  });

  const waitIn = (name: string, reason = 'Reconciled', namespace = NS, check: (o: AnyResource) => boolean = () => true) =>
    waitFor(`Experiment ${namespace}/${name} ${reason}`, async () => {
      const o = await w.get('Experiment', name, namespace);
      return readyOf(o)?.reason === reason && o!.status?.observedGeneration === o!.metadata.generation && check(o!) ? o : undefined;
    }, 20_000);
  const st = (o: AnyResource | undefined) => o?.status as any;
  const as = (resource: string) => ({ headers: { 'x-tally-resource': resource } });
  const metrics = [{ id: 'bought', kind: 'conversion', event: 'Purchased' }];

  it('an Experiment on a FeatureFlag with variants becomes Ready with the experiment it manages', async function () {
    this.timeout(40_000);
    await w.apply('Project', 'shop', { displayName: 'Shop', organizationId: w.orgId });
    const p = await waitFor('Project Ready', async () => { const o = await w.get('Project', 'shop'); return readyOf(o)?.reason === 'Reconciled' ? o : undefined; });
    ({ projectId, token } = st(p));
    // Named before its FeatureFlag exists: it waits (FlagNotFound), then follows by itself.
    await w.apply('Experiment', 'checkout-exp', { projectRef: { name: 'shop' }, flagRef: { name: 'checkout' }, key: 'checkout-exp', name: 'New checkout', control: 'control', metrics });
    await waitIn('checkout-exp', 'FlagNotFound');
    await w.apply('FeatureFlag', 'checkout', {
      projectRef: { name: 'shop' }, key: 'checkout', name: 'Checkout', variants: [{ key: 'control', rolloutPct: 50 }, { key: 'treatment', rolloutPct: 50 }], rules: [{ rolloutPct: 100 }],
    });
    const o = await waitIn('checkout-exp');
    experimentId = st(o).experimentId;
    assert.ok(experimentId > 0);
    assert.deepEqual([st(o).projectId, st(o).flagKey, st(o).totalExposures, st(o).decision, st(o).srm.ok], [projectId, 'checkout', 0, 'Inconclusive', true]);
    assert.ok(o.metadata.finalizers?.includes('analytics.tally.dev/finalizer'));
    const e = (await w.svc.admin.get(`/api/experiments/${experimentId}`)).body;
    assert.deepEqual([e.projectId, e.key, e.name, e.flagKey, e.managedBy], [projectId, 'checkout-exp', 'New checkout', 'checkout', `Experiment/${NS}/checkout-exp`]);
  });

  it('hand edits of the managed experiment answer 409; a spec change goes through', async function () {
    this.timeout(30_000);
    const hand = await w.svc.admin.put(`/api/experiments/${experimentId}`, { name: 'Hijacked' });
    assert.deepEqual([hand.status, hand.body.resource], [409, `Experiment/${NS}/checkout-exp`]);
    assert.equal((await w.svc.admin.delete(`/api/experiments/${experimentId}`)).status, 409);
    assert.equal((await w.svc.admin.post(`/api/experiments/${experimentId}/release`, undefined, as(`Experiment/${NS}/other`))).status, 409);
    await w.patchSpec('Experiment', 'checkout-exp', { name: 'Checkout v2' });
    await waitFor('renamed', async () => (await w.svc.admin.get(`/api/experiments/${experimentId}`)).body.name === 'Checkout v2');
  });

  it('its status follows the results after events (re-read every EXPERIMENT_STATUS_INTERVAL_MS) and matches /analysis', async function () {
    this.timeout(60_000);
    const events: unknown[] = [];
    for (let i = 0; i < 40; i++) {
      for (const variant of ['control', 'treatment']) {
        const id = `${variant}-${i}`;
        events.push(ev('$feature_flag_called', id, { $feature_flag: 'checkout', $feature_flag_response: variant }));
        // Control converts 10%, treatment 90%: a clear winner.
        if ((variant === 'control' && i < 4) || (variant === 'treatment' && i < 36)) events.push(ev('Purchased', id));
      }
    }
    const res = await ingest(w.svc, token).post('/track', events);
    assert.equal(res.status, 200, res.text);
    await drained(w.svc);
    const o = await waitIn('checkout-exp', 'Reconciled', NS, (x) => st(x).totalExposures === 80);
    const analysis = (await w.svc.admin.get(`/api/experiments/${experimentId}/analysis`)).body;
    const results = (await w.svc.admin.get(`/api/experiments/${experimentId}/results`)).body;
    assert.deepEqual(st(o).exposures, { control: 40, treatment: 40 });
    assert.deepEqual(st(o).exposures, results.exposures);
    assert.deepEqual(st(o).srm, results.srm);
    assert.deepEqual([st(o).decision, st(o).winner], [analysis.decision, analysis.winner]);
    assert.deepEqual([st(o).decision, st(o).winner], ['Winner', 'treatment']);
    const [control, treatment] = st(o).primary.variants;
    assert.equal(st(o).primary.metricId, 'bought');
    assert.deepEqual([control.key, control.units, control.mean, control.lift], ['control', 40, 0.1, undefined]);
    assert.deepEqual([treatment.key, treatment.units, treatment.mean, treatment.significant], ['treatment', 40, 0.9, true]);
    assert.equal(treatment.chanceToWin, analysis.primary.variants[1].chanceToWin);
    assert.deepEqual(treatment.lift, analysis.primary.variants[1].lift);
  });

  it("the boundary: a team-b Experiment cannot reach Acme's project or flag, through the operator or the API", async function () {
    this.timeout(30_000);
    await w.apply('Project', 'steal', { displayName: 'Steal', organizationId: w.orgId }, 'team-b');
    await w.apply('Experiment', 'steal-exp', { projectRef: { name: 'steal' }, flagKey: 'checkout', key: 'steal-exp', metrics }, 'team-b');
    const o = await waitIn('steal-exp', 'NamespaceNotAllowed', 'team-b');
    assert.equal(readyOf(o)!.status, 'False');
    assert.equal(st(o).experimentId, undefined);
    assert.ok(!o.metadata.finalizers?.length, 'nothing done outside, so no finalizer');
    const keys = ((await w.svc.admin.get(`/api/experiments?projectId=${projectId}`)).body as { key: string; managedBy: string | null }[]);
    assert.deepEqual(keys.filter((e) => e.managedBy?.startsWith('Experiment/team-b/')), []);
    // Straight at the API with the operator key, naming a team-b resource: 403, nothing written.
    const op = w.svc.client(OPERATOR_KEY);
    const create = await op.post('/api/experiments', { projectId, key: 'steal-direct', flagKey: 'checkout', metrics }, as('Experiment/team-b/steal-direct'));
    assert.deepEqual([create.status, create.body.reason], [403, 'NamespaceNotAllowed'], create.text);
    const edit = await op.put(`/api/experiments/${experimentId}`, { name: 'Stolen' }, as('Experiment/team-b/steal-exp'));
    assert.deepEqual([edit.status, edit.body.reason], [403, 'NamespaceNotAllowed'], edit.text);
    assert.equal((await op.delete(`/api/experiments/${experimentId}`, as('Experiment/team-b/steal-exp'))).status, 403);
    assert.equal((await w.svc.admin.get(`/api/experiments/${experimentId}`)).body.name, 'Checkout v2');
    assert.equal((await w.svc.admin.get(`/api/experiments?projectId=${projectId}`)).body.some((e: { key: string }) => e.key === 'steal-direct'), false);
  });

  it('deleting an Experiment deletes its experiment (Delete); with Retain the experiment stays, released', async function () {
    this.timeout(30_000);
    await w.apply('Experiment', 'kept-exp', { projectRef: { name: 'shop' }, flagKey: 'checkout', key: 'kept-exp', metrics, deletionPolicy: 'Retain' });
    const kept = st(await waitIn('kept-exp')).experimentId;
    await w.remove('Experiment', 'checkout-exp');
    await waitFor('Experiment gone', async () => (await w.get('Experiment', 'checkout-exp')) === undefined);
    assert.equal((await w.svc.admin.get(`/api/experiments/${experimentId}`)).status, 404);
    await w.remove('Experiment', 'kept-exp');
    await waitFor('Experiment gone', async () => (await w.get('Experiment', 'kept-exp')) === undefined);
    const e = await w.svc.admin.get(`/api/experiments/${kept}`);
    assert.deepEqual([e.status, e.body.managedBy], [200, null]);
  });
});
