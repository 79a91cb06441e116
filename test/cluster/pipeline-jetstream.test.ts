import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect, type NatsConnection, type JetStreamManager } from 'nats';
import { JetStreamBuffer } from '../../apps/server/src/ports/buffer/jetstream.js';
import { natsConfig } from '../../apps/server/src/ports/buffer/jetstream-config.js';
import { BufferUnavailable, PoisonError, type IngestionBatch } from '../../apps/server/src/ports/buffer/port.js';
import { NatsServer, sleep, waitFor } from '../support/processes.js';
import { requireServices } from '../support/backends.js';

/**
 * The JetStream buffer against a real nats-server (the shared one from scripts/services.sh for
 * most cases, a private one for the outage case). Each test uses its own stream and subjects.
 */
const NATS_URL = process.env.TEST_NATS_URL;

function freshConfig(env: Record<string, string> = {}) {
  const tag = randomBytes(4).toString('hex');
  return natsConfig({
    NATS_STREAM: `T_${tag}`,
    NATS_SUBJECT_PREFIX: `t_${tag}`,
    NATS_STREAM_STORAGE: 'memory',
    NATS_ACK_WAIT_MS: '3000',
    NATS_NAK_MAX_DELAY_MS: '500',
    NATS_FETCH_BATCH: '200',
    ...env,
  });
}

let seq = 0;
function batch(projectId: number, kind: IngestionBatch['kind'], records: unknown[], id?: string): IngestionBatch {
  return { id: id ?? `b${++seq}`, kind, projectId, acceptedAt: Date.now(), records };
}

