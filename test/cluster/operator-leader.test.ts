import assert from 'node:assert/strict';
import { configuredBackends, forEachBackend } from '../support/backends.js';
import { DEFAULT_TIMING } from '../../operator/src/config.js';
import { POD_NS, startWorld, waitFor, waitReady, type World } from '../support/operator.js';

/** Two replicas on one Lease: one acts, the other waits and takes over when the leader dies or stops. */
const metric = async (url: string, name: string) => {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' ') || l.startsWith(name + '{'));
  return line ? Number(line.split(' ').pop()) : undefined;
};
const lease = (w: World) => w.fake.api.store.get('coordination.k8s.io/leases', POD_NS, 'tally-operator') as any;

forEachBackend('operator leader election', (backend) => {
  let w: World;
  before(async function () {
    this.timeout(60_000);
    w = await startWorld(backend);
    await w.apply('Project', 'shop', { displayName: 'Shop', organizationId: w.orgId });
  });
  after(async function () {
    this.timeout(30_000);
    await w?.close();
  });

  it('one of two replicas leads; the other waits, ready, without touching anything', async function () {
    this.timeout(20_000);
    const a = await w.startOperator({ identity: 'replica-a' });
    await waitFor('replica-a leading', () => a.isLeader);
    const b = await w.startOperator({ identity: 'replica-b' });
    await waitReady(w, 'Project', 'shop');
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(b.isLeader, false);
    assert.equal(lease(w).spec.holderIdentity, 'replica-a');
    assert.equal(await metric(a.url, 'tally_operator_leader'), 1);
    assert.equal(await metric(b.url, 'tally_operator_leader'), 0);
    assert.equal((await fetch(`${b.url}/readyz`)).status, 200);
    assert.equal((await fetch(`${a.url}/readyz`)).status, 200);
    assert.equal((await fetch(`${a.url}/healthz`)).status, 200);
    // The standby lists and watches nothing: only Lease calls under its name... the fake sees one user for both,
    // so count the informers' lists instead: one set, from the leader.
    const lists = w.fake.requests.filter((r) => r.verb === 'list' && r.path.endsWith('/projects') && r.user !== 'admin');
    assert.equal(lists.length, 1, lists.map((r) => r.path).join(', '));
  });

  it('when the leader dies (Lease not released) the standby takes over within the lease duration', async function () {
    this.timeout(20_000);
    const [a, b] = w.operators;
    const died = Date.now();
    await a.close({ releaseLease: false });
    await waitFor('replica-b leading', () => b.isLeader, 10_000);
    const takeover = Date.now() - died;
    assert.ok(takeover <= 2_000 + 1_500, `takeover ${takeover} ms (lease 2 s + retry period)`);
    assert.equal(lease(w).spec.holderIdentity, 'replica-b');
    assert.ok(lease(w).spec.leaseTransitions >= 1);
    await w.apply('FeatureFlag', 'after-handover', { projectRef: { name: 'shop' }, key: 'after-handover', name: 'After' });
    await waitReady(w, 'FeatureFlag', 'after-handover');
  });

  it('a leader that stops releases the Lease, and a standby takes it at its next try', async function () {
    this.timeout(20_000);
    const c = await w.startOperator({ identity: 'replica-c' });
    const b = w.operators[1];
    const stopped = Date.now();
    await b.close();
    await waitFor('replica-c leading', () => c.isLeader, 10_000);
    assert.ok(Date.now() - stopped < 1_500, `takeover after release ${Date.now() - stopped} ms`);
  });
});

/** The real timings once (Kubernetes-side behaviour: the service backend does not matter). */
describe('operator leader election with the default timings', () => {
  let w: World;
  after(async function () {
    this.timeout(30_000);
    await w?.close();
  });

  it('a dead leader (15 s lease) is replaced within 30 s', async function () {
    this.timeout(60_000);
    w = await startWorld(configuredBackends()[0]);
    const d1 = await w.startOperator({ identity: 'default-1', timing: DEFAULT_TIMING });
    await waitFor('default-1 leading', () => d1.isLeader, 20_000);
    const d2 = await w.startOperator({ identity: 'default-2', timing: DEFAULT_TIMING });
    await new Promise((r) => setTimeout(r, 2_500)); // d2 has seen the Lease held
    const died = Date.now();
    await d1.close({ releaseLease: false });
    await waitFor('default-2 leading', () => d2.isLeader, 30_000);
    const takeover = Date.now() - died;
    assert.ok(takeover < 30_000 && takeover > 10_000, `takeover ${takeover} ms (lease 15 s, retry 2 s)`);
  });
});
