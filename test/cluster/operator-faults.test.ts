import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { NS, OPERATOR_USER, startApiProxy, startWorld, waitFor, waitReady, type World } from '../support/operator.js';
import type { RunningOperator } from '../../operator/src/operator.js';

/**
 * Faults while work goes on: watches closed at random moments, history expired (410 on resume),
 * watches gone silent (the watchdog), Kubernetes requests failing (status writes among them: a
 * crash between "create" and "write status"), an API outage, and an operator that dies and is
 * replaced. Afterwards every resource is Ready and the service holds exactly one flag per
 * FeatureFlag: no duplicate, nothing lost, nothing deleted left behind.
 */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

forEachBackend('operator under faults', (backend) => {
  let w: World;
  let proxy: Awaited<ReturnType<typeof startApiProxy>>;
  before(async function () {
    this.timeout(60_000);
    w = await startWorld(backend, { historyLimit: 50 });
    proxy = await startApiProxy(w.svc.url);
  });
  after(async function () {
    this.timeout(30_000);
    await w?.close();
    await proxy?.close();
  });

  it('no duplicate and no lost object through closed, expired and silent watches, failing requests, an API outage and a restart', async function () {
    this.timeout(90_000);
    const restarts: RunningOperator[] = [];
    restarts.push(await w.startOperator({ apiUrl: proxy.url, identity: 'first' }));
    await w.apply('Project', 'shop', { displayName: 'Shop', organizationId: w.orgId });
    const { projectId } = (await waitReady(w, 'Project', 'shop')).status as any;

    // Silent watches first, on their own (closing them would hide the watchdog): resources created
    // meanwhile are only seen once the watchdog has restarted the streams.
    w.fake.hangWatches();
    await w.apply('FeatureFlag', 'during-hang', { projectRef: { name: 'shop' }, key: 'during-hang', name: 'During hang' });
    await sleep(500);
    w.fake.restoreWatches();
    await waitReady(w, 'FeatureFlag', 'during-hang', 'Reconciled', 15_000);

    let faulting = true;
    const injected: string[] = [];
    const faults = (async () => {
      const steps: (() => Promise<void> | void)[] = [
        () => w.fake.closeWatches(),
        () => { w.fake.expireHistory(); w.fake.closeWatches(); },
        () => w.fake.failNext(3, 500, { match: (r) => !r.watch }),
        () => w.fake.failNext(2, 500, { match: (r) => r.method === 'PATCH' && r.path.endsWith('/status') }),
        async () => { proxy.down = true; await sleep(800); proxy.down = false; },
        () => w.fake.failNext(2, 503, { match: (r) => r.watch }),
      ];
      let i = 0;
      while (faulting) {
        const step = steps[i++ % steps.length];
        injected.push(step.toString().slice(0, 40));
        await step();
        await sleep(250);
      }
    })();

    const keys = Array.from({ length: 30 }, (_, i) => `flag-${i}`);
    for (const key of keys) {
      await w.apply('FeatureFlag', key, { projectRef: { name: 'shop' }, key, name: `Flag ${key}`, rules: [{ rolloutPct: 50 }] });
      await sleep(60);
    }
    // The leader dies mid-way (Lease not released) and a new replica takes over.
    await restarts[0].close({ releaseLease: false });
    restarts.push(await w.startOperator({ apiUrl: proxy.url, identity: 'second' }));
    for (const key of keys.slice(0, 10)) await w.patchSpec('FeatureFlag', key, { name: `Renamed ${key}` });
    for (const key of keys.slice(25)) await w.remove('FeatureFlag', key);
    await sleep(4_000);
    faulting = false;
    await faults;

    const live = [...keys.slice(0, 25), 'during-hang'];
    for (const key of live) await waitReady(w, 'FeatureFlag', key, 'Reconciled', 30_000);
    for (const key of keys.slice(25)) await waitFor(`${key} gone`, async () => !(await w.get('FeatureFlag', key)), 30_000);

    const flags = (await w.svc.admin.get(`/api/flags?projectId=${projectId}`)).body as any[];
    const archived = (await w.svc.admin.get(`/api/flags?projectId=${projectId}&archived=1`)).body as any[];
    assert.deepEqual(flags.map((f) => f.key).sort(), [...live].sort(), 'exactly one flag per FeatureFlag, the deleted ones gone');
    assert.deepEqual(archived.filter((f) => f.archived_at !== null).map((f) => f.key), [], 'no archived leftover');
    for (const f of flags) {
      assert.equal(f.managed_by, `FeatureFlag/${NS}/${f.key}`);
      const i = Number(f.key.split('-')[1]);
      if (f.key !== 'during-hang') assert.equal(f.name, i < 10 ? `Renamed ${f.key}` : `Flag ${f.key}`);
    }
    const projects = (await w.svc.admin.get('/api/projects')).body as any[];
    assert.equal(projects.filter((p) => p.managed_by === `Project/${NS}/shop`).length, 1, 'one project');

    // The faults really happened and were survived the way they are meant to be.
    const causes = new Map<string, number>();
    for (const op of w.operators) {
      for (const v of (await op.metrics.watchRestarts.get()).values) causes.set(String(v.labels.cause), (causes.get(String(v.labels.cause)) ?? 0) + v.value);
    }
    for (const cause of ['closed', 'expired', 'silent', 'error']) assert.ok((causes.get(cause) ?? 0) > 0, `watch restarts by cause: ${JSON.stringify([...causes])}`);
    assert.ok(w.fake.requests.some((r) => r.user === OPERATOR_USER && r.status === 500), 'failed requests were injected');
    const tc = await w.tenantConfig();
    assert.deepEqual(tc?.projects.map((p) => p.projectId), [projectId]);
  });
});
