import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { FakeKube, kubectlFor, type PolicyRule } from '../support/kube/index.js';
import { boundTo, envOf, find, helmTemplate, validateObject, type K8sObject } from '../support/chart.js';
import { operatorKinds } from '../../operator/src/registry.js';

/**
 * The chart's boundary between teams: the tenant ClusterRoles (aggregated into view/edit/admin),
 * the ValidatingAdmissionPolicy on the adopt-id annotation evaluated by the fake API server over
 * what `helm template` renders (and shown through the real kubectl), the operator's Secrets in its
 * own namespace named by resourceNames, and TENANCY_ALLOW_UNMANAGED_ORGS.
 */

const G = 'analytics.tally.dev';
const ADOPT = 'analytics.tally.dev/adopt-id';
const TENANT = 'dev@team-b';
const OPERATOR = 'system:serviceaccount:tally:tally-operator';
/** The namespaced kinds of the operator's registry: a kind added there fails here until templates/tenancy.yaml lists it. */
const TENANT_KINDS = operatorKinds().filter((k) => k.definition.scope !== 'Cluster').map((k) => k.definition.plural).sort();

/** The rules a built-in aggregated role (view, edit, admin) gains from the rendered ClusterRoles. */
function aggregated(objects: K8sObject[], role: 'view' | 'edit' | 'admin'): PolicyRule[] {
  // The built-in roles chain: view aggregates into edit, edit into admin.
  const labels = { view: ['view'], edit: ['view', 'edit'], admin: ['view', 'edit', 'admin'] }[role];
  return objects
    .filter((o) => o.kind === 'ClusterRole' && labels.some((l) => o.metadata.labels?.[`rbac.authorization.k8s.io/aggregate-to-${l}`] === 'true'))
    .flatMap((o) => o.rules as PolicyRule[]);
}

const project = (name: string, annotations?: Record<string, string>) => ({
  apiVersion: `${G}/v1`, kind: 'Project',
  metadata: { name, ...(annotations ? { annotations } : {}) },
  spec: { displayName: name, organizationRef: { name: 'team-b' } },
});
const organization = (name: string, annotations?: Record<string, string>) => ({
  apiVersion: `${G}/v1`, kind: 'Organization',
  metadata: { name, ...(annotations ? { annotations } : {}) },
  spec: { displayName: name, namespaces: ['team-b'] },
});