describe('pipeline: JetStream buffer', function () {
  this.timeout(60_000);
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const opened: JetStreamBuffer[] = [];
  const streams: string[] = [];

  before(async function () {
    requireServices(this, 'TEST_NATS_URL');
    nc = await connect({ servers: NATS_URL });
    jsm = await nc.jetstreamManager();
  });

  async function open(cfg: ReturnType<typeof freshConfig>) {
    const b = await JetStreamBuffer.open(NATS_URL!, cfg);
    opened.push(b);
    if (!streams.includes(cfg.stream)) streams.push(cfg.stream, `${cfg.stream}_DEAD`);
    return b;
  }

  afterEach(async function () {
    for (const b of opened.splice(0)) await b.close();
    for (const s of streams.splice(0)) await jsm.streams.delete(s).catch(() => undefined);
  });

  after(async function () {
    await nc?.close();
  });

  it('creates the stream and its dead-letter stream idempotently, with the configured limits', async function () {
    const cfg = freshConfig({ NATS_STREAM_MAX_AGE_S: '3600', NATS_STREAM_MAX_BYTES: '10000000', NATS_DUPLICATE_WINDOW_MS: '60000' });
    await open(cfg);
    const again = await open(cfg);
    await again.ensureConsumer();
    await again.ensureConsumer();
    const info = await jsm.streams.info(cfg.stream);
    assert.deepEqual(info.config.subjects, [`${cfg.subjectPrefix}.*`]);
    assert.equal(info.config.retention, 'workqueue');
    assert.equal(info.config.max_bytes, 10_000_000);
    assert.equal(info.config.max_age, 3600 * 1e9);
    assert.equal(info.config.duplicate_window, 60 * 1e9);
    assert.equal(info.config.discard, 'new');
    const dead = await jsm.streams.info(`${cfg.stream}_DEAD`);
    assert.deepEqual(dead.config.subjects, [`${cfg.subjectPrefix}.dead.*`]);
    const ci = await jsm.consumers.info(cfg.stream, cfg.consumer);
    assert.equal(ci.config.ack_policy, 'explicit');
    assert.equal(ci.config.filter_subject, `${cfg.subjectPrefix}.*`);
    assert.equal(ci.config.max_ack_pending, 200);
    // a changed limit is applied to the live stream at the next start
    await open({ ...cfg, maxBytes: 20_000_000 });
    assert.equal((await jsm.streams.info(cfg.stream)).config.max_bytes, 20_000_000);
  });

  it('publishes one message per batch, dedups a retried batch id, and delivers each project in order', async function () {
    const cfg = freshConfig();
    const buf = await open(cfg);
    const sent: IngestionBatch[] = [];
    for (let i = 0; i < 30; i++) sent.push(batch(1 + (i % 3), i % 7 === 3 ? 'alias' : 'track', [{ n: i }]));
    for (const b of sent) await buf.publish(b);
    await buf.publish({ ...sent[0], acceptedAt: 1 }); // a client retry: same id
    assert.equal((await jsm.streams.info(cfg.stream)).state.messages, 30);

    const seen = new Map<number, number[]>();
    const calls: IngestionBatch[] = [];
    const consumer = buf.consume(async (b) => {
      calls.push(b);
      const list = seen.get(b.projectId) ?? [];
      for (const r of b.records as Array<{ n: number }>) list.push(r.n);
      seen.set(b.projectId, list);
    }, { mergeable: (b) => b.kind === 'track' });
    await waitFor('all records', async () => [...seen.values()].reduce((a, l) => a + l.length, 0) === 30, 15_000);
    await consumer.stop();
    for (const p of [1, 2, 3]) {
      const expected = sent.filter((b) => b.projectId === p).map((b) => (b.records[0] as { n: number }).n);
      assert.deepEqual(seen.get(p), expected, `project ${p} in acceptance order`);
    }
    // consecutive mergeable batches of a project are merged: fewer handler calls than batches
    assert.ok(calls.length < 30, `merged: ${calls.length} calls`);
    assert.ok(calls.every((c) => c.kind !== 'alias' || c.records.length === 1), 'unmergeable batches stay alone');
    const lag = await buf.lag();
    assert.deepEqual(lag, { pending: 0, ackPending: 0 });
    assert.equal((await jsm.streams.info(cfg.stream)).state.messages, 0, 'work queue emptied by the acks');
  });

  it("with applyUnit: a project's batches of one fetch, any kinds, reach it in one call in order; a failed unit comes back whole", async function () {
    const cfg = freshConfig();
    const buf = await open(cfg);
    const sent: IngestionBatch[] = [];
    const kinds: IngestionBatch['kind'][] = ['track', 'alias', 'engage', 'track', 'engage', 'track'];
    for (let i = 0; i < 24; i++) sent.push(batch(1 + (Math.floor(i / 3) % 2), kinds[i % kinds.length], [{ n: i }]));
    for (const b of sent) await buf.publish(b);
    const seen = new Map<number, number[]>();
    const units: IngestionBatch[][] = [];
    let failOnce = true;
    const consumer = buf.consume(async () => assert.fail('handler called'), {
      applyUnit: async (unit) => {
        units.push(unit);
        if (failOnce) {
          failOnce = false;
          throw new Error('store down');
        }
        const list = seen.get(unit[0].projectId) ?? [];
        for (const b of unit) for (const r of b.records as Array<{ n: number }>) list.push(r.n);
        seen.set(unit[0].projectId, list);
      },
    });
    await waitFor('all records', async () => [...seen.values()].reduce((a, l) => a + l.length, 0) === 24, 15_000);
    await consumer.stop();
    for (const p of [1, 2]) {
      assert.deepEqual(seen.get(p), sent.filter((b) => b.projectId === p).map((b) => (b.records[0] as { n: number }).n), `project ${p} in acceptance order`);
    }
    assert.ok(units.every((u) => u.every((b) => b.projectId === u[0].projectId)), 'one project per unit');
    assert.ok(units.some((u) => new Set(u.map((b) => b.kind)).size === 3), 'track, alias and engage batches in one unit');
    // the failed unit's batches come back first, redelivered, with (at least) the same batches
    const failed = units[0].map((b) => b.id);
    const retried = units.slice(1).find((u) => u[0].projectId === units[0][0].projectId)!;
    assert.deepEqual(retried.slice(0, failed.length).map((b) => b.id), failed);
    assert.ok(retried.slice(0, failed.length).every((b) => b.redelivered));
  });

  it('naks a failing store write with backoff and redelivers it, still in order per project', async function () {
    const cfg = freshConfig();
    const buf = await open(cfg);
    for (let i = 0; i < 10; i++) await buf.publish(batch(7, i === 5 ? 'engage' : 'track', [{ n: i }]));
    let failures = 0;
    const applied: number[] = [];
    const redelivered: number[] = [];
    const consumer = buf.consume(async (b) => {
      const n = (b.records[0] as { n: number }).n;
      if (b.redelivered) redelivered.push(n);
      if (n === 3 && failures < 2) {
        failures++;
        throw new Error('store down');
      }
      applied.push(n);
    });
    await waitFor('10 applied', async () => applied.length === 10, 20_000);
    await consumer.stop();
    assert.equal(failures, 2);
    assert.deepEqual(applied, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // the retried batches say so (stores then write only what is missing); first deliveries do not
    assert.ok(redelivered.includes(3) && !redelivered.includes(0), `redelivered flags: ${redelivered}`);
  });

  it('dead-letters undecodable messages and PoisonError batches without blocking the rest', async function () {
    const cfg = freshConfig();
    const buf = await open(cfg);
    const js = nc.jetstream();
    await buf.publish(batch(5, 'track', [{ n: 0 }]));
    await js.publish(`${cfg.subjectPrefix}.5`, new TextEncoder().encode('{not json'));
    await buf.publish(batch(5, 'track', [{ n: 1, bad: true }]));
    await buf.publish(batch(5, 'track', [{ n: 2 }]));
    const applied: number[] = [];
    const consumer = buf.consume(async (b) => {
      const recs = b.records as Array<{ n: number; bad?: boolean }>;
      if (recs.some((r) => r.bad)) throw new PoisonError('record 1 can never be stored');
      applied.push(...recs.map((r) => r.n));
    }, { mergeable: () => true });
    await waitFor('good records', async () => applied.length >= 2, 15_000);
    await sleep(300);
    await consumer.stop();
    assert.deepEqual([...applied].sort(), [0, 2]);
    const dead = await jsm.streams.info(`${cfg.stream}_DEAD`);
    assert.equal(dead.state.messages, 2);
    const m1 = await jsm.streams.getMessage(`${cfg.stream}_DEAD`, { seq: 1 });
    const m2 = await jsm.streams.getMessage(`${cfg.stream}_DEAD`, { seq: 2 });
    assert.equal(m1.subject, `${cfg.subjectPrefix}.dead.5`);
    assert.match(m1.header.get('Ingest-Error'), /not JSON/);
    assert.match(m2.header.get('Ingest-Error'), /can never be stored/);
    assert.deepEqual(await buf.lag(), { pending: 0, ackPending: 0 });
  });

  it('dead-letters a batch that keeps failing while the stores answer, and only then', async function () {
    const cfg = freshConfig({ NATS_POISON_AFTER_DELIVERIES: '3' });
    const buf = await open(cfg);
    for (let i = 0; i < 4; i++) await buf.publish(batch(6, 'track', [{ n: i, bad: i === 1 }]));
    let healthy = false;
    let healthChecks = 0;
    const applied: number[] = [];
    let attemptsOnBad = 0;
    const consumer = buf.consume(async (b) => {
      const recs = b.records as Array<{ n: number; bad?: boolean }>;
      if (recs.some((r) => r.bad)) {
        attemptsOnBad++;
        throw new Error('Cannot parse input: a value ClickHouse refuses forever');
      }
      applied.push(...recs.map((r) => r.n));
    }, { mergeable: () => true, storesHealthy: async () => { healthChecks++; return healthy; } });
    await waitFor('checked the stores', async () => healthChecks >= 2, 20_000);
    assert.ok(!applied.includes(2) && !applied.includes(3), 'while the stores look down, the failing batch holds back the later ones (order)');
    assert.equal((await jsm.streams.info(`${cfg.stream}_DEAD`)).state.messages, 0);
    healthy = true;
    await waitFor('rest applied', async () => applied.length === 3, 20_000);
    await consumer.stop();
    assert.deepEqual([...applied].sort(), [0, 2, 3]);
    assert.ok(attemptsOnBad >= 3);
    const dead = await jsm.streams.getMessage(`${cfg.stream}_DEAD`, { seq: 1 });
    assert.match(dead.header.get('Ingest-Error'), /while the stores answered: Cannot parse input/);
  });

  it('keeps a long handler run alive with working() instead of being redelivered', async function () {
    const cfg = freshConfig({ NATS_ACK_WAIT_MS: '1000' });
    const buf = await open(cfg);
    await buf.publish(batch(9, 'track', [{ n: 0 }]));
    let calls = 0;
    const consumer = buf.consume(async () => {
      calls++;
      await sleep(3500);
    });
    await waitFor('handled', async () => calls > 0 && (await buf.lag())?.ackPending === 0, 15_000);
    await sleep(1500);
    await consumer.stop();
    assert.equal(calls, 1, 'no redelivery during the long run');
  });

  it('shares one durable consumer between two workers without duplicates', async function () {
    const cfg = freshConfig({ NATS_FETCH_BATCH: '20' });
    const a = await open(cfg);
    const b = await open(cfg);
    const n = 400;
    for (let i = 0; i < n; i++) await a.publish(batch(1 + (i % 5), 'track', [{ n: i }]));
    const got: number[] = [];
    const by = { a: 0, b: 0 };
    const slow = (who: 'a' | 'b') => async (x: IngestionBatch) => {
      by[who]++;
      await sleep(2);
      got.push((x.records[0] as { n: number }).n);
    };
    const ca = a.consume(slow('a'));
    const cb = b.consume(slow('b'));
    await waitFor('all', async () => got.length >= n, 30_000);
    await sleep(500);
    await Promise.all([ca.stop(), cb.stop()]);
    assert.equal(got.length, n);
    assert.equal(new Set(got).size, n);
    assert.ok(by.a > 0 && by.b > 0, `both workers took part: ${JSON.stringify(by)}`);
  });

  it('a worker whose pull the in-flight window cuts short applies what it got at once, trusting it', async () => {
    // Two workers on one consumer (window = one fetch of 10): A holds 5 messages in a handler
    // that does not return, and 10 more wait in the stream; B's pull for 10 can get only 5 of
    // them. nats-server 2.9 then sends no status: B must not wait for the pull's 2 s guard, nor
    // take the silence for a lost leader.
    const cfg = freshConfig({ NATS_FETCH_BATCH: '10' });
    const bufA = await JetStreamBuffer.open(NATS_URL!, cfg);
    const bufB = await JetStreamBuffer.open(NATS_URL!, cfg);
    opened.push(bufA, bufB);
    streams.push(cfg.stream);
    let distrusted = 0;
    bufB.watch({ distrusted: () => distrusted++ });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const heldIds: string[] = [];
    // All five in the stream before A starts, so A's first fetch takes them all.
    for (let i = 0; i < 5; i++) await bufA.publish(batch(1, 'track', [{ n: i }], `held-${i}`));
    const consumerA = bufA.consume(async (b) => { heldIds.push(b.id); await held; });
    await waitFor('A holds five messages', async () => heldIds.length === 1 && (await bufA.lag())?.ackPending === 5, 10_000, 20);
    const free = Array.from({ length: 10 }, (_, i) => `free-${i}`);
    for (const [i, id] of free.entries()) await bufB.publish(batch(2, 'track', [{ n: i }], id));
    const atB = new Map<string, { at: number; redelivered: boolean }>();
    const started = Date.now();
    const consumerB = bufB.consume(async (b) => { atB.set(b.id, { at: Date.now(), redelivered: b.redelivered === true }); });
    try {
      await waitFor('B applied all ten', async () => atB.size >= free.length, 10_000, 20);
      assert.deepEqual([...atB.keys()], free, 'only the free batches, in order');
      const last = Math.max(...[...atB.values()].map((v) => v.at));
      assert.ok(last - started < 1500, `applied ${last - started} ms after B started (a pull waiting for its guard takes 2 s)`);
      assert.deepEqual([...atB.values()].map((v) => v.redelivered), free.map(() => false));
      assert.equal(distrusted, 0, 'no delivery distrusted');
    } finally {
      release();
      await consumerA.stop();
      await consumerB.stop();
    }
  });

  it('stop() lets the batch in flight finish and acks it', async function () {
    const cfg = freshConfig();
    const buf = await open(cfg);
    await buf.publish(batch(3, 'track', [{ n: 0 }]));
    let started = false;
    let finished = false;
    const consumer = buf.consume(async () => {
      started = true;
      await sleep(1000);
      finished = true;
    });
    await waitFor('started', async () => started, 10_000);
    await consumer.stop();
    assert.ok(finished);
    // The ack reached the server before stop() returned (flush), but the server applies it to the
    // consumer's state a moment later; 1 s is well inside the 3 s ack wait, so an unacked message
    // would still show as ackPending here.
    await waitFor('acked', async () => {
      const lag = await buf.lag();
      return lag?.pending === 0 && lag.ackPending === 0;
    }, 1000);
  });
});

describe('pipeline: JetStream buffer when NATS is unreachable', function () {
  this.timeout(60_000);
  let server: NatsServer;
  before(async () => { server = await NatsServer.start(); });
  after(async () => { await server?.close(); });

  it('publish throws 503 with Retry-After, ping fails, and both recover after a restart', async function () {
    const cfg = freshConfig({ NATS_PUBLISH_TIMEOUT_MS: '500', NATS_STREAM_STORAGE: 'file' });
    const buf = await JetStreamBuffer.open(server.url, cfg);
    try {
      await buf.publish(batch(1, 'track', [{ n: 1 }]));
      await buf.ping();
      await server.stop();
      const started = Date.now();
      const err = await buf.publish(batch(1, 'track', [{ n: 2 }])).then(() => undefined, (e) => e);
      assert.ok(err instanceof BufferUnavailable, `BufferUnavailable, got ${err}`);
      assert.equal(err.message, 'ingestion buffer unavailable');
      assert.ok(err.retryAfterSeconds >= 1);
      assert.ok(Date.now() - started < 3000, 'fails fast (publish timeout)');
      await assert.rejects(buf.ping());
      await server.restart();
      await waitFor('publish after restart', () => buf.publish(batch(1, 'track', [{ n: 3 }])).then(() => true), 20_000, 250);
      await buf.ping();
      const nc2 = await connect({ servers: server.url });
      const info = await (await nc2.jetstreamManager()).streams.info(cfg.stream);
      await nc2.close();
      assert.ok(info.state.messages >= 2, 'the file store kept the message published before the restart');
    } finally {
      await buf.close();
    }
  });

  it('after a pull went unanswered, first deliveries are handled as possible redeliveries for a while', async function () {
    // A replicated consumer whose leader is lost can hand out again, as first deliveries, messages
    // it had delivered: the store must then write only what it lacks. Here the server is frozen
    // (SIGSTOP) past a pull's guard, as a dead consumer leader leaves pulls unanswered.
    const cfg = freshConfig({ NATS_ACK_WAIT_MS: '1000', NATS_FETCH_EXPIRES_MS: '1000' });
    const buf = await JetStreamBuffer.open(server.url, cfg);
    const seen = new Map<string, boolean>();
    let distrusted = 0;
    buf.watch({ distrusted: () => distrusted++ });
    const consumer = buf.consume(async (b) => { seen.set(b.id, b.redelivered === true); });
    try {
      const handled = async (id: string) => {
        await buf.publish(batch(1, 'track', [{ n: id }], id));
        await waitFor(`${id} handled`, async () => seen.has(id), 20_000, 50);
        return seen.get(id);
      };
      assert.equal(await handled('calm'), false, 'a first delivery in calm weather pays no lookup');
      const pid = server.child!.pid;
      process.kill(pid, 'SIGSTOP');
      await sleep(4000); // the long poll (1 s) and its guard (2 s) run out unanswered
      process.kill(pid, 'SIGCONT');
      const resumed = Date.now();
      assert.equal(await handled('after-freeze'), true, 'distrusted after the unanswered pull');
      assert.equal(distrusted, 1, 'counted (tally_ingest_distrusted_messages_total)');
      await sleep(Math.max(0, resumed + 11_000 - Date.now())); // the window: max(10 s, 2 × ack wait)
      assert.equal(await handled('later'), false, 'trusted again once the window passed');
      assert.equal(distrusted, 1);
    } finally {
      await consumer.stop();
      await buf.close();
    }
  });
});
