import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { drained, ev, ingest } from '../support/ingestion.js';

const OPERATOR_KEY = 'boundary-operator-key';
const as = (resource: string) => ({ headers: { 'x-tally-resource': resource } });
const ATTACKER = 'Project/team-b/grab';

/**
 * The service's side of the boundary between teams, attacked through the HTTP API with the
 * operator key: a team-b resource claims to act on Acme (team-a) or on an organisation nobody
 * manages. Every attack answers 403 with its reason and leaves the victim's project, token, flag
 * secret and events as they were; the same calls from team-a work.
 */
forEachBackend('tenancy: the boundary between teams (API)', (backend) => {
  let t: TestService;
  let acme: { id: number };
  let acmeProject: { id: number; token: string; name: string };
  let acmeOwner: Tenant;
  let loose: Tenant;
  let looseSecret: string;
  let acmeSecret: string;
  const op = () => t.client(OPERATOR_KEY);

  before(async function () {
    this.timeout(120_000);
    t = await startTestService(backend, { OPERATOR_KEY });
    // Acme: made by hand with its owner and a project holding events, then adopted by Organization/acme (team-a).
    acmeOwner = await createTenant(t, 'Acme');
    acme = acmeOwner.org;
    acmeProject = acmeOwner.project;
    assert.equal((await op().post(`/admin/orgs/${acme.id}/adopt`, undefined, as('Organization/acme'))).status, 200);
    assert.equal((await op().patch(`/admin/orgs/${acme.id}`, { namespaces: ['team-a'] }, as('Organization/acme'))).status, 200);
    const bravo = await op().post('/admin/orgs', { name: 'Bravo', namespaces: ['team-b'] }, as('Organization/bravo'));
    assert.equal(bravo.status, 201, bravo.text);
    // An organisation nobody manages, made by the superadmin, with a project, events and a flag secret.
    loose = await createTenant(t, 'Loose');
    for (const [tenant, n] of [[acmeOwner, 3], [loose, 2]] as const) {
      const events = Array.from({ length: n }, (_, i) => ev('Signup', `u${i}`));
      assert.equal((await ingest(t, tenant.project.token).post('/track', events)).status, 200);
    }
    await drained(t);
    acmeSecret = (await acmeOwner.owner.post(`/api/projects/${acmeProject.id}/flag-secret`)).body.secret;
    looseSecret = (await loose.owner.post(`/api/projects/${loose.project.id}/flag-secret`)).body.secret;
    assert.equal((await acmeOwner.owner.post('/api/flags', { projectId: acmeProject.id, key: 'checkout', name: 'Checkout', rules: [{ rolloutPct: 100 }] })).status, 201);
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  const refused = (r: { status: number; body: any; text: string }, reason: string, ...named: string[]) => {
    assert.deepEqual([r.status, r.body.error, r.body.reason], [403, 'forbidden', reason], r.text);
    for (const n of named) assert.ok(String(r.body.message).includes(n), `message names ${n}: ${r.body.message}`);
  };
  const eventCount = async (tenant: Tenant) =>
    (await tenant.owner.get('/api/projects')).body.find((p: { id: number }) => p.id === tenant.project.id).event_count;
  const auditRows = async () => (await t.admin.get('/admin/audit-log?limit=200')).body.entries.length;
  const local = (secret: string) => t.anon.get('/flags/local-evaluation', { token: secret });

  describe('from Project/team-b/grab with the operator key', () => {
    let rowsBefore: number;
    before(async () => {
      rowsBefore = await auditRows();
    });

    it("adopting Acme's project: 403 AdoptionRefused, the project stays unmanaged and its owner renames it", async () => {
      refused(await op().post(`/api/projects/${acmeProject.id}/adopt`, undefined, as(ATTACKER)), 'AdoptionRefused', 'team-b');
      const p = (await acmeOwner.owner.get(`/api/projects/${acmeProject.id}`)).body;
      assert.deepEqual([p.managed_by, p.token], [null, acmeProject.token]);
      const renamed = await acmeOwner.owner.patch(`/api/projects/${acmeProject.id}`, { name: 'Acme web (ours)' });
      assert.deepEqual([renamed.status, renamed.body.name], [200, 'Acme web (ours)']);
    });

    it('creating a project in Acme or in the unmanaged organisation: 403 NamespaceNotAllowed naming namespace and organisation', async () => {
      const before = (await t.admin.get('/api/projects')).body.length;
      refused(await op().post(`/admin/orgs/${acme.id}/projects`, { name: 'grab' }, as(ATTACKER)), 'NamespaceNotAllowed', 'team-b', 'Acme');
      refused(await op().post(`/admin/orgs/${loose.org.id}/projects`, { name: 'grab' }, as(ATTACKER)), 'NamespaceNotAllowed', 'team-b', 'Loose');
      assert.equal((await t.admin.get('/api/projects')).body.length, before);
    });

    it("Acme's flag secret, its deletion, a token in Acme, its rename: 403; the superadmin key with the same claim is refused too", async () => {
      for (const c of [op(), t.admin]) {
        refused(await c.put(`/api/projects/${acmeProject.id}/flag-secret`, { secret: randomUUID() }, as('FlagSecret/team-b/grab')), 'NamespaceNotAllowed');
        refused(await c.delete(`/api/projects/${acmeProject.id}/flag-secret`, as('FlagSecret/team-b/grab')), 'NamespaceNotAllowed');
        refused(await c.delete(`/api/projects/${acmeProject.id}`, as(ATTACKER)), 'NamespaceNotAllowed');
        refused(await c.patch(`/api/projects/${acmeProject.id}`, { name: 'pwned' }, as(ATTACKER)), 'NamespaceNotAllowed');
        refused(await c.post(`/admin/orgs/${acme.id}/tokens`, { name: 'grab', role: 'admin' }, as('ApiToken/team-b/grab')), 'NamespaceNotAllowed');
        refused(await c.put(`/api/projects/${loose.project.id}/flag-secret`, { secret: randomUUID() }, as('FlagSecret/team-b/grab')), 'NamespaceNotAllowed');
      }
    });

    it('the operator key on an organisation nobody manages: no members, groups, tokens or renames, and no writes without X-Tally-Resource', async () => {
      refused(await op().post(`/admin/orgs/${loose.org.id}/members`, { email: 'spy@example.test', role: 'owner' }, as('Organization/bravo')), 'NotManaged');
      refused(await op().patch(`/admin/orgs/${loose.org.id}`, { name: 'pwned' }, as('Organization/bravo')), 'NotManaged');
      refused(await op().post(`/admin/orgs/${loose.org.id}/tokens`, { name: 'x', role: 'admin' }, as('Organization/bravo')), 'NotManaged');
      refused(await op().post('/admin/orgs', { name: 'sneaky' }, as(ATTACKER)), 'NotManaged');
      refused(await op().post(`/admin/orgs/${loose.org.id}/adopt`, undefined, as(ATTACKER)), 'NotManaged');
      const bare = await op().post(`/admin/orgs/${loose.org.id}/members`, { email: 'spy@example.test', role: 'owner' });
      assert.deepEqual([bare.status, bare.body.error], [400, 'X-Tally-Resource required']);
      assert.equal((await t.admin.get(`/admin/orgs/${loose.org.id}`)).body.name, 'Loose');
      assert.ok(!(await t.admin.get(`/admin/orgs/${loose.org.id}/members`)).body.some((m: { email: string }) => m.email === 'spy@example.test'));
    });

    it("the victims are untouched: project, token, flag secret (local evaluation), events; no audit row was written", async () => {
      const p = (await t.admin.get(`/api/projects/${acmeProject.id}`)).body;
      assert.deepEqual([p.managed_by, p.token, p.org_id], [null, acmeProject.token, acme.id]);
      assert.equal((await t.admin.get(`/admin/orgs/${acme.id}/tokens`)).body.length, 0);
      const defs = await local(acmeSecret);
      assert.equal(defs.status, 200, defs.text);
      assert.ok(JSON.stringify(defs.body).includes('checkout'));
      assert.equal((await local(looseSecret)).status, 200);
      assert.equal(await eventCount(acmeOwner), 3);
      assert.equal(await eventCount(loose), 2);
      assert.equal((await ingest(t, acmeProject.token).post('/track', ev('Still', 'u1'))).status, 200);
      // The owner's rename in the first case is the only change since the attacks began.
      assert.equal(await auditRows(), rowsBefore + 1);
    });
  });

  describe('from team-a, the namespace Organization/acme lists', () => {
    it('creates, renames, sets the flag secret of, mints a token in and adopts a project of Acme', async () => {
      const created = await op().post(`/admin/orgs/${acme.id}/projects`, { name: 'team-a app' }, as('Project/team-a/app'));
      assert.equal(created.status, 201, created.text);
      assert.equal((await op().patch(`/api/projects/${created.body.id}`, { name: 'team-a app 2' }, as('Project/team-a/app'))).status, 200);
      const secret = randomUUID();
      assert.equal((await op().put(`/api/projects/${created.body.id}/flag-secret`, { secret }, as('FlagSecret/team-a/app'))).status, 200);
      assert.equal((await local(secret)).status, 200);
      const token = await op().post(`/admin/orgs/${acme.id}/tokens`, { name: 'ci', role: 'viewer' }, as('ApiToken/team-a/ci'));
      assert.equal(token.status, 201, token.text);
      const adopted = await op().post(`/api/projects/${acmeProject.id}/adopt`, undefined, as('Project/team-a/web'));
      assert.deepEqual([adopted.status, adopted.body.managed_by], [200, 'Project/team-a/web']);
      assert.equal((await op().post(`/api/projects/${acmeProject.id}/release`, undefined, as('Project/team-a/web'))).status, 200);
      assert.equal((await op().delete(`/api/projects/${created.body.id}`, as('Project/team-a/app'))).status, 200);
    });
  });
});

forEachBackend('tenancy: TENANCY_ALLOW_UNMANAGED_ORGS=true (API)', (backend) => {
  let t: TestService;
  let loose: Tenant;
  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend, { OPERATOR_KEY, TENANCY_ALLOW_UNMANAGED_ORGS: 'true' });
    loose = await createTenant(t, 'Loose');
    assert.equal((await t.client(OPERATOR_KEY).post('/admin/orgs', { name: 'Acme', namespaces: ['team-a'] }, as('Organization/acme'))).status, 201);
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it('an organisation nobody manages is reachable again, but never adoptable by a namespaced resource', async () => {
    const op = t.client(OPERATOR_KEY);
    const created = await op.post(`/admin/orgs/${loose.org.id}/projects`, { name: 'migrated' }, as(ATTACKER));
    assert.deepEqual([created.status, created.body.managed_by], [201, ATTACKER], created.text);
    assert.equal((await op.put(`/api/projects/${loose.project.id}/flag-secret`, { secret: randomUUID() }, as('FlagSecret/team-b/x'))).status, 200);
    const adopt = await op.post(`/api/projects/${loose.project.id}/adopt`, undefined, as(ATTACKER));
    assert.deepEqual([adopt.status, adopt.body.reason], [403, 'AdoptionRefused'], adopt.text);
    assert.equal((await t.admin.get(`/api/projects/${loose.project.id}`)).body.managed_by, null);
    // An organisation an Organization manages still lists its namespaces.
    const acme = (await t.admin.get(`/admin/orgs?managedBy=${encodeURIComponent('Organization/acme')}`)).body[0];
    const grab = await op.post(`/admin/orgs/${acme.id}/projects`, { name: 'grab' }, as(ATTACKER));
    assert.deepEqual([grab.status, grab.body.reason], [403, 'NamespaceNotAllowed']);
  });
});

forEachBackend('tenancy: a namespace taken off the list lets go of what its resources manage (API)', (backend) => {
  let t: TestService;
  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend, { OPERATOR_KEY });
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it('its resources may still revoke their token and flag secret and release their flag and project, but change nothing else', async () => {
    const op = t.client(OPERATOR_KEY);
    const bravo = await op.post('/admin/orgs', { name: 'Bravo', namespaces: ['team-b'] }, as('Organization/bravo'));
    assert.equal(bravo.status, 201, bravo.text);
    const project = await op.post(`/admin/orgs/${bravo.body.id}/projects`, { name: 'shop' }, as('Project/team-b/shop'));
    assert.equal(project.status, 201, project.text);
    const pid = project.body.id;
    const secret = randomUUID();
    assert.equal((await op.put(`/api/projects/${pid}/flag-secret`, { secret }, as('FlagSecret/team-b/shop'))).status, 200);
    const flag = await op.post('/api/flags', { projectId: pid, key: 'checkout', name: 'Checkout', rules: [{ rolloutPct: 100 }] }, as('FeatureFlag/team-b/checkout'));
    assert.equal(flag.status, 201, flag.text);
    const minted = await op.post(`/admin/orgs/${bravo.body.id}/tokens`, { name: 'ci', role: 'viewer' }, as('ApiToken/team-b/ci'));
    assert.equal(minted.status, 201, minted.text);
    assert.equal((await t.client(minted.body.token).get('/api/projects')).status, 200);

    // The platform team takes team-b off Bravo's list.
    assert.equal((await op.patch(`/admin/orgs/${bravo.body.id}`, { namespaces: ['team-c'] }, as('Organization/bravo'))).status, 200);
    const rename = await op.patch(`/api/projects/${pid}`, { name: 'still mine?' }, as('Project/team-b/shop'));
    assert.deepEqual([rename.status, rename.body.reason], [403, 'NamespaceNotAllowed'], rename.text);
    const flagEdit = await op.put(`/api/flags/${flag.body.id}`, { active: false }, as('FeatureFlag/team-b/checkout'));
    assert.deepEqual([flagEdit.status, flagEdit.body.reason], [403, 'NamespaceNotAllowed'], flagEdit.text);
    // Any other resource name is held to the boundary (403): only the owner lets go.
    assert.equal((await op.delete(`/admin/orgs/${bravo.body.id}/tokens/${minted.body.id}`, as('ApiToken/team-b/other'))).status, 403);

    assert.equal((await op.delete(`/admin/orgs/${bravo.body.id}/tokens/${minted.body.id}`, as('ApiToken/team-b/ci'))).status, 200);
    assert.equal((await t.client(minted.body.token).get('/api/projects')).status, 401, 'the token no longer works');
    assert.equal((await op.delete(`/api/projects/${pid}/flag-secret`, as('FlagSecret/team-b/shop'))).status, 200);
    assert.equal((await t.anon.get('/flags/local-evaluation', { token: secret })).status, 401, 'the flag secret no longer works');
    assert.equal((await op.post(`/api/flags/${flag.body.id}/release`, undefined, as('FeatureFlag/team-b/checkout'))).status, 200);
    assert.equal((await t.admin.get(`/api/flags/${flag.body.id}`)).body.managed_by, null);
    assert.equal((await op.post(`/api/projects/${pid}/release`, undefined, as('Project/team-b/shop'))).status, 200);
    const kept = (await t.admin.get(`/api/projects/${pid}`)).body;
    assert.deepEqual([kept.managed_by, kept.name], [null, 'shop'], 'released, not deleted nor renamed');
    const actions = (await t.admin.get(`/admin/audit-log?organizationId=${bravo.body.id}&limit=200`)).body.entries.map((e: { action: string }) => e.action);
    for (const a of ['token.revoked', 'flag_secret.revoked', 'flag.released', 'project.released']) assert.ok(actions.includes(a), `${a} in ${actions}`);
  });
});
