import assert from 'node:assert/strict';
import path from 'node:path';
import { connect } from 'nats';
import {
  ClickHouseServer, NatsServer, freePort, sendEvents, sleep, startRole, tempDir, waitFor, type Child,
} from '../support/processes.js';
import { requireServices } from '../support/backends.js';
import { adminCreate, freshPgDatabase, metric } from '../support/pipeline.js';

/**
 * Reliability of the production pipeline (API -> JetStream -> worker -> ClickHouse), with every
 * part a real process: a private nats-server (file store in a temp dir), a private
 * clickhouse-server (own ports and data dir, so it can be stopped), PostgreSQL from
 * scripts/services.sh, and the service's `api` and `worker` roles as child processes.
 *
 * Events carry no `$insert_id` (the API generates one), and event `seq` has time
 * `timeBase + seq`, so "stored exactly once" is checked as: distinct times = N (nothing lost) and
 * `count() FINAL` = N (nothing doubled after the store's dedup on its sort key).
 *
 * PIPELINE_EVENTS scales the worker-kill load (default 200,000).
 */
const KILL_EVENTS = Number(process.env.PIPELINE_EVENTS ?? 200_000);
/** Paced so the load lasts long enough for the kill to land in its middle (about 10 s at the default). */
const KILL_RATE = Math.max(5000, KILL_EVENTS / 10);
const SUPERADMIN_KEY = 'pipeline-superadmin-key';

