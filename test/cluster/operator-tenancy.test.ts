import assert from 'node:assert/strict';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { forEachBackend } from '../support/backends.js';
import { OPERATOR_USER, POD_NS, grantsFromPermissions, readyOf, useKeyedOperatorWorld, waitFor } from '../support/operator.js';
import type { AnyResource, KindName } from '../../operator/src/kinds.js';

/**
 * Tenancy as resources on the fake Kubernetes API (the operator's RBAC enforced from
 * permissions.ts, OwnerReferencesPermissionEnforcement on) against a real service, the operator
 * holding OPERATOR_KEY only: Organizations, the namespace boundary attacked from another team's
 * namespace, OrganizationNotFound until the Organization appears, adoption and Conflict, members
 * owned by the resource, ApiTokens minted and revoked, limits in the tenant config.
 */
const G = 'analytics.tally.dev';
const V = 'v1';
const OPERATOR_KEY = 'test-operator-key-0123456789';
const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

forEachBackend('operator tenancy', (backend) => {
  const w = useKeyedOperatorWorld(backend, OPERATOR_KEY);

  const applyOrg = (name: string, spec: Record<string, unknown>, annotations?: Record<string, string>) =>
    w().custom.createClusterCustomObject({ group: G, version: V, plural: 'organizations', body: { apiVersion: `${G}/${V}`, kind: 'Organization', metadata: { name, annotations }, spec } });
  const patchOrg = (name: string, spec: Record<string, unknown>) =>
    w().custom.patchClusterCustomObject({ group: G, version: V, plural: 'organizations', name, body: { spec } }, MERGE);
  const getOrg = async (name: string): Promise<AnyResource | undefined> => {
    try {
      return await w().custom.getClusterCustomObject({ group: G, version: V, plural: 'organizations', name });
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  };
  const deleteOrg = (name: string) => w().custom.deleteClusterCustomObject({ group: G, version: V, plural: 'organizations', name });
  const applyIn = (namespace: string, kind: KindName, name: string, spec: Record<string, unknown>, annotations?: Record<string, string>) =>
    w().custom.createNamespacedCustomObject({
      group: G, version: V, namespace, plural: { Project: 'projects', FlagSecret: 'flagsecrets', FeatureFlag: 'featureflags', ApiToken: 'apitokens', Experiment: 'experiments', Organization: '' }[kind],
      body: { apiVersion: `${G}/${V}`, kind, metadata: { name, namespace, annotations }, spec },
    });
  const waitOrg = (name: string, reason = 'Reconciled') => waitFor(`Organization ${name} ${reason}`, async () => {
    const o = await getOrg(name);
    return readyOf(o)?.reason === reason && o!.status?.observedGeneration === o!.metadata.generation ? o : undefined;
  });
  const waitIn = (namespace: string, kind: KindName, name: string, reason = 'Reconciled') => waitFor(`${kind} ${namespace}/${name} ${reason}`, async () => {
    const o = await w().get(kind, name, namespace);
    return readyOf(o)?.reason === reason && o!.status?.observedGeneration === o!.metadata.generation ? o : undefined;
  });
  const managedProjects = async (resource: string) => (await w().svc.admin.get(`/api/projects?managedBy=${encodeURIComponent(resource)}`)).body;

  let acmeId: number;

  it('an Organization creates its organisation (managed by it) and shows usage against the quota', async () => {
    await applyOrg('acme', { displayName: 'Acme', namespaces: ['team-a'], monthlyEventQuota: 1000 });
    const o = await waitOrg('acme');
    const status = o.status as any;
    acmeId = status.organizationId;
    assert.ok(acmeId > 0);
    assert.deepEqual(status.usage, { month: new Date().toISOString().slice(0, 7), events: 0, monthlyEventQuota: 1000 });
    const org = (await w().svc.admin.get(`/admin/orgs/${acmeId}`)).body;
    assert.deepEqual([org.name, org.monthly_event_quota, org.managed_by], ['Acme', 1000, 'Organization/acme']);
    // A hand edit of a managed organisation is refused; the spec's change goes through.
    const hand = await w().svc.admin.patch(`/admin/orgs/${acmeId}`, { name: 'Hijacked' });
    assert.equal(hand.status, 409, hand.text);
    await patchOrg('acme', { displayName: 'Acme Inc', monthlyEventQuota: 5000 });
    await waitFor('renamed', async () => {
      const b = (await w().svc.admin.get(`/admin/orgs/${acmeId}`)).body;
      return b.name === 'Acme Inc' && b.monthly_event_quota === 5000;
    });
  });

  it('a Project names its Organization (no id in the spec); its limits reach the tenant config with the organisation', async () => {
    await applyIn('team-a', 'Project', 'web', { displayName: 'Web', organizationRef: { name: 'acme' }, retentionDays: 30, rateLimit: { requestsPer10Seconds: 50 } });
    const p = await waitIn('team-a', 'Project', 'web');
    const { projectId, organizationId } = p.status as any;
    assert.equal(organizationId, acmeId);
    const [project] = await managedProjects('Project/team-a/web');
    assert.deepEqual([project.id, project.org_id, project.retention_days, project.rate_limit], [projectId, acmeId, 30, { requestsPer10Seconds: 50 }]);
    const tc = await waitFor('tenant config with limits', async () => {
      const c = await w().tenantConfig() as any;
      return c?.projects.some((e: any) => e.resource === 'Project/team-a/web') && c.organizations?.some((o: any) => o.monthlyEventQuota === 5000) ? c : undefined;
    });
    const entry = tc.projects.find((e: any) => e.resource === 'Project/team-a/web');
    assert.deepEqual([entry.organizationId, entry.retentionDays, entry.rateLimit], [acmeId, 30, { requestsPer10Seconds: 50 }]);
    // (The world's own platform Organization is listed too.)
    assert.deepEqual(tc.organizations.filter((o: any) => o.resource !== 'Organization/platform'),
      [{ organizationId: acmeId, name: 'Acme Inc', monthlyEventQuota: 5000, resource: 'Organization/acme' }]);
  });

  it("the Organization's usage follows this month's accepted events (read again once per usageRefreshMs)", async () => {
    const token = ((await w().get('Project', 'web', 'team-a'))!.status as any).token;
    for (let i = 0; i < 3; i++) {
      const r = await w().svc.anon.post('/track', { event: 'signup', properties: { token, distinct_id: `u${i}` } });
      assert.equal(r.status, 200, r.text);
    }
    const o = await waitFor('usage of 3 events', async () => {
      const org = await getOrg('acme');
      return (org?.status as any)?.usage?.events >= 3 ? org : undefined;
    }, 20_000);
    assert.deepEqual((o.status as any).usage, { month: new Date().toISOString().slice(0, 7), events: 3, monthlyEventQuota: 5000 });
  });

  it("the boundary: from team B's namespace, naming team A's organisation (by reference or by id) gets nothing", async () => {
    await applyIn('team-b', 'Project', 'steal', { displayName: 'Steal', organizationRef: { name: 'acme' } });
    await applyIn('team-b', 'Project', 'steal-by-id', { displayName: 'Steal by id', organizationId: acmeId });
    await applyIn('team-b', 'ApiToken', 'steal-token', { organizationRef: { name: 'acme' }, role: 'admin' });
    for (const [kind, name] of [['Project', 'steal'], ['Project', 'steal-by-id'], ['ApiToken', 'steal-token']] as const) {
      const o = await waitIn('team-b', kind, name, 'NamespaceNotAllowed');
      assert.equal(readyOf(o)!.status, 'False');
      assert.equal((o.status as any).token, undefined);
      assert.equal((o.status as any).projectId, undefined);
      assert.equal((o.status as any).tokenId, undefined);
      assert.ok(!o.metadata.finalizers?.length, 'nothing done outside, so no finalizer');
    }
    assert.deepEqual(await managedProjects('Project/team-b/steal'), []);
    assert.deepEqual(await managedProjects('Project/team-b/steal-by-id'), []);
    assert.equal(w().fake.stored('', 'secrets', 'team-b', 'steal-token-api-token'), undefined);
    const tokens = (await w().svc.admin.get(`/admin/orgs/${acmeId}/tokens?managedBy=${encodeURIComponent('ApiToken/team-b/steal-token')}`)).body;
    assert.deepEqual(tokens, []);
    const events = await w().core.listNamespacedEvent({ namespace: 'team-b' });
    assert.ok(events.items.some((e) => e.involvedObject?.name === 'steal' && e.reason === 'NamespaceNotAllowed' && e.type === 'Warning'));
  });

  it('listing the namespace lets it in; removing it stops the resources there without deleting data', async () => {
    await patchOrg('acme', { namespaces: ['team-a', 'team-b'] });
    const p = await waitIn('team-b', 'Project', 'steal');
    const projectId = (p.status as any).projectId;
    await waitIn('team-b', 'ApiToken', 'steal-token');
    const token = Buffer.from((w().fake.stored('', 'secrets', 'team-b', 'steal-token-api-token') as any).data.token, 'base64').toString('utf8');
    assert.equal((await w().svc.client(token).get('/api/projects')).status, 200);
    await patchOrg('acme', { namespaces: ['team-a'] });
    await waitIn('team-b', 'Project', 'steal', 'NamespaceNotAllowed');
    const t = await waitIn('team-b', 'ApiToken', 'steal-token', 'NamespaceNotAllowed');
    assert.equal((t.status as any).tokenId, undefined);
    assert.equal((await w().svc.client(token).get('/api/projects')).status, 401, 'the namespace lost its token');
    await waitIn('team-a', 'Project', 'web');
    const kept = (await w().svc.admin.get(`/api/projects/${projectId}`));
    assert.equal(kept.status, 200, 'the project stays');
  });

  it('a Project naming a missing Organization waits with OrganizationNotFound and reconciles by itself when it appears', async () => {
    await applyIn('team-c', 'Project', 'early', { displayName: 'Early', organizationRef: { name: 'later' } });
    await waitIn('team-c', 'Project', 'early', 'OrganizationNotFound');
    await applyOrg('later', { displayName: 'Later', namespaces: ['team-c'] });
    const org = await waitOrg('later');
    const p = await waitIn('team-c', 'Project', 'early');
    assert.equal((p.status as any).organizationId, (org.status as any).organizationId);
  });

  it('adoption: the annotation takes over an existing organisation and project; another resource adopting them is Conflict', async () => {
    const existing = (await w().svc.admin.post('/admin/orgs', { name: 'Legacy' })).body;
    const legacyProject = (await w().svc.admin.post(`/admin/orgs/${existing.id}/projects`, { name: 'Legacy web' })).body;
    await applyOrg('legacy', { displayName: 'Legacy', namespaces: ['legacy'] }, { 'analytics.tally.dev/adopt-id': String(existing.id) });
    const o = await waitOrg('legacy');
    assert.equal((o.status as any).organizationId, existing.id, 'adopted, not created');
    assert.equal((await w().svc.admin.get(`/admin/orgs/${existing.id}`)).body.managed_by, 'Organization/legacy');
    await applyOrg('legacy-twin', { displayName: 'Legacy', namespaces: ['legacy'] }, { 'analytics.tally.dev/adopt-id': String(existing.id) });
    const twin = await waitOrg('legacy-twin', 'Conflict');
    assert.match(readyOf(twin)!.message, /Organization\/legacy/);

    await applyIn('legacy', 'Project', 'web', { displayName: 'Legacy web', organizationRef: { name: 'legacy' } }, { 'analytics.tally.dev/adopt-id': String(legacyProject.id) });
    const p = await waitIn('legacy', 'Project', 'web');
    assert.deepEqual([(p.status as any).projectId, (p.status as any).token], [legacyProject.id, legacyProject.token], 'same project, same token, same data');
    await applyIn('legacy', 'Project', 'web-twin', { displayName: 'Legacy web', organizationRef: { name: 'legacy' } }, { 'analytics.tally.dev/adopt-id': String(legacyProject.id) });
    await waitIn('legacy', 'Project', 'web-twin', 'Conflict');
  });

  it('adoption of an id the service does not have is Invalid, naming the annotation, and creates nothing', async () => {
    await applyOrg('ghost', { displayName: 'Ghost', namespaces: ['legacy'] }, { 'analytics.tally.dev/adopt-id': '99999999' });
    const o = await waitOrg('ghost', 'Invalid');
    assert.equal(readyOf(o)!.message, 'analytics.tally.dev/adopt-id: organization 99999999 does not exist');
    assert.equal((o.status as any).organizationId, undefined, 'no organisation created instead');
    await applyIn('legacy', 'Project', 'ghost', { displayName: 'Ghost', organizationRef: { name: 'legacy' } }, { 'analytics.tally.dev/adopt-id': '99999999' });
    const p = await waitIn('legacy', 'Project', 'ghost', 'Invalid');
    assert.equal(readyOf(p)!.message, 'analytics.tally.dev/adopt-id: project 99999999 does not exist');
    assert.deepEqual(await managedProjects('Project/legacy/ghost'), []);
  });

  it('members: the resource owns the invited list (invites, re-roles, removes); hand edits answer 409', async () => {
    await applyOrg('crew', { displayName: 'Crew', namespaces: ['crew'], members: [{ email: 'ana@example.com', role: 'admin' }, { email: 'bo@example.com', role: 'viewer' }] });
    const id = ((await waitOrg('crew')).status as any).organizationId;
    const members = async () => ((await w().svc.admin.get(`/admin/orgs/${id}/members`)).body as any[]).map((m) => [m.email, m.role]).sort();
    assert.deepEqual(await members(), [['ana@example.com', 'admin'], ['bo@example.com', 'viewer']]);
    const hand = await w().svc.admin.post(`/admin/orgs/${id}/members`, { email: 'eve@example.com', role: 'owner' });
    assert.equal(hand.status, 409, hand.text);
    assert.equal(hand.body.resource, 'Organization/crew');
    await patchOrg('crew', { members: [{ email: 'ana@example.com', role: 'member' }, { email: 'cy@example.com', role: 'viewer' }] });
    await waitFor('members follow the spec', async () => JSON.stringify(await members()) === JSON.stringify([['ana@example.com', 'member'], ['cy@example.com', 'viewer']]));
    // Group mappings follow the spec too.
    const groups = async () => ((await w().svc.admin.get(`/admin/orgs/${id}/groups`)).body as any[]).map((g) => [g.name, g.role]).sort();
    assert.deepEqual(await groups(), []);
    await patchOrg('crew', { groups: [{ name: 'crew-eng', role: 'member' }] });
    await waitFor('groups follow the spec', async () => JSON.stringify(await groups()) === JSON.stringify([['crew-eng', 'member']]));
  });

  it('an ApiToken mints a token into an owned Secret; it works on /api/*; deleting the ApiToken revokes it (401) and the Secret goes', async () => {
    await applyIn('team-a', 'ApiToken', 'ci', { organizationRef: { name: 'acme' }, role: 'viewer' });
    const t = await waitIn('team-a', 'ApiToken', 'ci');
    assert.equal((t.status as any).secretName, 'ci-api-token');
    const secret = w().fake.stored('', 'secrets', 'team-a', 'ci-api-token') as any;
    assert.deepEqual(secret.metadata.ownerReferences.map((r: any) => [r.kind, r.name, r.blockOwnerDeletion]), [['ApiToken', 'ci', true]]);
    const token = Buffer.from(secret.data.token, 'base64').toString('utf8');
    const ok = await w().svc.client(token).get('/api/projects');
    assert.equal(ok.status, 200, ok.text);
    assert.ok((ok.body as any[]).some((p) => p.org_id === acmeId));
    const events = await w().core.listNamespacedEvent({ namespace: 'team-a' });
    assert.ok(events.items.some((e) => e.involvedObject?.name === 'ci' && e.reason === 'Created' && e.type === 'Normal'), 'a Normal Created event');

    await w().remove('ApiToken' as KindName, 'ci', 'team-a');
    await waitFor('ApiToken gone', async () => (await w().get('ApiToken' as KindName, 'ci', 'team-a')) === undefined);
    assert.equal((await w().svc.client(token).get('/api/projects')).status, 401);
    await waitFor('Secret collected with its owner', () => w().fake.stored('', 'secrets', 'team-a', 'ci-api-token') === undefined);
  });

  it('a deleted token Secret is minted again (Rotated) and the old token no longer works', async () => {
    await applyIn('team-a', 'ApiToken', 'deploy', { organizationRef: { name: 'acme' }, role: 'member' });
    const first = ((await waitIn('team-a', 'ApiToken', 'deploy')).status as any).tokenId;
    const old = Buffer.from((w().fake.stored('', 'secrets', 'team-a', 'deploy-api-token') as any).data.token, 'base64').toString('utf8');
    await w().core.deleteNamespacedSecret({ namespace: 'team-a', name: 'deploy-api-token' });
    const t = await waitFor('re-minted', async () => {
      const o = await w().get('ApiToken' as KindName, 'deploy', 'team-a');
      return (o?.status as any)?.tokenId && (o!.status as any).tokenId !== first && w().fake.stored('', 'secrets', 'team-a', 'deploy-api-token') ? o : undefined;
    });
    assert.ok(t);
    assert.equal((await w().svc.client(old).get('/api/projects')).status, 401);
    const fresh = Buffer.from((w().fake.stored('', 'secrets', 'team-a', 'deploy-api-token') as any).data.token, 'base64').toString('utf8');
    assert.equal((await w().svc.client(fresh).get('/api/projects')).status, 200);
  });

  it('deleting an Organization with deletionPolicy Retain releases the organisation (kept, no longer managed)', async () => {
    await applyOrg('temp', { displayName: 'Temp', namespaces: ['temp'] });
    const id = ((await waitOrg('temp')).status as any).organizationId;
    await deleteOrg('temp');
    await waitFor('Organization gone', async () => (await getOrg('temp')) === undefined);
    const org = (await w().svc.admin.get(`/admin/orgs/${id}`)).body;
    assert.equal(org.managed_by, null);
  });

  it('deleting an Organization with deletionPolicy Delete deletes the organisation', async () => {
    await applyOrg('gone', { displayName: 'Gone', namespaces: ['gone'], deletionPolicy: 'Delete' });
    const id = ((await waitOrg('gone')).status as any).organizationId;
    await deleteOrg('gone');
    await waitFor('Organization gone', async () => (await getOrg('gone')) === undefined);
    assert.equal((await w().svc.admin.get(`/admin/orgs/${id}`)).status, 404);
  });

  it('the operator held OPERATOR_KEY only, and Kubernetes never refused it (RBAC and owner-reference enforcement)', () => {
    const refused = w().fake.requests.filter((r) => r.user === OPERATOR_USER && r.status === 403);
    assert.deepEqual(refused.map((r) => `${r.method} ${r.path}`), []);
  });

  it('a Kubernetes refusal of a write (403: no update on flagsecrets/finalizers) becomes the Ready condition and a Warning Event', async () => {
    const without = grantsFromPermissions(POD_NS).map((g) => ({ ...g, rules: g.rules.filter((r) => !r.resources?.includes('flagsecrets/finalizers')) }));
    w().fake.enforceRbac(OPERATOR_USER, without);
    try {
      await applyIn('team-a', 'FlagSecret', 'web-flags', { projectRef: { name: 'web' } });
      const fs = await waitIn('team-a', 'FlagSecret', 'web-flags', 'KubernetesError');
      assert.match(readyOf(fs)!.message, /403.*cannot set blockOwnerDeletion.*flagsecrets\/finalizers/);
      const events = await w().core.listNamespacedEvent({ namespace: 'team-a' });
      assert.ok(events.items.some((e) => e.involvedObject?.name === 'web-flags' && e.type === 'Warning' && e.reason === 'KubernetesError' && /flagsecrets\/finalizers/.test(e.message ?? '')));
    } finally {
      w().fake.enforceRbac(OPERATOR_USER, grantsFromPermissions(POD_NS));
    }
    // With the chart's rule back, the next try mints the Secret and the FlagSecret is Ready.
    await waitFor('FlagSecret Ready', async () => readyOf(await w().get('FlagSecret', 'web-flags', 'team-a'))?.reason === 'Reconciled', 20_000);
    assert.ok(w().fake.stored('', 'secrets', 'team-a', 'web-flags-flag-secret'));
  });

  it('WATCH_NAMESPACE as a list: an operator with a Role in each listed namespace acts there and nowhere else', async () => {
    await Promise.all(w().operators.splice(0).map((o) => o.close()));
    const from = w().fake.requests.length;
    w().fake.enforceRbac(OPERATOR_USER, grantsFromPermissions(POD_NS, ['team-x', 'team-y']));
    await w().startOperator({ apiKey: OPERATOR_KEY, watchNamespaces: ['team-x', 'team-y'] });
    await applyOrg('wide', { displayName: 'Wide', namespaces: ['team-x', 'team-y', 'team-z'] });
    await waitOrg('wide');
    await applyIn('team-x', 'Project', 'p', { displayName: 'X', organizationRef: { name: 'wide' } });
    await applyIn('team-y', 'Project', 'p', { displayName: 'Y', organizationRef: { name: 'wide' } });
    await applyIn('team-z', 'Project', 'p', { displayName: 'Z', organizationRef: { name: 'wide' } });
    await waitIn('team-x', 'Project', 'p');
    await waitIn('team-y', 'Project', 'p');
    await new Promise((r) => setTimeout(r, 500));
    assert.equal((await w().get('Project', 'p', 'team-z'))?.status, undefined, 'team-z is not watched');
    const refused = w().fake.requests.slice(from).filter((r) => r.user === OPERATOR_USER && r.status === 403);
    assert.deepEqual(refused.map((r) => `${r.method} ${r.path}`), [], 'no cluster-wide list of namespaced kinds');
    assert.ok(w().fake.requests.slice(from).some((r) => r.user === OPERATOR_USER && r.path === '/apis/analytics.tally.dev/v1/namespaces/team-y/projects'));
  });
});
