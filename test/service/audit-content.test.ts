import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import type { Client } from '../support/http.js';

const OPERATOR_KEY = 'test-operator-key';
const ORGANIZATION = 'Organization/acme';
const FEATURE_FLAG = 'FeatureFlag/team-a/checkout';
const DAY = 86_400_000;

interface Entry {
  id: number;
  at: number;
  actor: { kind: string; id: number | null; resource?: string };
  organizationId: number | null;
  projectId?: number;
  action: string;
  target: { kind: string; id: number | null };
  before: any;
  after: any;
}

/**
 * The audit rows of the content domains (flags, reports, boards, cohorts, derived events,
 * calculated metrics, annotations, lexicon, privacy requests), made through the HTTP API and read
 * back from GET /api/audit-log: the actor (user, machine-access token, superadmin key, operator key
 * with its resource), the organisation and project, before and after, no secret anywhere, and no
 * row for a refused request.
 */
forEachBackend('audit log: content domains', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let pid: number;
  let admin: Client;
  let member: Client;
  let viewer: Client;
  let machine: Client;
  let operator: Client;
  const ids = { member: 0, machine: 0 };
  const secrets: string[] = [];

  before(async function () {
    this.timeout(120_000);
    t = await startTestService(backend, { OPERATOR_KEY });
    acme = await createTenant(t, 'AuditAcme');
    pid = acme.project.id;
    admin = t.client(acme.tokens.admin);
    member = t.client(acme.tokens.member);
    viewer = t.client(acme.tokens.viewer);
    ids.member = (await member.get('/api/account')).body.user.id;
    const minted = await acme.owner.post('/api/org/tokens', { name: 'ci', role: 'member' });
    assert.equal(minted.status, 201, minted.text);
    ids.machine = minted.body.id;
    machine = t.client(minted.body.token);
    operator = t.client(OPERATOR_KEY);
    // The operator key acts for a FeatureFlag only in an organisation an Organization manages and lists its namespace.
    const as = { headers: { 'x-tally-resource': ORGANIZATION } };
    assert.equal((await t.admin.post(`/admin/orgs/${acme.org.id}/adopt`, undefined, as)).status, 200);
    assert.equal((await t.admin.patch(`/admin/orgs/${acme.org.id}`, { namespaces: ['team-a'] }, as)).status, 200);
    const secret = await acme.owner.post(`/api/projects/${pid}/flag-secret`);
    secrets.push(acme.project.token, minted.body.token, ...(secret.status === 200 ? [secret.body.secret] : []));
  });

  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  /** Every row of the organisation newer than `since`, oldest first. */
  async function rowsSince(since: number): Promise<Entry[]> {
    const out: Entry[] = [];
    let cursor: string | null = null;
    for (;;) {
      const res: { status: number; body: { entries: Entry[]; nextCursor: string | null }; text: string } = await admin.get(`/api/audit-log?limit=200${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(res.status, 200, res.text);
      const newer = res.body.entries.filter((e) => e.id > since);
      out.push(...newer);
      if (newer.length < res.body.entries.length || res.body.nextCursor === null) break;
      cursor = res.body.nextCursor;
    }
    return out.reverse();
  }
  const lastId = async () => (await admin.get('/api/audit-log?limit=1')).body.entries[0]?.id ?? 0;

  /** The rows `change` wrote (it must answer 2xx), checked for the common fields. */
  async function audited(change: () => Promise<{ status: number; text: string }>): Promise<Entry[]> {
    const since = await lastId();
    const res = await change();
    assert.ok(res.status >= 200 && res.status < 300, `${res.status} ${res.text}`);
    const rows = await rowsSince(since);
    for (const r of rows) {
      assert.equal(r.organizationId, acme.org.id, JSON.stringify(r));
      assert.equal(r.projectId, pid, JSON.stringify(r));
      assert.match(r.action, new RegExp(`^${r.target.kind}\\.[a-z_]+$`));
    }
    return rows;
  }

  /** A refused request writes no row. */
  async function refused(status: number, change: () => Promise<{ status: number; text: string }>): Promise<void> {
    const since = await lastId();
    const res = await change();
    assert.equal(res.status, status, res.text);
    assert.deepEqual(await rowsSince(since), []);
  }

  const one = (rows: Entry[], action: string) => {
    assert.deepEqual(rows.map((r) => r.action), [action]);
    return rows[0];
  };
  const user = { kind: 'user', id: 0 };
  const byMember = () => ({ ...user, id: ids.member });
  const byMachine = () => ({ kind: 'token', id: ids.machine });

  it('flags: each change by user, token, superadmin and operator with its resource; the history route still answers; the rows stay after a delete', async () => {
    const created = one(await audited(() => member.post(`/api/flags?projectId=${pid}`, { key: 'audited', name: 'Audited', rules: [{ rolloutPct: 10 }] })), 'flag.created');
    const flagId = created.target.id!;
    assert.equal(created.target.kind, 'flag');
    assert.deepEqual(created.actor, byMember());
    assert.equal(created.before, null);
    assert.equal(created.after.key, 'audited');

    const updated = one(await audited(() => machine.put(`/api/flags/${flagId}`, { name: 'Renamed' })), 'flag.updated');
    assert.deepEqual(updated.actor, byMachine());
    assert.equal(updated.before.name, 'Audited');
    assert.equal(updated.after.name, 'Renamed');

    const off = one(await audited(() => t.admin.put(`/api/flags/${flagId}`, { active: false })), 'flag.deactivated');
    assert.deepEqual(off.actor, { kind: 'superadmin', id: null });
    assert.equal(off.before.active, true);
    assert.equal(off.after.active, false);

    // refused: invalid body, viewer, unknown cohort, not archived
    await refused(400, () => member.put(`/api/flags/${flagId}`, { rules: [{ rolloutPct: 101 }] }));
    await refused(403, () => viewer.put(`/api/flags/${flagId}`, { name: 'nope' }));
    await refused(409, () => member.delete(`/api/flags/${flagId}`));

    // the flag's own history is as before: newest first, the same actors
    const history = (await member.get(`/api/flags/${flagId}/events`)).body as Array<{ action: string; actor_user_id: number | null; actor_mcp_token_id: number | null }>;
    assert.deepEqual(history.map((e) => e.action), ['deactivated', 'updated', 'created']);
    assert.equal(history[2].actor_user_id, ids.member);
    assert.equal(history[1].actor_mcp_token_id, ids.machine);

    one(await audited(() => member.post(`/api/flags/${flagId}/archive`)), 'flag.archived');
    const deleted = one(await audited(() => member.delete(`/api/flags/${flagId}`)), 'flag.deleted');
    assert.equal(deleted.before.id, flagId);
    assert.equal(deleted.after, null);
    // the history goes with the flag, the audit log keeps every row
    assert.equal((await member.get(`/api/flags/${flagId}/events`)).status, 404);
    const kept = (await admin.get('/api/audit-log?targetKind=flag&limit=200')).body.entries.filter((e: Entry) => e.target.id === flagId).map((e: Entry) => e.action);
    assert.deepEqual(kept, ['flag.deleted', 'flag.archived', 'flag.deactivated', 'flag.updated', 'flag.created']);

    // the operator key with a FeatureFlag of a listed namespace: its resource is on the row and owns the flag
    const managed = one(await audited(() => operator.post(`/api/flags?projectId=${pid}`, { key: 'managed', name: 'Managed' }, { headers: { 'x-tally-resource': FEATURE_FLAG } })), 'flag.created');
    assert.deepEqual(managed.actor, { kind: 'operator', id: null, resource: FEATURE_FLAG });
    assert.equal(managed.after.managed_by, FEATURE_FLAG);
    await refused(409, () => member.put(`/api/flags/${managed.target.id}`, { name: 'taken over' }));
    // a namespace the organisation does not list: 403, nothing written
    await refused(403, () => operator.post(`/api/flags?projectId=${pid}`, { key: 'intruder', name: 'Intruder' }, { headers: { 'x-tally-resource': 'FeatureFlag/team-b/intruder' } }));
    await refused(403, () => operator.put(`/api/flags/${managed.target.id}`, { name: 'intruder' }, { headers: { 'x-tally-resource': 'FeatureFlag/team-b/checkout' } }));
    const released = one(await audited(() => operator.post(`/api/flags/${managed.target.id}/release`, undefined, { headers: { 'x-tally-resource': FEATURE_FLAG } })), 'flag.released');
    assert.equal(released.before.managed_by, FEATURE_FLAG);
    assert.equal(released.after.managed_by, null);
    // and the flag's history calls a release an update, as before
    assert.equal((await member.get(`/api/flags/${managed.target.id}/events`)).body[0].action, 'updated');
  });

  it('reports and boards: created, updated (cards included), deleted', async () => {
    const to = new Date().toISOString().slice(0, 10);
    const from = new Date(Date.now() - 7 * DAY).toISOString().slice(0, 10);
    const query = { event: 'Signup', unit: 'day', type: 'total', from, to };
    const report = one(await audited(() => machine.post(`/api/reports?projectId=${pid}`, { name: 'Signups', type: 'segmentation', query })), 'report.created');
    assert.deepEqual(report.actor, byMachine());
    assert.equal(report.after.name, 'Signups');
    await refused(400, () => member.post(`/api/reports?projectId=${pid}`, { name: 'Bad', type: 'funnel', query }));
    await refused(400, () => member.put(`/api/reports/${report.target.id}`, { type: 'funnel' }));
    const renamed = one(await audited(() => member.put(`/api/reports/${report.target.id}`, { name: 'Daily signups' })), 'report.updated');
    assert.deepEqual([renamed.before.name, renamed.after.name], ['Signups', 'Daily signups']);
    assert.deepEqual(renamed.actor, byMember());

    const board = one(await audited(() => member.post(`/api/boards?projectId=${pid}`, { name: 'Growth', cards: [{ reportId: report.target.id }] })), 'board.created');
    assert.deepEqual(board.after.cards.map((c: { report_id: number | null }) => c.report_id), [report.target.id]);
    await refused(400, () => member.put(`/api/boards/${board.target.id}`, { cards: [{ reportId: 999_999 }] }));
    const cards = one(await audited(() => member.put(`/api/boards/${board.target.id}`, { cards: [{ cardType: 'text', text: 'hello' }, { reportId: report.target.id }] })), 'board.updated');
    assert.deepEqual(cards.before.cards.map((c: { card_type: string }) => c.card_type), ['report']);
    assert.deepEqual(cards.after.cards.map((c: { card_type: string }) => c.card_type), ['text', 'report']);

    const gone = one(await audited(() => member.delete(`/api/reports/${report.target.id}`)), 'report.deleted');
    assert.equal(gone.before.name, 'Daily signups');
    assert.equal(gone.after, null);
    const boardGone = one(await audited(() => t.admin.delete(`/api/boards/${board.target.id}`)), 'board.deleted');
    assert.deepEqual(boardGone.actor, { kind: 'superadmin', id: null });
    assert.deepEqual(boardGone.before.cards.map((c: { card_type: string }) => c.card_type), ['text']);
  });

  it('cohorts, derived events, calculated metrics: created, updated (the merged definition), deleted; a taken name writes nothing', async () => {
    const definition = { op: 'and', criteria: [{ kind: 'behavior', event: 'Purchase', op: 'gte', count: 1, windowDays: 30 }] };
    const cohort = one(await audited(() => member.post(`/api/cohorts?projectId=${pid}`, { name: 'Buyers', definition })), 'cohort.created');
    assert.deepEqual(cohort.after.definition, definition);
    const renamed = one(await audited(() => machine.put(`/api/cohorts/${cohort.target.id}`, { name: 'Big buyers' })), 'cohort.updated');
    assert.deepEqual([renamed.before.name, renamed.after.name], ['Buyers', 'Big buyers']);
    one(await audited(() => member.delete(`/api/cohorts/${cohort.target.id}`)), 'cohort.deleted');

    const sources = [{ event: 'Page View', filters: [{ key: 'path', op: 'contains', value: '/pricing' }] }];
    const derived = one(await audited(() => member.post(`/api/definitions/events?projectId=${pid}`, { name: 'Pricing interest', sources })), 'derived_event.created');
    assert.deepEqual(derived.after.definition, { sources });
    await refused(409, () => member.post(`/api/definitions/events?projectId=${pid}`, { name: 'Pricing interest', sources }));
    one(await audited(() => member.delete(`/api/definitions/events/${derived.target.id}`)), 'derived_event.deleted');

    const metric = one(await audited(() => member.post(`/api/definitions/metrics?projectId=${pid}`, {
      name: 'Conversion', formula: 'A / B', metrics: [{ id: 'A', event: 'Purchase', type: 'unique' }, { id: 'B', event: 'Signup', type: 'unique' }],
    })), 'calculated_metric.created');
    await refused(400, () => member.put(`/api/definitions/metrics/${metric.target.id}`, { formula: 'A / C' }));
    const changed = one(await audited(() => member.put(`/api/definitions/metrics/${metric.target.id}`, { formula: 'A' })), 'calculated_metric.updated');
    assert.equal(changed.before.definition.formula, 'A / B');
    assert.equal(changed.after.definition.formula, 'A');
    assert.equal(changed.after.definition.metrics.length, 2);
  });

  it('a change in a project without organisation is recorded with organizationId null, not 0', async () => {
    const orphan = await t.admin.post('/api/projects', { name: 'no organisation' });
    assert.equal(orphan.status, 201);
    const day = new Date().toISOString().slice(0, 10);
    assert.equal((await t.admin.post(`/api/annotations?projectId=${orphan.body.id}`, { date: day, description: 'orphan' })).status, 201);
    const page = await t.admin.get(`/admin/audit-log?projectId=${orphan.body.id}&action=annotation.created`);
    assert.equal(page.status, 200);
    assert.equal(page.body.entries.length, 1);
    assert.equal(page.body.entries[0].organizationId, null);
    assert.equal((await t.admin.get('/admin/audit-log?organizationId=0')).status, 400);
  });

  it('annotations and the lexicon', async () => {
    const day = new Date().toISOString().slice(0, 10);
    const a = one(await audited(() => member.post(`/api/annotations?projectId=${pid}`, { date: day, description: 'launch' })), 'annotation.created');
    const edited = one(await audited(() => member.put(`/api/annotations/${a.target.id}`, { description: 'big launch' })), 'annotation.updated');
    assert.deepEqual([edited.before.description, edited.after.description], ['launch', 'big launch']);
    await refused(403, () => viewer.delete(`/api/annotations/${a.target.id}`));
    one(await audited(() => member.delete(`/api/annotations/${a.target.id}`)), 'annotation.deleted');

    const entry = one(await audited(() => member.put(`/api/lexicon/events/Signup?projectId=${pid}`, { description: 'a sign-up' })), 'lexicon.created');
    assert.equal(entry.before, null);
    assert.deepEqual([entry.after.kind, entry.after.name, entry.after.description], ['event', 'Signup', 'a sign-up']);
    const again = one(await audited(() => machine.put(`/api/lexicon/events/Signup?projectId=${pid}`, { hidden: true })), 'lexicon.updated');
    assert.equal(again.target.id, entry.target.id);
    assert.deepEqual([again.before.hidden, again.after.hidden, again.after.description], [false, true, 'a sign-up']);
    await refused(400, () => member.put(`/api/lexicon/properties/plan?projectId=${pid}`, { tags: 'not-a-list' }));
  });

  it('privacy requests: created by the caller, completed by the runner on the requester\'s behalf, never naming the ids', async function () {
    this.timeout(60_000);
    const rows = await audited(() => acme.owner.post(`/api/privacy/requests?projectId=${pid}`, { type: 'delete', distinctIds: ['person-to-forget@example.test'] }));
    const created = one(rows, 'privacy_request.created');
    const owner = (await acme.owner.get('/api/account')).body.user.id;
    assert.deepEqual(created.actor, { kind: 'user', id: owner });
    assert.deepEqual([created.after.type, created.after.status, created.after.distinct_id_count], ['delete', 'pending', 1]);
    let completed: Entry | undefined;
    for (let waited = 0; !completed; waited += 100) {
      assert.ok(waited < 30_000, 'the privacy request did not complete');
      await new Promise((r) => setTimeout(r, 100));
      completed = (await admin.get('/api/audit-log?action=privacy_request.completed')).body.entries.find((e: Entry) => e.target.id === created.target.id);
    }
    // After the runner's row, so a refusal is not credited with the completion landing meanwhile.
    await refused(403, () => admin.post(`/api/privacy/requests?projectId=${pid}`, { type: 'delete', distinctIds: ['x'] }));
    assert.deepEqual(completed.actor, { kind: 'user', id: owner });
    assert.deepEqual([completed.before.status, completed.after.status], ['running', 'completed']);
    const page = (await admin.get('/api/audit-log?limit=200')).text;
    assert.ok(!page.includes('person-to-forget'), 'a privacy request\'s ids are in the audit log');
  });

  it('no secret value anywhere in the organisation\'s audit rows', async () => {
    const page = (await admin.get('/api/audit-log?limit=200')).text;
    assert.ok(JSON.parse(page).entries.length > 20);
    assert.ok(secrets.length >= 2);
    for (const secret of secrets) assert.ok(!page.includes(secret), 'a secret is in the audit log');
  });
});
