import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import type { Client } from '../support/http.js';

/**
 * The authorisation matrix of the reports, boards, annotations and lexicon routes: every route,
 * every caller (users of each role, machine-access tokens, the superadmin key, the operator key: 403). Viewers read and
 * run, members and above also write, anonymous callers get 401,
 * another organisation's owner gets 404 for ids in paths and 403 for a foreign projectId.
 */
type Ids = { report: number; board: number; card: number; annotation: number; pid: number };
interface Row {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** OpenAPI path, as /openapi.json lists it. */
  path: string;
  url: (ids: Ids) => string;
  body?: (ids: Ids) => unknown;
  write: boolean;
  /** `id`: the object is addressed by a path id (foreign: 404); `project`: by projectId (foreign: 403). */
  scope: 'id' | 'project';
  status?: number;
}

const seg = { event: 'view', from: '2024-01-01', to: '2024-01-02', unit: 'day', type: 'total' };
const ROWS: Row[] = [
  { method: 'GET', path: '/api/reports', url: (i) => `/api/reports?projectId=${i.pid}`, write: false, scope: 'project' },
  { method: 'POST', path: '/api/reports', url: (i) => `/api/reports?projectId=${i.pid}`, body: () => ({ name: 'r', type: 'segmentation', query: seg }), write: true, scope: 'project', status: 201 },
  { method: 'GET', path: '/api/reports/{id}', url: (i) => `/api/reports/${i.report}`, write: false, scope: 'id' },
  { method: 'PUT', path: '/api/reports/{id}', url: (i) => `/api/reports/${i.report}`, body: () => ({ name: 'renamed' }), write: true, scope: 'id' },
  { method: 'DELETE', path: '/api/reports/{id}', url: (i) => `/api/reports/${i.report}`, write: true, scope: 'id' },
  { method: 'POST', path: '/api/reports/{id}/run', url: (i) => `/api/reports/${i.report}/run`, write: false, scope: 'id' },
  { method: 'GET', path: '/api/reports/{id}/run', url: (i) => `/api/reports/${i.report}/run?format=csv`, write: false, scope: 'id' },
  { method: 'GET', path: '/api/boards', url: (i) => `/api/boards?projectId=${i.pid}`, write: false, scope: 'project' },
  { method: 'POST', path: '/api/boards', url: (i) => `/api/boards?projectId=${i.pid}`, body: (i) => ({ name: 'b', cards: [{ reportId: i.report }] }), write: true, scope: 'project', status: 201 },
  { method: 'GET', path: '/api/boards/{id}', url: (i) => `/api/boards/${i.board}`, write: false, scope: 'id' },
  { method: 'PUT', path: '/api/boards/{id}', url: (i) => `/api/boards/${i.board}`, body: () => ({ cards: [] }), write: true, scope: 'id' },
  { method: 'DELETE', path: '/api/boards/{id}', url: (i) => `/api/boards/${i.board}`, write: true, scope: 'id' },
  { method: 'POST', path: '/api/boards/{id}/run', url: (i) => `/api/boards/${i.board}/run`, write: false, scope: 'id' },
  { method: 'GET', path: '/api/boards/{id}/run', url: (i) => `/api/boards/${i.board}/run?format=csv&cardId=${i.card}`, write: false, scope: 'id' },
  { method: 'GET', path: '/api/annotations', url: (i) => `/api/annotations?projectId=${i.pid}`, write: false, scope: 'project' },
  { method: 'POST', path: '/api/annotations', url: (i) => `/api/annotations?projectId=${i.pid}`, body: () => ({ date: '2024-01-01', description: 'n' }), write: true, scope: 'project', status: 201 },
  { method: 'GET', path: '/api/annotations/{id}', url: (i) => `/api/annotations/${i.annotation}`, write: false, scope: 'id' },
  { method: 'PUT', path: '/api/annotations/{id}', url: (i) => `/api/annotations/${i.annotation}`, body: () => ({ description: 'm' }), write: true, scope: 'id' },
  { method: 'DELETE', path: '/api/annotations/{id}', url: (i) => `/api/annotations/${i.annotation}`, write: true, scope: 'id' },
  { method: 'GET', path: '/api/lexicon/events', url: (i) => `/api/lexicon/events?projectId=${i.pid}`, write: false, scope: 'project' },
  { method: 'GET', path: '/api/lexicon/properties', url: (i) => `/api/lexicon/properties?projectId=${i.pid}`, write: false, scope: 'project' },
  { method: 'PUT', path: '/api/lexicon/events/{name}', url: (i) => `/api/lexicon/events/view?projectId=${i.pid}`, body: () => ({ hidden: true }), write: true, scope: 'project' },
  { method: 'PUT', path: '/api/lexicon/properties/{key}', url: (i) => `/api/lexicon/properties/plan?projectId=${i.pid}`, body: () => ({ tags: ['x'] }), write: true, scope: 'project' },
];
const TAGS = new Set(['Reports', 'Boards', 'Annotations', 'Lexicon']);

