import assert from 'node:assert/strict';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { DEFAULT_TIMING, loadOperatorConfig } from '../../operator/src/config.js';
import { startOperator, type RunningOperator } from '../../operator/src/operator.js';
import { forEachBackend } from '../support/backends.js';
import { boundTo, envOf, find, helmTemplate, type K8sObject } from '../support/chart.js';
import { FakeKube } from '../support/kube/index.js';
import { SUPERADMIN_KEY, startTestService, type TestService } from '../support/service.js';

/**
 * The chart's operator as it would run in the cluster: its env from the rendered Deployment, its
 * ServiceAccount held to the rendered Role/ClusterRole by the fake API server (anything outside them
 * is a 403), against a real service. A verb missing from the chart fails here.
 */

const G = 'analytics.tally.dev';
const V = 'v1';
const SA = 'system:serviceaccount:tally:tally-operator';
/** The chart generates OPERATOR_KEY for the API pods and the operator; the test service gets the same. */
const OPERATOR_KEY = 'chart-operator-key-0123456789';

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The operator container's env as the kubelet would give it (Secret refs and the downward API resolved). */
function operatorEnv(objects: K8sObject[], apiUrl: string): Record<string, string> {
  const container = find(objects, 'Deployment', 'tally-operator').spec.template.spec.containers[0];
  const env: Record<string, string> = {};
  for (const [name, e] of envOf(container)) {
    if (e.value !== undefined) env[name] = e.value;
    else if (e.valueFrom?.secretKeyRef?.key === 'SUPERADMIN_KEY') env[name] = SUPERADMIN_KEY;
    else if (e.valueFrom?.secretKeyRef?.key === 'OPERATOR_KEY') env[name] = OPERATOR_KEY;
    else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace') env[name] = 'tally';
    else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') env[name] = 'tally-operator-0';
    else throw new Error(`unexpected env source for ${name}`);
  }
  // The in-cluster Service URL, pointed at the test service; a free port for the probes.
  assert.equal(env.OPERATOR_API_URL, 'http://tally-api:80');
  return { ...env, OPERATOR_API_URL: apiUrl, METRICS_PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' };
}

forEachBackend('chart RBAC with the real operator', (backend) => {
  let t: TestService;
  let fake: FakeKube;
  let op: RunningOperator;
  let custom: CustomObjectsApi;
  let config: ReturnType<typeof loadOperatorConfig>;
  let core: CoreV1Api;

  before(async function () {
    this.timeout(60_000);
    const rendered = await helmTemplate('tally', { namespace: 'tally' });
    assert.ok(rendered.ok, rendered.stderr);
    t = await startTestService(backend, { OPERATOR_KEY });
    fake = await FakeKube.start();
    // Only what the rendered bindings give its ServiceAccount (not the tenant roles the chart also ships).
    fake.enforceRbac(SA, boundTo(rendered.objects, 'tally', 'tally-operator'));
    custom = fake.kubeConfig().makeApiClient(CustomObjectsApi);
    core = fake.kubeConfig().makeApiClient(CoreV1Api);
    config = loadOperatorConfig(operatorEnv(rendered.objects, t.url));
    config.timing = { ...DEFAULT_TIMING, retryPeriodMs: 200, backoffBaseMs: 50, backoffMaxMs: 500 };
    op = await startOperator(config, { kubeConfig: fake.kubeConfig(SA) });
  });

  after(async () => {
    await op?.close();
    await fake?.stop();
    await t?.close();
  });

  it('leads, reconciles a Project and a FlagSecret in another namespace (finalizers, status, minted Secret), writes the tenant config, and is never refused', async function () {
    this.timeout(60_000);
    // The organisation through an Organization listing team-a: the chart leaves TENANCY_ALLOW_UNMANAGED_ORGS
    // false, so a Project reaches only an organisation that an Organization manages for its namespace.
    await custom.createClusterCustomObject({
      group: G, version: V, plural: 'organizations',
      body: { apiVersion: `${G}/${V}`, kind: 'Organization', metadata: { name: 'chart' }, spec: { displayName: 'Chart', namespaces: ['team-a'] } },
    });
    await custom.createNamespacedCustomObject({
      group: G, version: V, namespace: 'team-a', plural: 'projects',
      body: { apiVersion: `${G}/${V}`, kind: 'Project', metadata: { name: 'web', namespace: 'team-a' }, spec: { displayName: 'Web', organizationRef: { name: 'chart' } } },
    });
    const ready = await until('Project Ready', async () => {
      const p: any = await custom.getNamespacedCustomObject({ group: G, version: V, namespace: 'team-a', plural: 'projects', name: 'web' });
      const cond = (p.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
      return cond?.status === 'True' && p.status.token ? p : undefined;
    });
    assert.ok(ready.metadata.finalizers.includes(`${G}/finalizer`));
    await custom.createNamespacedCustomObject({
      group: G, version: V, namespace: 'team-a', plural: 'flagsecrets',
      body: { apiVersion: `${G}/${V}`, kind: 'FlagSecret', metadata: { name: 'web', namespace: 'team-a' }, spec: { projectRef: { name: 'web' } } },
    });
    await until('minted flag secret', async () => (await core.readNamespacedSecret({ namespace: 'team-a', name: 'web-flag-secret' })).data?.secret);
    // The tenant config Secret, in the operator's namespace, under the name the chart gives the API pods.
    // Its status written (whatever the API said about the secret: RBAC is what is checked here).
    await until('FlagSecret status', async () => {
      const f: any = await custom.getNamespacedCustomObject({ group: G, version: V, namespace: 'team-a', plural: 'flagsecrets', name: 'web' });
      return f.status?.secretName === 'web-flag-secret' && f.status.observedGeneration === 1 ? f : undefined;
    });
    const tenants = await until('tenant config listing the Project', async () => {
      const s = await core.readNamespacedSecret({ namespace: 'tally', name: 'tally-tenant-config' });
      const doc = JSON.parse(Buffer.from(s.data!['tenants.json']!, 'base64').toString());
      return doc.projects?.some((p: any) => p.resource === 'Project/team-a/web') ? doc : undefined;
    });
    assert.equal(tenants.projects[0].token, ready.status.token);
    // The Organization (cluster-scoped: the ClusterRole) and an ApiToken whose minted Secret sets
    // blockOwnerDeletion (apitokens/finalizers), with the operator's own key, not the superadmin's.
    assert.equal(config.apiKey, OPERATOR_KEY);
    await custom.createNamespacedCustomObject({
      group: G, version: V, namespace: 'team-a', plural: 'apitokens',
      body: { apiVersion: `${G}/${V}`, kind: 'ApiToken', metadata: { name: 'ci', namespace: 'team-a' }, spec: { organizationRef: { name: 'chart' }, role: 'viewer' } },
    });
    await until('minted API token', async () => (await core.readNamespacedSecret({ namespace: 'team-a', name: 'ci-api-token' })).data?.token);
    assert.ok(op.isLeader);
    const refused = fake.requests.filter((r) => r.user === SA && r.status === 403);
    assert.deepEqual(refused.map((r) => `${r.verb} ${r.path}`), []);
    assert.ok(fake.requests.filter((r) => r.user === SA).length > 5, 'the operator went through the fake API');
  });
});