/** One request to the fake as `user`: status and body. */
async function call(fake: FakeKube, user: string, method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<{ status: number; body: any }> {
  const res = await fetch(`${fake.serverUrl(user)}${path}`, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': contentType },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json().catch(() => undefined) };
}
const projects = (ns: string, name = '') => `/apis/${G}/v1/namespaces/${ns}/projects${name ? `/${name}` : ''}`;
const organizations = (name = '') => `/apis/${G}/v1/organizations${name ? `/${name}` : ''}`;
const merge = 'application/merge-patch+json';

describe('Helm chart: roles for teams, the adopt-id admission policy, the operator\'s Secrets', function () {
  this.timeout(120_000);
  let defaults: K8sObject[];
  let namespaced: K8sObject[];
  let policyDocs: K8sObject[];
  let fake: FakeKube;

  before(async () => {
    const [d, n] = await Promise.all([helmTemplate('tally'), helmTemplate('tally', { set: ['operator.watchNamespace=team-b'] })]);
    assert.ok(d.ok, d.stderr);
    assert.ok(n.ok, n.stderr);
    defaults = d.objects;
    namespaced = n.objects;
    policyDocs = defaults.filter((o) => o.apiVersion === 'admissionregistration.k8s.io/v1');
    fake = await FakeKube.start();
  });
  after(async () => fake?.stop());

  it('renders tally-tenant-view and tally-tenant-edit, aggregated into view, edit and admin, without status or Organizations', async () => {
    const view = find(defaults, 'ClusterRole', 'tally-tenant-view');
    const edit = find(defaults, 'ClusterRole', 'tally-tenant-edit');
    for (const o of [view, edit, ...policyDocs]) await validateObject(o);
    assert.equal(view.metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-view'], 'true');
    assert.equal(edit.metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-edit'], 'true');
    assert.equal(edit.metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-admin'], 'true');
    assert.equal(view.metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-edit'], undefined);
    for (const [role, verbs] of [[view, ['get', 'list', 'watch']], [edit, ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']]] as const) {
      assert.deepEqual(role.rules.map((r: PolicyRule) => r.apiGroups), [[G]]);
      assert.deepEqual([...role.rules[0].resources].sort(), TENANT_KINDS, role.metadata.name);
      assert.deepEqual([...role.rules[0].verbs].sort(), verbs, role.metadata.name);
    }
    // A second release in the same cluster leaves the cluster-wide roles to the first.
    const second = await helmTemplate('two', { set: ['crds.enabled=false', 'tenancy.tenantRoles.enabled=false'] });
    assert.deepEqual(second.objects.filter((o) => o.metadata.name.startsWith('tally-tenant-')), []);
    // Its policy has its own name and exempts its own operator.
    assert.ok(find(second.objects, 'ValidatingAdmissionPolicy', 'tally-two-tally-adopt-id'));
  });

  it('a team bound to edit (or tally-tenant-edit) writes its Projects, not their status, not Organizations, not another namespace', async () => {
    const user = 'writer@team-b';
    fake.enforceRbac(user, [{ namespace: 'team-b', rules: aggregated(defaults, 'edit') }]);
    assert.equal((await call(fake, user, 'POST', projects('team-b'), project('rbac-web'))).status, 201);
    assert.equal((await call(fake, user, 'PATCH', projects('team-b', 'rbac-web'), { spec: { displayName: 'Web' } }, merge)).status, 200);
    assert.equal((await call(fake, user, 'GET', `/apis/${G}/v1/namespaces/team-b/featureflags`)).status, 200);
    const status = await call(fake, user, 'PATCH', `${projects('team-b', 'rbac-web')}/status`, { status: { projectId: 1 } }, merge);
    assert.equal(status.status, 403);
    assert.match(status.body.message, /cannot patch resource "projects\/status"/);
    assert.equal((await call(fake, user, 'POST', organizations(), organization('rbac-org'))).status, 403);
    assert.equal((await call(fake, user, 'POST', projects('team-a'), project('rbac-web'))).status, 403);
    assert.equal((await call(fake, user, 'DELETE', projects('team-b', 'rbac-web'))).status, 200);
    // view: reads, never writes.
    fake.enforceRbac('reader@team-b', [{ namespace: 'team-b', rules: aggregated(defaults, 'view') }]);
    assert.equal((await call(fake, 'reader@team-b', 'GET', projects('team-b'))).status, 200);
    assert.equal((await call(fake, 'reader@team-b', 'POST', projects('team-b'), project('rbac-view'))).status, 403);
  });

  describe('the adopt-id policy, evaluated by the fake API server', () => {
    let message: string;
    before(async () => {
      for (const o of policyDocs) {
        const plural = o.kind === 'ValidatingAdmissionPolicy' ? 'validatingadmissionpolicies' : 'validatingadmissionpolicybindings';
        const r = await call(fake, 'admin', 'POST', `/apis/admissionregistration.k8s.io/v1/${plural}`, o);
        assert.equal(r.status, 201, JSON.stringify(r.body));
      }
      message = find(policyDocs, 'ValidatingAdmissionPolicy', 'tally-tally-adopt-id').spec.validations[0].message;
      assert.match(message, /analytics\.tally\.dev\/adopt-id/);
      assert.match(message, /system:serviceaccount:tally:tally-operator/);
      assert.match(message, /system:masters/);
      fake.setGroups(TENANT, ['team-b-devs']);
      fake.enforceRbac(TENANT, [{ namespace: 'team-b', rules: find(defaults, 'ClusterRole', 'tally-tenant-edit').rules }]);
      fake.enforceRbac(OPERATOR, boundTo(defaults, 'tally', 'tally-operator'));
    });
    const refusal = () =>
      `projects.analytics.tally.dev "web" is forbidden: ValidatingAdmissionPolicy 'tally-tally-adopt-id' with binding 'tally-tally-adopt-id' denied request: ${message}`;

    it('refuses a tenant creating a Project with the annotation (403, the policy\'s message), and nothing is stored', async () => {
      const r = await call(fake, TENANT, 'POST', projects('team-b'), project('web', { [ADOPT]: '7' }));
      assert.equal(r.status, 403);
      assert.equal(r.body.reason, 'Forbidden');
      assert.equal(r.body.message, refusal());
      assert.equal(fake.stored(G, 'projects', 'team-b', 'web'), undefined);
      // Without it, the same create passes.
      assert.equal((await call(fake, TENANT, 'POST', projects('team-b'), project('web', { team: 'b' }))).status, 201);
    });

    it('refuses adding or changing it by update (PUT), merge patch and JSON patch; other edits and removing it pass', async () => {
      const current = (await call(fake, TENANT, 'GET', projects('team-b', 'web'))).body;
      const put = await call(fake, TENANT, 'PUT', projects('team-b', 'web'), { ...current, metadata: { ...current.metadata, annotations: { [ADOPT]: '7' } } });
      assert.equal(put.status, 403, JSON.stringify(put.body));
      assert.equal(put.body.message, refusal());
      assert.equal((await call(fake, TENANT, 'PATCH', projects('team-b', 'web'), { metadata: { annotations: { [ADOPT]: '7' } } }, merge)).status, 403);
      const jsonPatch = await call(fake, TENANT, 'PATCH', projects('team-b', 'web'), [{ op: 'add', path: '/metadata/annotations/analytics.tally.dev~1adopt-id', value: '7' }], 'application/json-patch+json');
      assert.equal(jsonPatch.status, 403);
      assert.equal(fake.stored(G, 'projects', 'team-b', 'web')?.metadata.annotations?.[ADOPT], undefined);
      // The platform (system:masters) sets it; the team may then edit the Project but not change the id.
      assert.equal((await call(fake, 'admin', 'PATCH', projects('team-b', 'web'), { metadata: { annotations: { [ADOPT]: '7' } } }, merge)).status, 200);
      assert.equal((await call(fake, TENANT, 'PATCH', projects('team-b', 'web'), { spec: { displayName: 'Web shop' } }, merge)).status, 200);
      const change = await call(fake, TENANT, 'PATCH', projects('team-b', 'web'), { metadata: { annotations: { [ADOPT]: '8' } } }, merge);
      assert.equal(change.status, 403);
      assert.equal(change.body.message, refusal());
      assert.equal(fake.stored(G, 'projects', 'team-b', 'web')?.metadata.annotations?.[ADOPT], '7');
      const removed = await call(fake, TENANT, 'PATCH', projects('team-b', 'web'), { metadata: { annotations: { [ADOPT]: null } } }, merge);
      assert.equal(removed.status, 200, JSON.stringify(removed.body));
      assert.equal(fake.stored(G, 'projects', 'team-b', 'web')?.metadata.annotations?.[ADOPT], undefined);
    });

    it('lets system:masters and the operator\'s ServiceAccount set it; refuses anyone else, on Organizations too', async () => {
      assert.equal((await call(fake, 'admin', 'POST', projects('team-b'), project('adopted', { [ADOPT]: '3' }))).status, 201);
      assert.equal((await call(fake, 'admin', 'POST', organizations(), organization('adopted-org', { [ADOPT]: '2' }))).status, 201);
      // The operator may patch Projects (finalizers) and Organizations: the annotation is no reason to refuse it.
      assert.equal((await call(fake, OPERATOR, 'PATCH', projects('team-b', 'web'), { metadata: { annotations: { [ADOPT]: '9' } } }, merge)).status, 200);
      assert.equal((await call(fake, OPERATOR, 'PATCH', organizations('adopted-org'), { metadata: { annotations: { [ADOPT]: '4' } } }, merge)).status, 200);
      // Another release's operator, or a cluster user with every RBAC right but outside the platform groups: refused.
      const other = 'system:serviceaccount:other:tally-operator';
      const org = await call(fake, other, 'POST', organizations(), organization('foreign-org', { [ADOPT]: '2' }));
      assert.equal(org.status, 403);
      assert.equal(org.body.message, `organizations.analytics.tally.dev "foreign-org" is forbidden: ValidatingAdmissionPolicy 'tally-tally-adopt-id' with binding 'tally-tally-adopt-id' denied request: ${message}`);
      fake.setGroups('ops@example', ['oncall']);
      assert.equal((await call(fake, 'ops@example', 'PATCH', organizations('adopted-org'), { metadata: { annotations: { [ADOPT]: '5' } } }, merge)).status, 403);
      // Status writes are not the main resource: the policy does not match them.
      assert.equal((await call(fake, 'ops@example', 'PATCH', `${organizations('adopted-org')}/status`, { status: { organizationId: 4 } }, merge)).status, 200);
    });

    it('tenancy.platformGroups names who else may; tenancy.admissionPolicy.enabled=false renders none', async () => {
      const r = await helmTemplate('tally', { set: ['tenancy.platformGroups={platform-admins,sre}'] });
      const p = find(r.objects, 'ValidatingAdmissionPolicy', 'tally-tally-adopt-id');
      const local = await FakeKube.start({ crds: 'repo' });
      try {
        for (const o of r.objects.filter((x) => x.apiVersion === 'admissionregistration.k8s.io/v1')) {
          const plural = o.kind === 'ValidatingAdmissionPolicy' ? 'validatingadmissionpolicies' : 'validatingadmissionpolicybindings';
          assert.equal((await call(local, 'admin', 'POST', `/apis/admissionregistration.k8s.io/v1/${plural}`, o)).status, 201);
        }
        local.setGroups('lead@platform', ['sre']);
        local.setGroups('dev@team-c', ['team-c']);
        assert.equal((await call(local, 'lead@platform', 'POST', projects('team-c'), project('a', { [ADOPT]: '1' }))).status, 201);
        const refused = await call(local, 'dev@team-c', 'POST', projects('team-c'), project('b', { [ADOPT]: '1' }));
        assert.equal(refused.status, 403);
        assert.match(refused.body.message, /platform groups platform-admins, sre/);
        // system:masters is no longer listed: only what the value names.
        assert.match(p.spec.matchConditions[0].expression, /\["platform-admins","sre"\]/);
      } finally {
        await local.stop();
      }
      const off = await helmTemplate('tally', { set: ['tenancy.admissionPolicy.enabled=false'] });
      assert.ok(off.ok, off.stderr);
      assert.deepEqual(off.objects.filter((o) => o.apiVersion === 'admissionregistration.k8s.io/v1'), []);
    });

    it('the real kubectl shows the refusal as the API server words it, for apply and annotate', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'tenancy-kubectl-'));
      try {
        const file = join(dir, 'project.yaml');
        await writeFile(file, stringify({ ...project('kc', { [ADOPT]: '7' }), metadata: { name: 'kc', namespace: 'team-b', annotations: { [ADOPT]: '7' } } }));
        const kubectl = await kubectlFor(fake, TENANT);
        const applied = await kubectl.run(['apply', '-f', file]);
        assert.notEqual(applied.code, 0);
        const words = `projects.analytics.tally.dev "kc" is forbidden: ValidatingAdmissionPolicy 'tally-tally-adopt-id' with binding 'tally-tally-adopt-id' denied request: ${message}`;
        assert.equal(applied.stderr.trim(), `Error from server (Forbidden): error when creating "${file}": ${words}`);
        await writeFile(file, stringify({ ...project('kc'), metadata: { name: 'kc', namespace: 'team-b' } }));
        const plain = await kubectl.run(['apply', '-f', file]);
        assert.equal(plain.code, 0, plain.stderr);
        const annotate = await kubectl.run(['annotate', '-n', 'team-b', 'project', 'kc', `${ADOPT}=7`]);
        assert.equal(annotate.stderr.trim(), `Error from server (Forbidden): ${words}`);
        const admin = await kubectlFor(fake);
        assert.equal((await admin.run(['annotate', '-n', 'team-b', 'project', 'kc', `${ADOPT}=7`])).code, 0);
        // Policies and bindings are served like any kind (kubectl get, by their short plural).
        const listed = await admin.run(['get', 'validatingadmissionpolicies', '-o', 'name']);
        assert.equal(listed.stdout.trim(), 'validatingadmissionpolicy.admissionregistration.k8s.io/tally-tally-adopt-id');
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });

    it('refuses to store a policy whose CEL it cannot evaluate (nothing silently unchecked)', async () => {
      const bad = structuredClone(find(policyDocs, 'ValidatingAdmissionPolicy', 'tally-tally-adopt-id'));
      bad.metadata = { name: 'broken' };
      bad.spec.validations = [{ expression: 'object.metadata.(' }];
      const r = await call(fake, 'admin', 'POST', '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies', bad);
      assert.equal(r.status, 422);
      assert.match(r.body.message, /spec\.validations\[0\]\.expression/);
    });
  });

  describe("the operator's Secrets", () => {
    const secret = (name: string) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData: { k: 'v' } });
    const secrets = (ns: string, name = '') => `/api/v1/namespaces/${ns}/secrets${name ? `/${name}` : ''}`;

    before(async () => {
      for (const [ns, name] of [['tally', 'tally-credentials'], ['tally', 'tally-tenant-config'], ['team-b', 'shop-flag-secret']]) {
        assert.equal((await call(fake, 'admin', 'POST', secrets(ns), secret(name))).status, 201);
      }
    });

    it('watching some namespaces: reads in its own namespace only the tenant config Secret, by name; never the credentials Secret', async () => {
      const user = 'system:serviceaccount:tally:tally-operator-ns';
      fake.enforceRbac(user, boundTo(namespaced, 'tally', 'tally-operator'));
      const self = find(namespaced, 'Role', 'tally-operator-self');
      const read = self.rules.filter((r: PolicyRule) => r.resources?.includes('secrets') && r.verbs.some((v) => ['get', 'list', 'watch'].includes(v)));
      assert.deepEqual(read.map((r: PolicyRule) => r.resourceNames), [['tally-tenant-config']]);
      assert.equal((await call(fake, user, 'GET', secrets('tally', 'tally-tenant-config'))).status, 200);
      assert.equal((await call(fake, user, 'GET', secrets('tally', 'tally-credentials'))).status, 403);
      assert.equal((await call(fake, user, 'GET', secrets('tally'))).status, 403, 'list of every Secret');
      assert.equal((await call(fake, user, 'GET', `${secrets('tally')}?fieldSelector=metadata.name%3Dtally-credentials`)).status, 403);
      const listed = await call(fake, user, 'GET', `${secrets('tally')}?fieldSelector=metadata.name%3Dtally-tenant-config`);
      assert.equal(listed.status, 200);
      assert.deepEqual(listed.body.items.map((s: K8sObject) => s.metadata.name), ['tally-tenant-config']);
      const tenantConfig = (await call(fake, user, 'GET', secrets('tally', 'tally-tenant-config'))).body;
      assert.equal((await call(fake, user, 'PUT', secrets('tally', 'tally-tenant-config'), { ...tenantConfig, stringData: { 'tenants.json': '{}' } })).status, 200);
      assert.equal((await call(fake, user, 'PUT', secrets('tally', 'tally-credentials'), secret('tally-credentials'))).status, 403);
      // create reads nothing: it may make a missing tenant config Secret.
      assert.equal((await call(fake, user, 'POST', secrets('tally'), secret('tally-tenant-config-new'))).status, 201);
      // In the watched namespace: the Secrets it mints and reads.
      assert.equal((await call(fake, user, 'GET', secrets('team-b', 'shop-flag-secret'))).status, 200);
      assert.equal((await call(fake, user, 'GET', secrets('other', 'x'))).status, 403);
    });

    it('watching every namespace: its ClusterRole reads every Secret, the credentials Secret too (docs/deploy.md says so)', async () => {
      const user = 'system:serviceaccount:tally:tally-operator-all';
      fake.enforceRbac(user, boundTo(defaults, 'tally', 'tally-operator'));
      assert.equal((await call(fake, user, 'GET', secrets('tally', 'tally-credentials'))).status, 200);
    });

    it('refuses operator.watchNamespace listing the release namespace', async () => {
      const r = await helmTemplate('tally', { namespace: 'tally', set: ['operator.watchNamespace=team-b\\,tally'] });
      assert.equal(r.ok, false);
      assert.match(r.stderr, /operator\.watchNamespace lists the release namespace "tally".*credentials Secret/);
    });
  });

  it('tenancy.allowUnmanagedOrgs sets TENANCY_ALLOW_UNMANAGED_ORGS on the API and the operator (false by default)', async () => {
    const on = await helmTemplate('tally', { set: ['tenancy.allowUnmanagedOrgs=true'] });
    for (const [objects, value] of [[defaults, 'false'], [on.objects, 'true']] as const) {
      for (const d of ['tally-api', 'tally-operator']) {
        assert.equal(envOf(find(objects, 'Deployment', d).spec.template.spec.containers[0]).get('TENANCY_ALLOW_UNMANAGED_ORGS')?.value, value, d);
      }
    }
    const bad = await helmTemplate('tally', { setString: ['tenancy.allowUnmanagedOrgs=yes'] });
    assert.equal(bad.ok, false);
    assert.match(bad.stderr, /allowUnmanagedOrgs/);
  });
});
