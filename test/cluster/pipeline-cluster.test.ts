import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { connect, type NatsConnection, type JetStreamManager } from 'nats';
import { NatsCluster, freePort, sendEvents, sleep, startRole, tempDir, waitFor, type Child } from '../support/processes.js';
import { requireServices } from '../support/backends.js';
import { adminCreate, freshPgDatabase, metric } from '../support/pipeline.js';

/**
 * The production pipeline on a three-server NATS JetStream cluster (routes on loopback, started
 * here) with the stream at replicas 3: one API and two workers, started all at once against the
 * fresh cluster and a fresh PostgreSQL database, then a server killed with SIGKILL in the middle
 * of a load and restarted: the stream leader, then the consumer leader. Nothing may be lost or
 * doubled, counted in raw storage (merges stopped on the events table, no FINAL).
 * ClickHouse is the shared server (a database of its own); PIPELINE_CLUSTER_EVENTS scales the load.
 */
const EVENTS = Number(process.env.PIPELINE_CLUSTER_EVENTS ?? 30_000);
const SUPERADMIN_KEY = 'cluster-superadmin-key';
const STREAM = 'INGEST';
const CONSUMER = 'workers';

describe('pipeline: three-server NATS JetStream cluster (replicas 3, api and two workers)', function () {
  this.timeout(180_000);
  let cluster: NatsCluster;
  let pgDb: Awaited<ReturnType<typeof freshPgDatabase>> | undefined;
  let apiUrl: string;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const database = `ncl_${randomBytes(4).toString('hex')}`;
  const logDir = tempDir('pipeline-cluster-logs-');
  const children: Child[] = [];
  const workers: Array<Child & { metricsUrl: string }> = [];
  let orgId: number;

  const chQuery = async <T = Record<string, string>>(sql: string): Promise<T[]> => {
    const res = await fetch(`${process.env.TEST_CLICKHOUSE_URL}/?database=${database}`, { method: 'POST', body: `${sql} FORMAT JSONEachRow` });
    const text = await res.text();
    if (!res.ok) throw new Error(`ClickHouse: ${text}`);
    return text.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as T);
  };

  const chCommand = async (sql: string) => {
    const res = await fetch(`${process.env.TEST_CLICKHOUSE_URL}/`, { method: 'POST', body: sql });
    if (!res.ok) throw new Error(`ClickHouse: ${await res.text()}`);
  };

  /** Physical rows (no FINAL; merges are stopped) and distinct event times of a project. */
  async function counts(projectId: number) {
    const [a] = await chQuery<{ raw: string; distinct: string }>(
      `SELECT count() AS raw, uniqExact(time) AS distinct FROM events WHERE project_id = ${projectId}`,
    );
    return { raw: Number(a.raw), distinct: Number(a.distinct) };
  }

  const newProject = (name: string) =>
    adminCreate<{ id: number; token: string }>(apiUrl, SUPERADMIN_KEY, `/admin/orgs/${orgId}/projects`, { name });

  const streamLeader = async () => (await jsm.streams.info(STREAM)).cluster?.leader ?? '';
  const consumerLeader = async () => (await jsm.consumers.info(STREAM, CONSUMER)).cluster?.leader ?? '';

  before(async function () {
    requireServices(this, 'TEST_DATABASE_URL', 'TEST_CLICKHOUSE_URL', 'TEST_NATS_URL');
    cluster = await NatsCluster.start(3);
    pgDb = await freshPgDatabase('ncl');
    const env = {
      DATABASE_URL: pgDb.url,
      CLICKHOUSE_URL: process.env.TEST_CLICKHOUSE_URL!,
      CLICKHOUSE_DATABASE: database,
      NATS_URL: cluster.url,
      NATS_STREAM_REPLICAS: '3',
      NATS_ACK_WAIT_MS: '5000',
      NATS_PUBLISH_TIMEOUT_MS: '1500',
      NATS_NAK_MAX_DELAY_MS: '2000',
      NATS_FETCH_BATCH: '100',
      SUPERADMIN_KEY,
      LOG_LEVEL: 'info',
      DATA_DIR: path.join(logDir, 'data'),
      RATE_LIMIT_PER_IP: '1000000000',
      RATE_LIMIT_PER_PROJECT: '1000000000',
      HOST: '127.0.0.1',
    };
    // Everything at once, on a fresh cluster and a fresh database: each process waits for the
    // others' migrations (advisory lock) and for the replicated stream, none exits.
    const apiPort = await freePort();
    const metricsPorts = [await freePort(), await freePort()];
    const api = startRole('api', 'api', { ...env, PORT: String(apiPort) }, logDir);
    children.push(api);
    for (const [i, port] of metricsPorts.entries()) {
      const w = startRole(`worker-${i}`, 'worker', { ...env, METRICS_PORT: String(port) }, logDir);
      children.push(w);
      workers.push(Object.assign(w, { metricsUrl: `http://127.0.0.1:${port}` }));
    }
    apiUrl = `http://127.0.0.1:${apiPort}`;
    const started = Date.now();
    await waitFor(`api ready (log: ${api.logFile})`, async () => (await fetch(`${apiUrl}/health/ready`)).status === 200, 90_000, 250);
    for (const w of workers) await waitFor(`${w.name} up (log: ${w.logFile})`, async () => (await fetch(`${w.metricsUrl}/health/live`)).ok, 90_000, 250);
    for (const c of children) assert.ok(c.running, `${c.name} kept running through a concurrent start (log: ${c.logFile})`);
    console.log(`      api and two workers started together on a fresh cluster and database: all up in ${Date.now() - started} ms`);
    nc = await connect({ servers: cluster.url.split(',') });
    jsm = await nc.jetstreamManager();
    assert.equal((await jsm.streams.info(STREAM)).config.num_replicas, 3);
    await waitFor('the workers consumer exists', async () => !!(await jsm.consumers.info(STREAM, CONSUMER)), 30_000, 250);
    // Merges would collapse doubled rows before they are counted: keep every physical row.
    await chCommand(`SYSTEM STOP MERGES ${database}.events`);
    orgId = (await adminCreate<{ id: number }>(apiUrl, SUPERADMIN_KEY, '/admin/orgs', { name: 'cluster', monthlyEventQuota: 1_000_000_000 })).id;
  });

  after(async function () {
    await nc?.close().catch(() => undefined);
    for (const c of children) await c.kill('SIGTERM', 10_000).catch(() => undefined);
    await cluster?.close();
    await chCommand(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined);
    await pgDb?.drop();
    if (this.currentTest?.state === 'failed' || process.env.PIPELINE_KEEP_LOGS) console.log(`pipeline cluster logs: ${logDir}`);
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') {
      for (const c of [...children, ...cluster.children]) if (c) console.log(`--- ${c.name} (${c.logFile})\n${c.log().slice(-3000)}`);
    }
  });

  /** Loads EVENTS events, SIGKILLs server `victim()` at a third, restarts it 3 s later; checks exactly once in raw storage. */
  async function killMidLoad(name: string, timeBase: number, victim: () => Promise<string>) {
    const project = await newProject(name);
    const total = async (name: string) => (await Promise.all(workers.map((w) => metric(w.metricsUrl, name)))).reduce((a, b) => a + b, 0);
    const redeliveredBefore = await total('tally_ingest_redelivered_messages_total');
    const distrustedBefore = await total('tally_ingest_distrusted_messages_total');
    const progress = { accepted: 0 };
    const load = sendEvents({
      url: apiUrl, token: project.token, total: EVENTS, batchSize: 100, concurrency: 6, timeBase,
      eventsPerSecond: EVENTS / 12, retry: true, maxRetryWaitMs: 1000, progress,
    });
    await waitFor('a third accepted and some stored', async () => progress.accepted >= EVENTS / 3 && (await counts(project.id)).raw > 0, 60_000, 50);
    const leader = await victim();
    const other = await streamLeader();
    const i = cluster.indexOf(leader);
    assert.ok(i >= 0, `leader ${leader} is one of ours`);
    await cluster.stop(i, 'SIGKILL');
    await sleep(3000);
    await cluster.restart(i);
    const result = await load;
    assert.equal(result.accepted, EVENTS, JSON.stringify(result.statuses));
    let c = { raw: 0, distinct: 0 };
    await waitFor(`${EVENTS} events stored`, async () => (c = await counts(project.id)).distinct >= EVENTS, 90_000, 500)
      .catch((err) => { throw new Error(`${(err as Error).message}; stored ${JSON.stringify(c)}`); });
    await sleep(6000); // past NATS_ACK_WAIT_MS: a redelivery of a batch whose ack was lost lands now
    c = await counts(project.id);
    const redelivered = (await total('tally_ingest_redelivered_messages_total')) - redeliveredBefore;
    const distrusted = (await total('tally_ingest_distrusted_messages_total')) - distrustedBefore;
    console.log(`      killed ${leader} (stream leader then: ${other}): answers ${JSON.stringify(result.statuses)}; raw rows ${c.raw}, distinct ${c.distinct}; redelivered messages ${redelivered}, distrusted ${distrusted}`);
    assert.equal(c.distinct, EVENTS, 'every accepted event stored');
    assert.equal(c.raw, EVENTS, 'no event written twice, in raw storage');
    for (const w of workers) assert.ok(w.running, `${w.name} kept running`);
  }

  it(`stream leader SIGKILLed in the middle of a ${EVENTS.toLocaleString('en')}-event load and restarted: nothing lost, nothing doubled`, async function () {
    await killMidLoad('stream-leader', Date.UTC(2024, 4, 1), streamLeader);
  });

  it(`consumer leader (moved off the stream leader) SIGKILLed mid-load and restarted: nothing lost, nothing doubled`, async function () {
    // Step the consumer's leadership away until another server than the stream leader holds it.
    for (let n = 0; n < 6 && (await consumerLeader()) === (await streamLeader()); n++) {
      await nc.request(`$JS.API.CONSUMER.LEADER.STEPDOWN.${STREAM}.${CONSUMER}`, undefined, { timeout: 5000 }).catch(() => undefined);
      await waitFor('a consumer leader', async () => (await consumerLeader()) !== '', 15_000, 250);
    }
    await killMidLoad('consumer-leader', Date.UTC(2024, 5, 1), consumerLeader);
  });
});
