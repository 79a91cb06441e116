import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { POD_NS, OPERATOR_USER, startWorld, waitFor, waitReady, type World } from '../support/operator.js';

/** The tenant config Secret: written only when its content changes; never beyond the size limit. */
forEachBackend('operator tenant config', (backend) => {
  let w: World;
  before(async function () {
    this.timeout(60_000);
    w = await startWorld(backend);
    // The config (with the world's platform Organization) is about 310 bytes with one project, 460
    // with two: the limit admits one.
    await w.startOperator({ tenantConfigMaxBytes: 400 });
  });
  after(async function () {
    this.timeout(30_000);
    await w?.close();
  });

  const writes = () => w.fake.requests.filter((r) => r.user === OPERATOR_USER && ['POST', 'PUT'].includes(r.method)
    && r.path.includes(`/namespaces/${POD_NS}/secrets`)).length;

  it('is rewritten when a Project changes, and not for changes that leave its content alone', async function () {
    this.timeout(20_000);
    await w.apply('Project', 'one', { displayName: 'One', organizationId: w.orgId });
    await waitReady(w, 'Project', 'one');
    const first = await waitFor('one listed', async () => { const c = await w.tenantConfig(); return c?.projects.length === 1 ? c : undefined; });
    const n = writes();
    await w.apply('FeatureFlag', 'f', { projectRef: { name: 'one' }, key: 'f', name: 'F' });
    await waitReady(w, 'FeatureFlag', 'f');
    await w.operators[0].controller!.queue.idle();
    assert.equal(writes(), n, 'a FeatureFlag does not touch the tenant config');
    await w.patchSpec('Project', 'one', { displayName: 'One renamed' });
    const renamed = await waitFor('the new name', async () => { const c = await w.tenantConfig(); return c?.projects[0].name === 'One renamed' ? c : undefined; });
    assert.equal(renamed.generation, first.generation + 1);
    assert.equal(writes(), n + 1);
  });

  it('beyond the size limit keeps the last written config and says so on the Project left out', async function () {
    this.timeout(20_000);
    const before = await w.tenantConfig();
    await w.apply('Project', 'two', { displayName: 'Two', organizationId: w.orgId });
    await waitReady(w, 'Project', 'two');
    const two = await waitFor('TenantConfig condition on two', async () => {
      const p = await w.get('Project', 'two');
      return p?.status?.conditions?.find((c) => c.type === 'TenantConfig');
    });
    assert.deepEqual([two.status, two.reason], ['False', 'TooLarge']);
    assert.match(two.message, /over the limit of 400/);
    assert.deepEqual(await w.tenantConfig(), before, 'the last good config stays');
    // The size and its limit are exported side by side (the 80 % warning divides one by the other).
    const exposed = await w.operators[0].metrics.registry.metrics();
    assert.match(exposed, /^tally_operator_tenant_config_max_bytes 400$/m);
    assert.ok(Number(/^tally_operator_tenant_config_bytes (\d+)$/m.exec(exposed)?.[1]) > 400, exposed);
    const one = await w.get('Project', 'one');
    assert.equal(one!.status?.conditions?.find((c) => c.type === 'TenantConfig'), undefined, 'the project in the config is not flagged');
    // Deleting the extra Project makes the config fit again: nothing to write, the condition is gone with it.
    await w.remove('Project', 'two');
    await waitFor('two gone', async () => !(await w.get('Project', 'two')));
    assert.deepEqual((await w.tenantConfig())?.projects.map((p) => p.resource), ['Project/team-a/one']);
  });
});