describe('pipeline: reliability (real nats-server, clickhouse-server, api and worker processes)', function () {
  this.timeout(240_000);
  let nats: NatsServer;
  let ch: ClickHouseServer;
  let pgDb: Awaited<ReturnType<typeof freshPgDatabase>> | undefined;
  let api: Child;
  let apiUrl: string;
  let env: Record<string, string>;
  const logDir = tempDir('pipeline-logs-');
  const children: Child[] = [];
  const database = 'pipeline';
  let orgId: number;

  const chQuery = async <T = Record<string, number>>(sql: string): Promise<T[]> => {
    const res = await fetch(`${ch.url}/?database=${database}`, { method: 'POST', body: `${sql} FORMAT JSONEachRow` });
    const text = await res.text();
    if (!res.ok) throw new Error(`ClickHouse: ${text}`);
    return text.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as T);
  };

  async function counts(projectId: number) {
    const [a] = await chQuery<{ raw: string; distinct: string; lo: string; hi: string }>(
      `SELECT count() AS raw, uniqExact(time) AS distinct, min(time) AS lo, max(time) AS hi FROM events WHERE project_id = ${projectId}`,
    );
    return { raw: Number(a.raw), distinct: Number(a.distinct), lo: Number(a.lo), hi: Number(a.hi) };
  }

  async function finalCount(projectId: number) {
    const [a] = await chQuery<{ n: string }>(`SELECT count() AS n FROM events FINAL WHERE project_id = ${projectId}`);
    return Number(a.n);
  }

  /** Waits until all N events are stored, then checks none is doubled and none is foreign. */
  async function assertExactlyOnce(projectId: number, n: number, timeBase: number, timeoutMs = 120_000) {
    let last = { raw: 0, distinct: 0, lo: 0, hi: 0 };
    await waitFor(`${n} distinct events stored`, async () => {
      last = await counts(projectId);
      return last.distinct >= n;
    }, timeoutMs, 500).catch((err) => {
      throw new Error(`${(err as Error).message}; stored ${JSON.stringify(last)}`);
    });
    await sleep(1500); // anything still in flight (a redelivery) would land now
    const c = await counts(projectId);
    assert.equal(c.distinct, n, 'every accepted event stored');
    assert.equal(c.lo, timeBase);
    assert.equal(c.hi, timeBase + n - 1);
    assert.equal(await finalCount(projectId), n, `no event counted twice (raw rows before merge: ${c.raw})`);
    return c;
  }

  const newProject = (name: string) =>
    adminCreate<{ id: number; token: string }>(apiUrl, SUPERADMIN_KEY, `/admin/orgs/${orgId}/projects`, { name });

  /** Starts a worker process and waits until it answers on its metrics port (it is consuming). */
  async function startWorker(name: string, extra: Record<string, string> = {}): Promise<Child & { metricsUrl: string }> {
    const port = await freePort();
    const w = startRole(name, 'worker', { ...env, METRICS_PORT: String(port), ...extra }, logDir);
    children.push(w);
    const metricsUrl = `http://127.0.0.1:${port}`;
    await waitFor(`${name} up (log: ${w.logFile})`, async () => (await fetch(`${metricsUrl}/health/live`)).ok, 60_000, 100);
    return Object.assign(w, { metricsUrl });
  }

  const natsStreamMessages = async () => {
    const nc = await connect({ servers: nats.url });
    try {
      return (await (await nc.jetstreamManager()).streams.info('INGEST')).state.messages;
    } finally {
      await nc.close();
    }
  };

  before(async function () {
    requireServices(this, 'TEST_DATABASE_URL', 'TEST_CLICKHOUSE_URL', 'TEST_NATS_URL');
    [nats, ch] = await Promise.all([NatsServer.start(), ClickHouseServer.start()]);
    pgDb = await freshPgDatabase('pl');
    const port = await freePort();
    env = {
      DATABASE_URL: pgDb.url,
      CLICKHOUSE_URL: ch.url,
      CLICKHOUSE_DATABASE: database,
      NATS_URL: nats.url,
      NATS_ACK_WAIT_MS: '5000',
      NATS_PUBLISH_TIMEOUT_MS: '1500',
      NATS_NAK_MAX_DELAY_MS: '3000',
      SUPERADMIN_KEY,
      LOG_LEVEL: 'error',
      DATA_DIR: path.join(logDir, 'data'),
      RATE_LIMIT_PER_IP: '1000000000',
      RATE_LIMIT_PER_PROJECT: '1000000000',
      HOST: '127.0.0.1',
    };
    api = startRole('api', 'api', { ...env, PORT: String(port) }, logDir);
    children.push(api);
    apiUrl = `http://127.0.0.1:${port}`;
    await waitFor(`api ready (log: ${api.logFile})`, async () => (await fetch(`${apiUrl}/health/ready`)).status === 200, 60_000, 250);
    orgId = (await adminCreate<{ id: number }>(apiUrl, SUPERADMIN_KEY, '/admin/orgs', { name: 'pipeline', monthlyEventQuota: 1_000_000_000 })).id;
  });

  after(async function () {
    for (const c of children) await c.kill('SIGTERM', 10_000).catch(() => undefined);
    await nats?.close();
    await ch?.close();
    await pgDb?.drop();
    if (this.currentTest?.state === 'failed' || process.env.PIPELINE_KEEP_LOGS) console.log(`pipeline logs: ${logDir}`);
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') {
      for (const c of children) console.log(`--- ${c.name} (${c.logFile})\n${c.log().slice(-3000)}`);
    }
  });

  it(`worker SIGKILLed in the middle of a ${KILL_EVENTS.toLocaleString('en')}-event load, then restarted: every accepted event stored exactly once`, async function () {
    const project = await newProject('kill');
    const timeBase = Date.UTC(2024, 0, 1);
    // Merges would collapse a doubled row before it is counted: keep every physical row meanwhile.
    const chCommand = async (sql: string) => {
      const res = await fetch(`${ch.url}/`, { method: 'POST', body: sql });
      assert.ok(res.ok, await res.text());
    };
    await chCommand(`SYSTEM STOP MERGES ${database}.events`);
    // small fetches, so the kill lands between and inside many inserts
    const small = { NATS_FETCH_BATCH: '40' };
    const w1 = await startWorker('worker-kill-1', small);
    const progress = { accepted: 0 };
    const load = sendEvents({ url: apiUrl, token: project.token, total: KILL_EVENTS, batchSize: 250, concurrency: 6, timeBase, retry: true, progress, eventsPerSecond: KILL_RATE });
    await waitFor('a third accepted and some stored', async () => progress.accepted >= KILL_EVENTS / 3 && (await counts(project.id)).raw > 0, 120_000, 50);
    w1.proc.kill('SIGKILL');
    await w1.exited;
    const atKill = await counts(project.id);
    assert.ok(progress.accepted < KILL_EVENTS, 'killed in the middle of the load');
    await sleep(1000);
    const w2 = await startWorker('worker-kill-2', small);
    const result = await load;
    assert.equal(result.accepted, KILL_EVENTS, JSON.stringify(result.statuses));
    const c = await assertExactlyOnce(project.id, KILL_EVENTS, timeBase);
    const redelivered = await metric(w2.metricsUrl, 'tally_ingest_redelivered_messages_total');
    console.log(`      killed at ${atKill.distinct} stored; load ${result.elapsedMs} ms; redelivered to the new worker: ${redelivered} messages; raw rows ${c.raw}`);
    // A redelivered batch writes only its rows not stored yet: no copy even in raw storage.
    assert.equal(c.raw, KILL_EVENTS, 'no second copy of a redelivered batch in raw storage');
    await chCommand(`SYSTEM START MERGES ${database}.events`);
    await w2.kill('SIGTERM');
  });

  it('ClickHouse stopped for 30 s during a load: the API keeps accepting, the backlog waits in JetStream and drains, counts exact', async function () {
    const project = await newProject('clickhouse-down');
    const timeBase = Date.UTC(2024, 1, 1);
    const total = 60_000;
    const worker = await startWorker('worker-ch');
    const load = sendEvents({ url: apiUrl, token: project.token, total, batchSize: 250, concurrency: 4, timeBase, eventsPerSecond: total / 40, retry: false });
    await waitFor('events flowing', async () => (await counts(project.id)).raw > 0, 30_000, 200);
    await ch.stop();
    const downAt = Date.now();
    await sleep(5000);
    const ready = await fetch(`${apiUrl}/health/ready`);
    assert.equal(ready.status, 503, '/health/ready fails while the event store is down');
    assert.equal(((await ready.json()) as { checks: { events: string } }).checks.events, 'error');
    await sleep(10_000);
    const backlog = await natsStreamMessages();
    assert.ok(backlog > 0, 'the backlog waits in JetStream');
    const lag = await metric(apiUrl, 'tally_ingest_consumer_lag_messages');
    assert.ok(lag > 0, `consumer lag exposed on /metrics: ${lag}`);
    await sleep(Math.max(0, 30_000 - (Date.now() - downAt)));
    await ch.restart();
    const result = await load;
    assert.deepEqual(Object.keys(result.statuses), ['200'], `the API kept answering 200: ${JSON.stringify(result.statuses)}`);
    assert.equal(result.accepted, total);
    await assertExactlyOnce(project.id, total, timeBase, 90_000);
    assert.equal(await natsStreamMessages(), 0, 'backlog drained');
    console.log(`      backlog during the outage: ${backlog} messages`);
    await worker.kill('SIGTERM');
  });

  it('nats-server restarted during a load: every 200 is stored, the outage answers 503 with Retry-After', async function () {
    const project = await newProject('nats-restart');
    const timeBase = Date.UTC(2024, 2, 1);
    const total = 60_000;
    const worker = await startWorker('worker-nats');
    const load = sendEvents({
      url: apiUrl, token: project.token, total, batchSize: 250, concurrency: 4, timeBase,
      eventsPerSecond: total / 15, retry: true, maxRetryWaitMs: 1000,
    });
    await waitFor('events flowing', async () => (await counts(project.id)).raw > 0, 30_000, 200);
    await nats.stop();
    await sleep(4000);
    const ready = await fetch(`${apiUrl}/health/ready`);
    assert.equal(ready.status, 503, '/health/ready fails while NATS is down');
    await nats.restart();
    const result = await load;
    assert.ok((result.statuses[503] ?? 0) > 0, `requests during the outage got 503: ${JSON.stringify(result.statuses)}`);
    assert.ok(result.unavailableWellFormed, '503 answers carry Retry-After and {status: 0, error}');
    assert.equal(result.accepted, total);
    await assertExactlyOnce(project.id, total, timeBase, 90_000);
    console.log(`      answers: ${JSON.stringify(result.statuses)}`);
    await worker.kill('SIGTERM');
  });

  it('two workers at once share the load without duplicates', async function () {
    const project = await newProject('two-workers');
    const timeBase = Date.UTC(2024, 3, 1);
    const total = 100_000;
    const workers = [await startWorker('worker-a'), await startWorker('worker-b')];
    const result = await sendEvents({ url: apiUrl, token: project.token, total, batchSize: 100, concurrency: 6, timeBase, retry: true });
    assert.equal(result.accepted, total);
    await assertExactlyOnce(project.id, total, timeBase);
    const stored = await Promise.all(workers.map((w) => metric(w.metricsUrl, 'tally_ingest_stored_records_total')));
    assert.ok(stored.every((s) => s > 0), `both workers stored events: ${stored}`);
    assert.ok(stored[0] + stored[1] >= total, `the workers' counters add up: ${stored}`);
    console.log(`      stored per worker: ${stored.join(' / ')}`);
    for (const w of workers) await w.kill('SIGTERM');
  });
});
