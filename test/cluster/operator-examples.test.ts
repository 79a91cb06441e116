import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { forEachBackend } from '../support/backends.js';
import { useKeyedOperatorWorld, waitFor } from '../support/operator.js';
import type { KindName } from '../../operator/src/kinds.js';
import { isClusterScoped, pluralOf } from '../../operator/src/registry.js';

/**
 * k8s/examples/tenant as a platform team applies it from Git, unchanged (no id filled in): admitted
 * by the CRDs, then all Ready through the operator holding OPERATOR_KEY; the flags answer, the
 * CI token works, the limits reach the tenant config.
 */
const docs = (file: string) => parseAllDocuments(readFileSync(new URL(`../../k8s/examples/${file}`, import.meta.url), 'utf8')).map((d) => d.toJS());
const G = 'analytics.tally.dev';
const OPERATOR_KEY = 'examples-operator-key-0123456789';

forEachBackend('operator examples', (backend) => {
  const w = useKeyedOperatorWorld(backend, OPERATOR_KEY);

  const getAny = async (kind: KindName, name: string, namespace?: string) => {
    if (!isClusterScoped(kind)) return w().get(kind, name, namespace);
    return w().custom.getClusterCustomObject({ group: G, version: 'v1', plural: pluralOf(kind), name }).catch(() => undefined);
  };

  it('k8s/examples/tenant: Organization, Project, FlagSecret, FeatureFlags and ApiToken become Ready with no number in Git', async function () {
    this.timeout(40_000);
    const kustomization = docs('tenant/kustomization.yaml')[0];
    const objects = (kustomization.resources as string[]).flatMap((f) => docs(`tenant/${f}`)).filter((o) => o.kind !== 'Namespace');
    assert.deepEqual(objects.map((o) => o.kind).sort(), ['ApiToken', 'FeatureFlag', 'FeatureFlag', 'FlagSecret', 'Organization', 'Project']);
    assert.ok(!objects.some((o) => 'organizationId' in o.spec || o.metadata.annotations), 'no database id in the manifests');
    // Applied in the order a GitOps tool might pick (Organization last): the others wait for it.
    for (const o of [...objects.filter((x) => x.kind !== 'Organization'), ...objects.filter((x) => x.kind === 'Organization')]) {
      if (o.kind === 'Organization') await w().custom.createClusterCustomObject({ group: G, version: 'v1', plural: 'organizations', body: o });
      else await w().apply(o.kind as KindName, o.metadata.name, o.spec, o.metadata.namespace);
    }
    for (const o of objects) {
      await waitFor(`${o.kind} ${o.metadata.name} Ready`, async () => {
        const got = await getAny(o.kind as KindName, o.metadata.name, o.metadata.namespace);
        return got?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True');
      }, 20_000);
    }
    const org = (await getAny('Organization', 'shop'))!.status as any;
    const members = ((await w().svc.admin.get(`/admin/orgs/${org.organizationId}/members`)).body as any[]).map((m) => [m.email, m.role]).sort();
    assert.deepEqual(members, [['analyst@shop.example', 'member'], ['lead@shop.example', 'owner']]);

    const project = await w().get('Project', 'shop', 'team-shop');
    const token = (project!.status as any).token;
    const res = await w().svc.anon.post('/flags/evaluate', { token, distinct_id: 'qa-1' });
    assert.equal(res.body.flags['new-checkout'].enabled, true);
    assert.equal(res.body.flags['new-checkout'].reason, 'rule:0');
    assert.ok(['control', 'green'].includes(res.body.flags['checkout-button'].variant));

    const ci = w().fake.stored('', 'secrets', 'team-shop', 'ci-api-token') as any;
    const ciToken = Buffer.from(ci.data.token, 'base64').toString('utf8');
    const flags = await w().svc.client(ciToken).get(`/api/flags?projectId=${(project!.status as any).projectId}`);
    assert.equal(flags.status, 200, flags.text);
    assert.deepEqual((flags.body as any[]).map((f) => f.key).sort(), ['checkout-button', 'new-checkout']);

    const tc = await waitFor('tenant config with the limits', async () => {
      const c = await w().tenantConfig() as any;
      return c?.projects.find((p: any) => p.resource === 'Project/team-shop/shop' && p.rateLimit) ? c : undefined;
    });
    const entry = tc.projects.find((p: any) => p.resource === 'Project/team-shop/shop');
    assert.deepEqual([entry.organizationId, entry.retentionDays, entry.rateLimit], [org.organizationId, 395, { requestsPer10Seconds: 2000 }]);
    // (The world's own platform Organization is listed too.)
    assert.deepEqual(tc.organizations.filter((o: any) => o.resource !== 'Organization/platform').map((o: any) => [o.resource, o.monthlyEventQuota]), [['Organization/shop', 5000000]]);
  });

  it('k8s/examples/flagsecret-from-secret.yaml: a FlagSecret reading a Secret you provide', async function () {
    this.timeout(30_000);
    const [secret, flagSecret] = docs('flagsecret-from-secret.yaml');
    await w().remove('FlagSecret', 'shop-flags', 'team-shop');
    await waitFor('the minted FlagSecret gone', async () => !(await w().get('FlagSecret', 'shop-flags', 'team-shop')));
    await w().core.createNamespacedSecret({ namespace: 'team-shop', body: secret });
    await w().apply('FlagSecret', flagSecret.metadata.name, flagSecret.spec, 'team-shop');
    await waitFor('the provided secret in effect', async () =>
      (await w().svc.anon.get('/flags/local-evaluation', { token: secret.stringData.value })).status === 200, 20_000);
  });
});
