import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { forEachBackend } from './support/backends.js';
import { startWorld, waitFor, type World } from './operator.support.js';
import type { KindName } from '../operator/src/kinds.js';

/** k8s/examples/tenant as a team applies it: admitted by the CRDs, then all Ready through the operator. */
const docs = (file: string) => parseAllDocuments(readFileSync(new URL(`../k8s/examples/${file}`, import.meta.url), 'utf8')).map((d) => d.toJS());

forEachBackend('operator examples', (backend) => {
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

  it('k8s/examples/tenant: Project, FlagSecret and FeatureFlags become Ready, and the flags answer', async function () {
    this.timeout(30_000);
    const kustomization = docs('tenant/kustomization.yaml')[0];
    const objects = (kustomization.resources as string[]).flatMap((f) => docs(`tenant/${f}`)).filter((o) => o.kind !== 'Namespace');
    assert.deepEqual(objects.map((o) => o.kind).sort(), ['FeatureFlag', 'FeatureFlag', 'FlagSecret', 'Project']);
    for (const o of objects) {
      if (o.kind === 'Project') o.spec.organizationId = w.orgId;
      await w.apply(o.kind as KindName, o.metadata.name, o.spec, o.metadata.namespace);
    }
    for (const o of objects) {
      await waitFor(`${o.kind} ${o.metadata.name} Ready`, async () => {
        const got = await w.get(o.kind as KindName, o.metadata.name, o.metadata.namespace);
        return got?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
      });
    }
    const project = await w.get('Project', 'shop', 'team-shop');
    const token = (project!.status as any).token;
    const res = await w.svc.anon.post('/flags/evaluate', { token, distinct_id: 'qa-1' });
    assert.equal(res.body.flags['new-checkout'].enabled, true);
    assert.equal(res.body.flags['new-checkout'].reason, 'rule:0');
    assert.ok(['control', 'green'].includes(res.body.flags['checkout-button'].variant));
  });

  it('k8s/examples/flagsecret-from-secret.yaml: a FlagSecret reading a Secret you provide', async function () {
    this.timeout(30_000);
    const [secret, flagSecret] = docs('flagsecret-from-secret.yaml');
    await w.remove('FlagSecret', 'shop-flags', 'team-shop');
    await waitFor('the minted FlagSecret gone', async () => !(await w.get('FlagSecret', 'shop-flags', 'team-shop')));
    await w.core.createNamespacedSecret({ namespace: 'team-shop', body: secret });
    await w.apply('FlagSecret', flagSecret.metadata.name, flagSecret.spec, 'team-shop');
    await waitFor('the provided secret in effect', async () =>
      (await w.svc.anon.get('/flags/local-evaluation', { token: secret.stringData.value })).status === 200, 20_000);
  });
});
