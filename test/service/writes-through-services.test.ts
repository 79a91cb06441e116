import assert from 'node:assert/strict';
import fc from 'fast-check';
import { forEachBackend } from '../support/backends.js';
import { startTestService, type TestService } from '../support/service.js';
import { drained } from '../support/ingestion.js';
import { SchemaArbitraries } from '../support/openapi-arbitrary.js';
import { credentialsOf, operationsOf, partOf, phase, seedTenant, type Operation, type SeededTenant } from '../support/openapi-tenant.js';

/**
 * Every write goes through a service that records it in the audit log. Each non-GET `/api/*` and
 * `/admin/*` operation of /openapi.json is sent valid cases (filled from a seeded tenant, as the
 * OpenAPI fuzz test does, with the credentials the route takes); whenever an answer is 2xx and the
 * metadata store changed (every table but the audit log, minus what moves by itself), the audit
 * log must have gained a row. A new write route that bypasses a service fails here. A 2xx that
 * changes nothing (a query, an idempotent repeat such as archiving an archived flag) needs no row.
 *
 * SEED and CASES_PER_OPERATION (env WRITES_SEED, WRITES_CASES) replay or widen a run.
 */
const SEED = Number(process.env.WRITES_SEED ?? 20261129);
const CASES_PER_OPERATION = Number(process.env.WRITES_CASES ?? 4);

/** Non-GET operations whose changes a tenant does not audit, with the reason. */
const NOT_AUDITED: Record<string, string> = {
  // the caller's own choice of organisation in the console (a preference of the user, not a change to the organisation)
  'POST /api/account/current-organization': 'a user preference',
};

/** What moves by itself or is not tenant state: rate-limit counters, the results cache's change numbers and shared answers, board views, last use of a credential. */
const SKIPPED_TABLES = /^knex_|^sqlite_|rate|^results_versions$|^results_cache$|^board_views$|^audit_log$/;
const VOLATILE = new Set(['last_used_at']);

forEachBackend('every write goes through a service and leaves an audit row', (backend) => {
  let t: TestService;
  let seeded: SeededTenant;
  let arbs: SchemaArbitraries;
  let ops: Operation[] = [];
  let tables: string[] = [];

  before(async function () {
    this.timeout(180_000);
    t = await startTestService(backend, { RATE_LIMIT_PER_IP: '100000000', RATE_LIMIT_PER_PROJECT: '100000000', QUERY_RATE_PER_SECOND: '1000000', QUERY_RATE_BURST: '1000000' });
    seeded = await seedTenant(t, 'Writes');
    const doc = (await t.anon.get('/openapi.json')).body;
    arbs = new SchemaArbitraries(doc, seeded.anchors);
    ops = operationsOf(doc).filter((o) => o.method !== 'get' && /^\/(api|admin)\//.test(o.path)).sort((a, b) => phase(a) - phase(b));
    const db = t.svc.deps.db;
    const pg = db.client.config.client === 'pg';
    const listed = await db.raw(pg ? 'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()' : "SELECT name FROM sqlite_master WHERE type = 'table'");
    tables = ((pg ? listed.rows : listed) as Array<{ name: string }>).map((r) => r.name).filter((n) => !SKIPPED_TABLES.test(n)).sort();
    assert.ok(tables.includes('flags') && tables.includes('reports') && tables.includes('projects'), `metadata tables: ${tables}`);
  });

  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  /** Every row of the metadata store but the audit log's, once the buffer drained and privacy jobs ended. */
  async function fingerprint(): Promise<string> {
    await drained(t);
    const db = t.svc.deps.db;
    for (let waited = 0; ; waited += 50) {
      const [{ n }] = await db('privacy_requests').whereIn('status', ['pending', 'running']).count({ n: '*' });
      if (Number(n) === 0) break;
      assert.ok(waited < 30_000, 'privacy jobs still running after 30 s');
      await new Promise((r) => setTimeout(r, 50));
    }
    const out = await Promise.all(tables.map(async (name) => {
      const rows = (await db(name).select('*')) as Array<Record<string, unknown>>;
      return `${name}: ${rows.map((r) => JSON.stringify(Object.entries(r).filter(([k]) => !VOLATILE.has(k)))).sort().join('\n')}`;
    }));
    return out.join('\n');
  }
  const auditRows = async () => Number((await t.svc.deps.db('audit_log').count({ n: '*' }))[0].n);

  const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v) ?? '');
  function urlOf(o: Operation, c: { params: Record<string, unknown>; query: Record<string, unknown> }): string {
    const path = o.path.replace(/\{(\w+)\}/g, (_, n) => encodeURIComponent(text(c.params[n])));
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(c.query)) if (v !== undefined) for (const x of Array.isArray(v) ? v : [v]) qs.append(k, text(x));
    const s = qs.toString();
    return path + (s ? `?${s}` : '');
  }

  it('every 2xx that changed stored state added an audit row (valid cases of every non-GET /api and /admin operation)', async function () {
    this.timeout(900_000);
    const bypassed: string[] = [];
    const audited = new Set<string>();
    const seedOf = (key: string) => [...key].reduce((h, ch) => (Math.imul(h, 31) + ch.charCodeAt(0)) | 0, SEED);
    for (const o of ops) {
      const cases = fc.sample(fc.tuple(partOf(seeded, arbs, o, 'valid'), fc.constantFrom(...credentialsOf(o))), { seed: seedOf(o.key), numRuns: CASES_PER_OPERATION });
      for (const [c, cred] of cases) {
        const before = await fingerprint();
        const rows = await auditRows();
        const url = urlOf(o, c);
        const headers: Record<string, string> = { ...seeded.creds[cred] };
        if (c.body !== undefined) headers['content-type'] = 'application/json';
        const res = await fetch(t.url + url, { method: o.method.toUpperCase(), headers, body: c.body === undefined ? undefined : JSON.stringify(c.body) });
        const answer = await res.text();
        if (res.status >= 300) continue;
        if ((await fingerprint()) === before) continue;
        if ((await auditRows()) > rows) audited.add(o.key);
        else if (!NOT_AUDITED[o.key]) bypassed.push(`${o.key}: ${o.method.toUpperCase()} ${url} (${cred}) ${JSON.stringify(c.body)?.slice(0, 300)} → ${res.status} ${answer.slice(0, 200)}`);
      }
    }
    assert.deepEqual(bypassed, [], `a 2xx changed stored state without an audit row (WRITES_SEED=${SEED}):\n${bypassed.join('\n')}`);
    // Not vacuous: most write operations were reached with a change (38 of 65 at 4 cases each when written;
    // generated flag and report bodies rarely pass their cross-field checks), the content domains' among them.
    assert.ok(audited.size >= 30, `only ${audited.size} operations were reached with a change: ${[...audited].sort().join(', ')}`);
    for (const key of ['POST /api/flags', 'POST /api/flags/{id}/archive', 'PUT /api/boards/{id}', 'POST /api/cohorts', 'POST /api/definitions/events',
      'POST /api/definitions/metrics', 'POST /api/annotations', 'PUT /api/lexicon/events/{name}', 'POST /api/privacy/requests', 'DELETE /api/reports/{id}']) {
      assert.ok(audited.has(key), `${key} was never reached with a change (audited: ${[...audited].sort().join(', ')})`);
    }
  });
});
