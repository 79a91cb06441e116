import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createTenant, SUPERADMIN_KEY, type Tenant, type TestService } from './service.js';
import { drained } from './ingestion.js';
import type { Anchors, Schema, SchemaArbitraries } from './openapi-arbitrary.js';

/**
 * A tenant seeded so that valid cases generated from /openapi.json reach every handler: events,
 * profiles, one of each object (cohort, derived event, metric, flags, flag secret, report, board,
 * annotation, lexicon entry, privacy request, machine tokens), a credential of each kind, and
 * anchors that fill the schemas with those ids, event names and dates. Used by the OpenAPI fuzz
 * test and by writes-through-services.
 */

export const DAY = 86_400_000;
export const EVENTS = ['Signup', 'Purchase', 'Page View'];
export const PROPS = ['plan', 'amount', 'path', '$browser'];
export const USERS = Array.from({ length: 8 }, (_, i) => `u${i}`);

export type Cred = 'superadmin' | 'owner' | 'machine' | 'projectToken' | 'flagSecret' | 'basicMachine' | 'basicSuperadmin' | 'none' | 'garbage';
export interface Operation { method: string; path: string; op: Schema; key: string }

export interface SeededTenant {
  acme: Tenant;
  pid: number;
  /** The fixtures' ids by the path segment that names them (`flags`, `reports`, `members`, `cards`, …). */
  ids: Record<string, number[]>;
  /** Request headers of each credential kind. */
  creds: Record<Cred, Record<string, string>>;
  anchors: Anchors;
}

/** The credentials a route takes, by its security and path (the first ones the most often drawn). */
export function credentialsOf(o: Operation): Cred[] {
  const security: Array<Record<string, unknown>> = o.op.security ?? [];
  const kinds = security.flatMap((s) => Object.keys(s));
  if (kinds.includes('projectToken')) return ['projectToken'];
  if (kinds.includes('flagSecret')) return ['flagSecret'];
  if (kinds.includes('bearer')) return o.path.startsWith('/admin') ? ['superadmin', 'superadmin', 'superadmin', 'owner'] : ['owner', 'superadmin', 'machine'];
  if (o.path.endsWith('/import')) return ['basicMachine', 'basicSuperadmin'];
  return ['none'];
}

/** Phase of an operation: fixtures are deleted, archived, rotated or demoted only at the end. */
export function phase(o: Operation): number {
  if (o.method === 'delete') return o.path === '/api/projects/{id}' ? 4 : 3;
  if (/\/(release|archive|revive)$/.test(o.path) || o.path.endsWith('/flag-secret') || o.path.startsWith('/api/org/members/')) return 2;
  // An organisation's quota set low would refuse the /import cases with 429.
  if (o.method === 'patch' && o.path === '/admin/orgs/{id}') return 2;
  return 1;
}

/** Every operation of the document, `skip` left out. */
export function operationsOf(doc: { paths: Record<string, Record<string, Schema>> }, skip?: RegExp): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    if (skip?.test(path)) continue;
    for (const [method, op] of Object.entries(methods)) ops.push({ method, path, op, key: `${method.toUpperCase()} ${path}` });
  }
  return ops;
}

