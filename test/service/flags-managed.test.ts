import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';
import type { Client } from '../support/http.js';

/**
 * Flags and flag secrets owned by a Kubernetes resource: the protocol the operator relies on
 * (superadmin key + `X-Tally-Resource: <Kind>/<namespace>/<name>` on every write).
 */
forEachBackend('flags managed by a resource', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let other: Tenant;
  let member: Client;
  let seq = 0;
  const A = 'FeatureFlag/team-a/checkout';
  const B = 'FeatureFlag/team-b/checkout';
  const as = (resource?: string): { headers: Record<string, string> } => ({ headers: resource ? { 'x-tally-resource': resource } : {} });

  before(async () => {
    t = await sharedService(backend);
    acme = await createTenant(t, 'ManagedAcme');
    other = await createTenant(t, 'ManagedOther');
    member = t.client(acme.tokens.member);
    // Resources act only inside the boundary between teams: Acme's Organization lists their namespaces.
    const org = as('Organization/managed-acme');
    assert.equal((await t.admin.post(`/admin/orgs/${acme.org.id}/adopt`, undefined, org)).status, 200);
    assert.equal((await t.admin.patch(`/admin/orgs/${acme.org.id}`, { namespaces: ['team-a', 'team-b', 'find'] }, org)).status, 200);
  });

  const db = () => t.svc.deps.db;
  const body = () => ({ projectId: acme.project.id, key: `managed-${seq++}`, name: 'Managed', rules: [{ rolloutPct: 100 }] });
  const createAs = async (resource: string) => {
    const r = await t.admin.post('/api/flags', body(), as(resource));
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  };
  const eventsOf = async (id: number) => (await member.get(`/api/flags/${id}/events`)).body as Array<Record<string, unknown>>;
  const flagRow = async (id: number) => (await t.admin.get(`/api/flags/${id}`)).body;
  const refused = (r: { status: number; body: unknown }, resource: string) =>
    assert.deepEqual([r.status, r.body], [409, { error: 'managed by resource', resource }]);

  describe('create and find by owner', () => {
    it('POST with the superadmin key and the header stores managed_by and names the resource in the audit row', async () => {
      const flag = await createAs(A);
      assert.equal(flag.managed_by, A);
      assert.equal((await flagRow(flag.id)).managed_by, A);
      const [created] = await eventsOf(flag.id);
      assert.equal(created.action, 'created');
      assert.equal(created.actor_resource, A);
      assert.equal(created.actor_user_id, null);
      assert.equal((created.after as { managed_by: string }).managed_by, A);
    });

    it('the header counts only with the superadmin key: a member creating with it makes an unmanaged flag', async () => {
      const r = await member.post('/api/flags', body(), as(A));
      assert.equal(r.status, 201);
      assert.equal(r.body.managed_by, null);
      const [created] = await eventsOf(r.body.id);
      assert.equal(created.actor_resource, null);
      assert.equal(typeof created.actor_user_id, 'number');
    });

    it('a malformed header with the superadmin key is 400 and writes nothing', async () => {
      const [{ n: before }] = await db()('flags').count({ n: '*' });
      for (const bad of ['checkout', 'FeatureFlag/ns', 'FeatureFlag/NS/x', `FeatureFlag/ns/${'x'.repeat(400)}`]) {
        const r = await t.admin.post('/api/flags', body(), as(bad));
        assert.equal(r.status, 400, bad);
        assert.match(r.body.error, /X-Tally-Resource/);
      }
      const [{ n: after }] = await db()('flags').count({ n: '*' });
      assert.equal(Number(after), Number(before));
    });

    it('GET /api/flags?managedBy= finds the owner\'s flag, archived ones with archived=1, and nothing for another owner', async () => {
      const resource = `FeatureFlag/find/f${seq}`;
      const flag = await createAs(resource);
      await createAs(`FeatureFlag/find/other${seq}`);
      const q = `/api/flags?projectId=${acme.project.id}&managedBy=${encodeURIComponent(resource)}`;
      assert.deepEqual((await t.admin.get(q)).body.map((f: { id: number }) => f.id), [flag.id]);
      assert.deepEqual((await member.get(q)).body.map((f: { id: number }) => f.id), [flag.id]);
      assert.equal((await t.admin.post(`/api/flags/${flag.id}/archive`, undefined, as(resource))).status, 200);
      assert.deepEqual((await t.admin.get(q)).body, []);
      assert.deepEqual((await t.admin.get(`${q}&archived=1`)).body.map((f: { id: number }) => f.id), [flag.id]);
      assert.deepEqual((await t.admin.get(`/api/flags?projectId=${acme.project.id}&managedBy=${encodeURIComponent(B)}&archived=1`)).body, []);
      const all = (await member.get(`/api/flags?projectId=${acme.project.id}`)).body as Array<{ managed_by: string | null }>;
      assert.ok(all.every((f) => 'managed_by' in f));
    });
  });

  describe('writes to a managed flag', () => {
    const writes: Array<[string, (c: Client, id: number, resource?: string) => Promise<{ status: number; body: any }>]> = [
      ['PUT', (c, id, r) => c.put(`/api/flags/${id}`, { name: 'Renamed' }, as(r))],
      ['archive', (c, id, r) => c.post(`/api/flags/${id}/archive`, undefined, as(r))],
      ['DELETE', (c, id, r) => c.delete(`/api/flags/${id}`, as(r))],
    ];
    for (const [what, write] of writes) {
      it(`${what}: 409 for a user, for the superadmin without the header and with another resource's header; nothing changes`, async () => {
        const flag = await createAs(A);
        if (what === 'DELETE') assert.equal((await t.admin.post(`/api/flags/${flag.id}/archive`, undefined, as(A))).status, 200);
        const before = await flagRow(flag.id);
        const eventsBefore = await eventsOf(flag.id);
        for (const [c, r] of [[acme.owner, undefined], [member, A], [t.admin, undefined], [t.admin, B]] as const) {
          refused(await write(c, flag.id, r), A);
        }
        assert.deepEqual(await flagRow(flag.id), before);
        assert.deepEqual(await eventsOf(flag.id), eventsBefore);
      });
    }

    it('revive: 409 unless the owning resource asks', async () => {
      const flag = await createAs(A);
      assert.equal((await t.admin.post(`/api/flags/${flag.id}/archive`, undefined, as(A))).status, 200);
      refused(await member.post(`/api/flags/${flag.id}/revive`), A);
      refused(await t.admin.post(`/api/flags/${flag.id}/revive`, undefined, as(B)), A);
      const r = await t.admin.post(`/api/flags/${flag.id}/revive`, undefined, as(A));
      assert.equal(r.status, 200);
      assert.equal(r.body.archived_at, null);
    });

    it('the owning resource updates, archives and deletes; each audit row names it', async () => {
      const flag = await createAs(A);
      const put = await t.admin.put(`/api/flags/${flag.id}`, { name: 'By operator', active: false, managed_by: 'ignored' }, as(A));
      assert.equal(put.status, 200, JSON.stringify(put.body));
      assert.equal(put.body.name, 'By operator');
      assert.equal(put.body.managed_by, A);
      assert.equal((await t.admin.post(`/api/flags/${flag.id}/archive`, undefined, as(A))).status, 200);
      const events = await eventsOf(flag.id);
      assert.deepEqual(events.map((e) => [e.action, e.actor_resource]), [['archived', A], ['deactivated', A], ['created', A]]);
      assert.equal((await t.admin.delete(`/api/flags/${flag.id}`, as(A))).status, 200);
      assert.equal((await t.admin.get(`/api/flags/${flag.id}`)).status, 404);
    });

    it('changes to an unmanaged flag through a resource are allowed, keep it unmanaged, and name the resource', async () => {
      const flag = (await member.post('/api/flags', body())).body;
      const put = await t.admin.put(`/api/flags/${flag.id}`, { description: 'via resource' }, as(A));
      assert.equal(put.status, 200);
      assert.equal(put.body.managed_by, null);
      const [updated] = await eventsOf(flag.id);
      assert.deepEqual([updated.action, updated.actor_resource], ['updated', A]);
      assert.equal((await member.put(`/api/flags/${flag.id}`, { description: 'by a member' })).status, 200);
    });
  });

  describe('release (Retain)', () => {
    it('needs the superadmin key (401 otherwise) and the owning resource (409 otherwise)', async () => {
      const flag = await createAs(A);
      assert.equal((await acme.owner.post(`/api/flags/${flag.id}/release`, undefined, as(A))).status, 401);
      assert.equal((await t.anon.post(`/api/flags/${flag.id}/release`, undefined, as(A))).status, 401);
      refused(await t.admin.post(`/api/flags/${flag.id}/release`), A);
      refused(await t.admin.post(`/api/flags/${flag.id}/release`, undefined, as(B)), A);
      assert.equal((await flagRow(flag.id)).managed_by, A);
      assert.equal((await t.admin.post('/api/flags/999999999/release', undefined, as(A))).status, 404);
    });

    it('sets managed_by to null with an audit row naming the resource; then anyone with access may write', async () => {
      const flag = await createAs(A);
      const r = await t.admin.post(`/api/flags/${flag.id}/release`, undefined, as(A));
      assert.equal(r.status, 200);
      assert.equal(r.body.managed_by, null);
      const [released] = await eventsOf(flag.id);
      assert.deepEqual([released.action, released.actor_resource], ['updated', A]);
      assert.equal((released.before as { managed_by: string }).managed_by, A);
      assert.equal((released.after as { managed_by: string | null }).managed_by, null);
      assert.equal((await member.put(`/api/flags/${flag.id}`, { name: 'Mine now' })).status, 200);
      // Releasing an unmanaged flag changes nothing and writes no event.
      const count = (await eventsOf(flag.id)).length;
      assert.equal((await t.admin.post(`/api/flags/${flag.id}/release`, undefined, as(A))).status, 200);
      assert.equal((await eventsOf(flag.id)).length, count);
    });
  });

  describe('flag secret', () => {
    const secretPath = (p = acme.project.id) => `/api/projects/${p}/flag-secret`;
    const local = (secret: string) => t.anon.get('/flags/local-evaluation', { token: secret });

    it('PUT needs the superadmin key and a uuid; an unknown project is 404', async () => {
      assert.equal((await acme.owner.put(secretPath(), { secret: randomUUID() })).status, 401);
      assert.equal((await t.anon.put(secretPath(), { secret: randomUUID() })).status, 401);
      const bad = await t.admin.put(secretPath(), { secret: 'not-a-uuid' });
      assert.equal(bad.status, 400);
      assert.match(bad.body.error, /^secret: /);
      assert.equal((await t.admin.put(secretPath(), { secret: randomUUID(), extra: 1 })).status, 400);
      assert.equal((await t.admin.put(secretPath(999_999_999), { secret: randomUUID() })).status, 404);
    });

    it('PUT without the header sets the secret (stored as SHA-256) and leaves it unmanaged', async () => {
      const secret = randomUUID();
      assert.deepEqual((await t.admin.put(secretPath(), { secret })).body, { ok: true });
      assert.equal((await local(secret)).status, 200);
      const row = await db()('projects').where({ id: acme.project.id }).first('flag_secret_hash');
      assert.match(row.flag_secret_hash, /^[0-9a-f]{64}$/);
      assert.notEqual(row.flag_secret_hash, secret);
      const rotated = await acme.owner.post(secretPath());
      assert.equal(rotated.status, 200);
      assert.equal((await local(secret)).status, 401);
      assert.equal((await local(rotated.body.secret)).status, 200);
    });

    it('PUT with the header makes the secret managed: rotate and revoke answer 409 except for that resource; its DELETE revokes and releases', async () => {
      const S = 'FlagSecret/team-a/acme';
      const first = randomUUID();
      assert.equal((await t.admin.put(secretPath(), { secret: first }, as(S))).status, 200);
      assert.equal((await local(first)).status, 200);
      for (const [c, r] of [[acme.owner, undefined], [acme.owner, S], [t.admin, undefined], [t.admin, 'FlagSecret/team-a/second']] as const) {
        refused(await c.post(secretPath(), undefined, as(r)), S);
        refused(await c.delete(secretPath(), as(r)), S);
      }
      // A second resource (or the superadmin without the header) cannot set it either.
      refused(await t.admin.put(secretPath(), { secret: randomUUID() }, as('FlagSecret/team-a/second')), S);
      refused(await t.admin.put(secretPath(), { secret: randomUUID() }), S);
      assert.equal((await local(first)).status, 200);
      // The owner changes its value (the referenced Secret changed) and rotates.
      const second = randomUUID();
      assert.equal((await t.admin.put(secretPath(), { secret: second }, as(S))).status, 200);
      assert.equal((await local(first)).status, 401);
      assert.equal((await local(second)).status, 200);
      const rotated = await t.admin.post(secretPath(), undefined, as(S));
      assert.equal(rotated.status, 200);
      refused(await acme.owner.post(secretPath()), S);
      // Revoke by the owner resource: the secret stops working and is no longer managed.
      assert.deepEqual((await t.admin.delete(secretPath(), as(S))).body, { ok: true });
      assert.equal((await local(rotated.body.secret)).status, 401);
      const minted = await acme.owner.post(secretPath());
      assert.equal(minted.status, 200);
      assert.equal((await local(minted.body.secret)).status, 200);
      assert.equal((await acme.owner.delete(secretPath())).status, 200);
    });

    it('a secret another project already has is 409 and changes nothing', async () => {
      const secret = randomUUID();
      assert.equal((await t.admin.put(secretPath(other.project.id), { secret })).status, 200);
      const before = await db()('projects').where({ id: acme.project.id }).first('flag_secret_hash');
      const r = await t.admin.put(secretPath(), { secret });
      assert.equal(r.status, 409);
      assert.equal(r.body.error, 'flag secret in use');
      assert.deepEqual(await db()('projects').where({ id: acme.project.id }).first('flag_secret_hash'), before);
    });
  });
});
