import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { createClient } from '@clickhouse/client';
import { NatsServer, freePort, startRole, tempDir, waitFor, type Child } from '../support/processes.js';
import { requireServices } from '../support/backends.js';
import { Client } from '../support/http.js';

/**
 * Two API processes (`api` role, child processes) on one PostgreSQL, ClickHouse and nats-server,
 * requests alternating between them: ingestion's windows, the `/api/query/*` and
 * `/flags/local-evaluation` buckets and the monthly quota refuse at the same total as one process
 * would; the `/flags/evaluate` bucket is per process by design (docs/hardening.md), so two
 * replicas serve twice its burst.
 */
describe('limits across two API replicas (PostgreSQL, ClickHouse, nats-server)', function () {
  this.timeout(180_000);
  const SUPERADMIN_KEY = 'replicas-superadmin-key';
  const logDir = tempDir('replicas-logs-');
  const children: Child[] = [];
  let nats: NatsServer;
  let pgDb: string;
  let chDb: string;
  let a: Client;
  let b: Client;

  async function startApi(name: string, env: Record<string, string>): Promise<string> {
    const port = await freePort();
    const api = startRole(name, 'api', { ...env, PORT: String(port) }, logDir);
    children.push(api);
    const url = `http://127.0.0.1:${port}`;
    await waitFor(`${name} ready (log: ${api.logFile})`, async () => (await fetch(`${url}/health/ready`)).status === 200, 60_000, 250);
    return url;
  }

  before(async function () {
    requireServices(this, 'TEST_DATABASE_URL', 'TEST_CLICKHOUSE_URL', 'TEST_NATS_URL');
    nats = await NatsServer.start();
    pgDb = `rl_${randomBytes(4).toString('hex')}`;
    chDb = pgDb;
    const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${pgDb}`);
    await admin.end();
    const dbUrl = new URL(process.env.TEST_DATABASE_URL!);
    dbUrl.pathname = `/${pgDb}`;
    const env = {
      DATABASE_URL: dbUrl.toString(),
      CLICKHOUSE_URL: process.env.TEST_CLICKHOUSE_URL!,
      CLICKHOUSE_DATABASE: chDb,
      NATS_URL: nats.url,
      SUPERADMIN_KEY,
      LOG_LEVEL: 'error',
      DATA_DIR: path.join(logDir, 'data'),
      HOST: '127.0.0.1',
      RATE_LIMIT_PER_IP: '1000',
      RATE_LIMIT_PER_PROJECT: '6',
      RATE_LIMIT_WINDOW_MS: '60000',
      QUERY_RATE_PER_SECOND: '1',
      QUERY_RATE_BURST: '4',
      FLAGS_LOCAL_RATE_PER_SECOND: '1',
      FLAGS_LOCAL_RATE_BURST: '3',
      FLAGS_EVALUATE_RATE_PER_SECOND: '1',
      FLAGS_EVALUATE_RATE_BURST: '3',
    };
    // One after the other: the first migrates both stores.
    a = new Client(await startApi('api-a', env), SUPERADMIN_KEY);
    b = new Client(await startApi('api-b', env), SUPERADMIN_KEY);
  });

  after(async function () {
    for (const c of children) await c.kill('SIGTERM', 10_000).catch(() => undefined);
    await nats?.close();
    if (pgDb) {
      const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${pgDb} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
      const ch = createClient({ url: process.env.TEST_CLICKHOUSE_URL });
      await ch.command({ query: `DROP DATABASE IF EXISTS ${chDb}` }).catch(() => undefined);
      await ch.close();
    }
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') for (const c of children) console.log(`--- ${c.name} (${c.logFile})\n${c.log().slice(-3000)}`);
  });

  async function newProject(name: string, quota: number | null = null) {
    const org = (await a.post('/admin/orgs', { name, monthlyEventQuota: quota })).body;
    const project = (await a.post(`/admin/orgs/${org.id}/projects`, { name })).body;
    return project as { id: number; token: string };
  }

  /** `n` requests, replica A and B in turn; the statuses in order, each 429 checked for its envelope. */
  async function alternate(n: number, send: (c: Client, i: number) => Promise<{ status: number; body: any; headers: Headers }>, error = 'rate limited') {
    const statuses: number[] = [];
    for (let i = 0; i < n; i++) {
      const r = await send(i % 2 === 0 ? a : b, i);
      statuses.push(r.status);
      if (r.status === 429) {
        assert.deepEqual(r.body, { status: 0, error });
        assert.ok(Number(r.headers.get('retry-after')) >= 1, `Retry-After ${r.headers.get('retry-after')}`);
      }
    }
    return statuses;
  }

  const track = (token: string) => (c: Client, i: number) =>
    c.post('/track', { event: 'e', properties: { distinct_id: `u${i}` } }, { headers: { 'x-service-token': token } });

  it('ingestion: the per-project window refuses at 6 requests in all, whichever replica answers', async () => {
    const p = await newProject('ingest');
    assert.deepEqual(await alternate(8, track(p.token)), [200, 200, 200, 200, 200, 200, 429, 429]);
    // At once: 20 requests, 10 to each replica; the check and the count are one statement, so exactly 6 pass.
    const q = await newProject('ingest-concurrent');
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => track(q.token)(i % 2 === 0 ? a : b, i)));
    assert.deepEqual([replies.filter((r) => r.status === 200).length, replies.filter((r) => r.status === 429).length], [6, 14]);
  });

  it('the monthly quota counts the events both replicas accepted', async () => {
    const p = await newProject('quota', 4);
    assert.deepEqual(await alternate(6, track(p.token), 'monthly event quota exceeded'), [200, 200, 200, 200, 429, 429]);
  });

  it('/api/query/*: one bucket per credential and project across replicas (burst 4)', async () => {
    const p = await newProject('query');
    const seg = (c: Client) => c.post('/api/query/segmentation', { projectId: p.id, event: 'e', from: '2024-01-01', to: '2024-01-02', unit: 'day', type: 'total' });
    assert.deepEqual(await alternate(6, seg), [200, 200, 200, 200, 429, 429]);
  });

  it('/flags/local-evaluation: one bucket per flag secret across replicas (burst 3)', async () => {
    const p = await newProject('local');
    const secret = (await a.post(`/api/projects/${p.id}/flag-secret`)).body.secret;
    assert.ok(secret);
    assert.deepEqual(await alternate(5, (c) => c.get('/flags/local-evaluation', { token: secret })), [200, 200, 200, 429, 429]);
  });

  it('/flags/evaluate: a bucket per replica (burst 3 each, 6 in all), off the database', async () => {
    const p = await newProject('evaluate');
    const evaluate = (c: Client) => c.post('/flags/evaluate', { distinct_id: 'u', token: p.token }, { token: '' });
    assert.deepEqual(await alternate(8, evaluate), [200, 200, 200, 200, 200, 200, 429, 429]);
  });
});