/** Values for one path parameter: the fixtures' ids in valid mode. */
export function pathParam(seeded: Pick<SeededTenant, 'ids'>, arbs: SchemaArbitraries, o: Operation, name: string, schema: Schema, mode: 'valid' | 'hostile'): fc.Arbitrary<unknown> {
  const { ids } = seeded;
  if (mode === 'valid') {
    if (name === 'userId') return fc.constantFrom(...ids.members);
    if (name === 'name') return fc.constantFrom(...EVENTS);
    if (name === 'key') return fc.constantFrom(...PROPS);
    if (name === 'distinctId') return fc.constantFrom(...USERS);
    const resource = o.path.replace(/^\/(api|admin)\//, '').replace(/\/\{id\}.*$/, '').replace(/^org\//, '');
    if (ids[resource]) return fc.constantFrom(...ids[resource]);
  }
  return arbs.of(schema, mode, `path:${name}`);
}

/** The parameters, query and body of one case of `o` (valid: filled from the fixtures; hostile: boundary and hostile values). */
export function partOf(seeded: Pick<SeededTenant, 'ids'>, arbs: SchemaArbitraries, o: Operation, mode: 'valid' | 'hostile') {
  const parameters: Schema[] = o.op.parameters ?? [];
  const bodySchema: Schema | undefined = o.op.requestBody?.content?.['application/json']?.schema;
  const params: Record<string, fc.Arbitrary<unknown>> = {};
  const query: Record<string, fc.Arbitrary<unknown>> = {};
  const required: string[] = [];
  for (const p of parameters) {
    if (p.in === 'path') params[p.name] = pathParam(seeded, arbs, o, p.name, p.schema, mode);
    else if (p.in === 'query') {
      query[p.name] = arbs.of(p.schema, mode, p.name);
      if (p.required || (mode === 'valid' && p.name === 'projectId')) required.push(p.name);
    }
  }
  return fc.record({
    params: fc.record(params),
    query: fc.record(query, { requiredKeys: mode === 'valid' ? required : [] }),
    body: bodySchema ? arbs.of(bodySchema, mode) : fc.constant(undefined),
  });
}

/** Creates the tenant `name` on `t` and its fixtures (events are drained into the event store). */
export async function seedTenant(t: TestService, name = 'Fuzz'): Promise<SeededTenant> {
  const acme = await createTenant(t, name);
  const pid = acme.project.id;
  const ids: Record<string, number[]> = {};
  const creds = {} as Record<Cred, Record<string, string>>;
  const owner = acme.owner;
  const must = async (p: Promise<{ status: number; body: any; text: string }>) => {
    const r = await p;
    assert.ok(r.status < 300, `fixture: ${r.status} ${r.text}`);
    return r.body;
  };
  const now = Date.now();
  const events = Array.from({ length: 120 }, (_, i) => ({
    event: EVENTS[i % 3],
    properties: { distinct_id: USERS[i % USERS.length], time: Math.floor((now - (i % 20) * DAY) / 1000), plan: i % 2 ? 'pro' : 'free', amount: i, path: i % 4 ? '/home' : '/pricing', $browser: 'Firefox', $insert_id: `fx-${i}` },
  }));
  await must(t.anon.post('/track', events, { headers: { 'x-service-token': acme.project.token } }));
  await must(t.anon.post('/engage', USERS.map((u, i) => ({ $distinct_id: u, $set: { plan: i % 2 ? 'pro' : 'free' } })), { headers: { 'x-service-token': acme.project.token } }));
  await drained(t);
  const q = { projectId: pid };
  const cohort = await must(owner.post('/api/cohorts', { ...q, name: 'Buyers', definition: { op: 'and', criteria: [{ kind: 'behavior', event: 'Purchase', op: 'gte', count: 1, windowDays: 30 }] } }));
  const derived = await must(owner.post('/api/definitions/events', { ...q, name: 'Pricing interest', sources: [{ event: 'Page View', filters: [{ key: 'path', op: 'contains', value: '/pricing' }] }] }));
  const metric = await must(owner.post('/api/definitions/metrics', { ...q, name: 'Conversion', formula: 'A / B', metrics: [{ id: 'A', event: 'Purchase', type: 'unique' }, { id: 'B', event: 'Signup', type: 'unique' }] }));
  const flag = await must(owner.post('/api/flags', { ...q, key: 'checkout', name: 'Checkout', active: true, rules: [{ rolloutPct: 50, cohortId: cohort.id }] }));
  const flag2 = await must(owner.post('/api/flags', { ...q, key: 'beta', name: 'Beta', active: true, rules: [{ rolloutPct: 100 }] }));
  const secret = (await must(owner.post(`/api/projects/${pid}/flag-secret`))).secret;
  const from = new Date(now - 30 * DAY).toISOString().slice(0, 10);
  const to = new Date(now).toISOString().slice(0, 10);
  const report = await must(owner.post('/api/reports', { ...q, name: 'Signups', type: 'segmentation', query: { event: 'Signup', unit: 'day', type: 'total', from, to } }));
  const board = await must(owner.post('/api/boards', { ...q, name: 'Growth', cards: [{ reportId: report.id }, { cardType: 'text', text: 'hello' }] }));
  const annotation = await must(owner.post('/api/annotations', { ...q, date: to, description: 'launch' }));
  await must(owner.put(`/api/lexicon/events/Signup?projectId=${pid}`, { description: 'a sign-up' }));
  const privacy = await must(owner.post(`/api/privacy/requests?projectId=${pid}`, { type: 'access', distinctIds: ['u1'] }));
  const machine = await must(owner.post('/api/org/tokens', { name: 'ci', role: 'admin' }));
  const spare = await must(owner.post('/api/org/tokens', { name: 'spare', role: 'viewer' }));
  for (const token of Object.values(acme.tokens)) await must(t.client(token).get('/api/account'));
  const members = (await must(owner.get('/api/org/members'))) as Array<{ user_id: number | null }>;
  Object.assign(ids, {
    orgs: [acme.org.id], projects: [pid], cohorts: [cohort.id], 'definitions/events': [derived.id], 'definitions/metrics': [metric.id],
    flags: [flag.id, flag2.id], reports: [report.id], boards: [board.id], annotations: [annotation.id], 'privacy/requests': [privacy.id],
    tokens: [spare.id], members: members.flatMap((m) => (m.user_id === null ? [] : [m.user_id])), cards: board.cards.map((c: { id: number }) => c.id),
  });

  creds.superadmin = { authorization: `Bearer ${SUPERADMIN_KEY}` };
  creds.owner = { authorization: `Bearer ${acme.tokens.owner}` };
  creds.machine = { authorization: `Bearer ${machine.token}` };
  creds.projectToken = { 'x-service-token': acme.project.token };
  creds.flagSecret = { authorization: `Bearer ${secret}` };
  creds.basicMachine = { authorization: `Basic ${Buffer.from(`${machine.token}:`).toString('base64')}` };
  creds.basicSuperadmin = { authorization: `Basic ${Buffer.from(`${SUPERADMIN_KEY}:`).toString('base64')}` };
  creds.none = {};
  creds.garbage = { authorization: 'Bearer not-a-credential', 'x-service-token': 'nope' };

  const day = (from: number, to: number) => fc.integer({ min: from, max: to }).map((d) => new Date(now + d * DAY).toISOString().slice(0, 10));
  const anchors: Anchors = {
    projectId: fc.oneof(fc.constant(pid), fc.constant(String(pid))),
    project_id: fc.constant(pid),
    event: fc.constantFrom(...EVENTS, 'Pricing interest'), bornEvent: fc.constantFrom(...EVENTS), returnEvent: fc.constantFrom(...EVENTS),
    key: fc.constantFrom(...PROPS), property: fc.constantFrom(...PROPS), breakdown: fc.constantFrom(...PROPS),
    distinct_id: fc.constantFrom(...USERS), distinctId: fc.constantFrom(...USERS), distinctIds: fc.array(fc.constantFrom(...USERS), { minLength: 1, maxLength: 3 }),
    cohortId: fc.constant(cohort.id), metricId: fc.constant(metric.id), definitionId: fc.constant(metric.id), reportId: fc.constant(report.id),
    cardId: fc.constantFrom(...ids.cards), flag_keys: fc.subarray(['checkout', 'beta']),
    token: fc.constant(acme.project.token), context: fc.constantFrom(...USERS).map((u) => JSON.stringify({ distinct_id: u })),
    formula: fc.oneof({ arbitrary: fc.constant('A'), weight: 3 }, fc.constantFrom('A / B', 'A + B * 2', '(A - B) / A')),
    from: day(-35, -8), to: day(-7, 0), date: day(-35, 0), month: fc.constant(new Date(now).toISOString().slice(0, 7)),
    time: fc.integer({ min: -20, max: 0 }).map((d) => Math.floor((now + d * DAY) / 1000)),
    // Few names and addresses, so concurrent cases of a batch race for the same unique key.
    name: fc.constantFrom('Alpha', 'Beta', 'Signup'), email: fc.constantFrom('a@example.test', 'b@example.test'),
    // A board save's optimistic lock: a valid save sends none (a random one is 409 board changed,
    // left to the hostile cases), so valid cases of PUT /api/boards/{id} reach the write.
    version: fc.constant(undefined),
  };

  return { acme, pid, ids, creds, anchors };
}