forEachBackend('reports, boards, annotations, lexicon: authorisation matrix', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let other: Tenant;
  const machine: Record<'member' | 'viewer', string> = { member: '', viewer: '' };
  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend, { OPERATOR_KEY: 'mx-operator-key' });
    tenant = await createTenant(t, 'mx');
    other = await createTenant(t, 'mx-other');
    for (const role of ['member', 'viewer'] as const) {
      const minted = await tenant.owner.post('/api/org/tokens', { name: `${role} bot`, role });
      assert.equal(minted.status, 201, minted.text);
      machine[role] = minted.body.token;
    }
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  /** Fresh objects for one call, so a DELETE in one cell does not change another cell's answer. */
  const fixture = async (): Promise<Ids> => {
    const pid = tenant.project.id;
    const report = (await t.admin.post('/api/reports', { projectId: pid, name: 'r', type: 'segmentation', query: seg })).body.id;
    const board = (await t.admin.post('/api/boards', { projectId: pid, name: 'b', cards: [{ reportId: report }] })).body;
    const annotation = (await t.admin.post('/api/annotations', { projectId: pid, date: '2024-01-01', description: 'a' })).body.id;
    return { report, board: board.id, card: board.cards[0].id, annotation, pid };
  };

  it('every route of the four tags is in /openapi.json and in the matrix', async () => {
    const doc = (await t.anon.get('/openapi.json')).body;
    const served: string[] = [];
    for (const [path, ops] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) if (op.tags?.some((tag: string) => TAGS.has(tag))) served.push(`${method.toUpperCase()} ${path}`);
    }
    assert.deepEqual(served.sort(), ROWS.map((r) => `${r.method} ${r.path}`).sort());
  });

  it('each role, the superadmin, anonymous and another organisation, on every route', async function () {
    this.timeout(120_000);
    const callers: Array<[string, Client, (r: Row) => number]> = [
      ['anonymous', t.anon, () => 401],
      ['superadmin', t.admin, (r) => r.status ?? 200],
      ...(['owner', 'admin', 'member'] as const).map((role): [string, Client, (r: Row) => number] => [role, t.client(tenant.tokens[role]), (r) => r.status ?? 200]),
      ['viewer', t.client(tenant.tokens.viewer), (r) => (r.write ? 403 : r.status ?? 200)],
      ['member machine token', t.client(machine.member), (r) => r.status ?? 200],
      ['viewer machine token', t.client(machine.viewer), (r) => (r.write ? 403 : r.status ?? 200)],
      ['foreign owner', t.client(other.tokens.owner), (r) => (r.scope === 'id' ? 404 : 403)],
      // OPERATOR_KEY reaches no tenant's reports, boards, annotations or lexicon.
      ['operator key', t.client('mx-operator-key'), () => 403],
    ];
    const failures: string[] = [];
    for (const row of ROWS) {
      for (const [who, client, expected] of callers) {
        const ids = await fixture();
        const res = await client.request(row.method, row.url(ids), row.body?.(ids));
        if (res.status !== expected(row)) failures.push(`${row.method} ${row.path} as ${who}: ${res.status} (expected ${expected(row)}) ${res.text.slice(0, 120)}`);
      }
    }
    assert.deepEqual(failures, []);
  });
});
