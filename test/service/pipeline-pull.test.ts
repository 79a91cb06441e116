import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { AckPolicy, connect, nanos, type JsMsg, type NatsConnection } from 'nats';
import { natsConfig } from '../../apps/server/src/ports/buffer/jetstream-config.js';
import { Puller } from '../../apps/server/src/ports/buffer/jetstream-pull.js';
import { requireServices } from '../support/backends.js';

/**
 * The worker's pulls against the real nats-server. nats-server 2.9 keeps a `no_wait` pull that
 * the in-flight window (max_ack_pending) cut short, and serves the rest of its batch once acks
 * free the window; those messages must reach the worker then, not ack_wait later.
 */
describe('pipeline: pulling from JetStream', function () {
  this.timeout(60_000);
  let nc: NatsConnection;
  const tag = randomBytes(4).toString('hex');
  const cfg = natsConfig({
    NATS_STREAM: `P_${tag}`, NATS_CONSUMER: 'w', NATS_FETCH_BATCH: '3', NATS_MAX_ACK_PENDING: '3',
    NATS_ACK_WAIT_MS: '30000', NATS_FETCH_EXPIRES_MS: '1000',
  });

  before(async function () {
    requireServices(this, 'TEST_NATS_URL');
    nc = await connect({ servers: process.env.TEST_NATS_URL });
    const jsm = await nc.jetstreamManager();
    await jsm.streams.add({ name: cfg.stream, subjects: [`${cfg.stream}.>`], storage: 'memory' as never });
    await jsm.consumers.add(cfg.stream, { durable_name: cfg.consumer, ack_policy: AckPolicy.Explicit, max_ack_pending: 3, ack_wait: nanos(cfg.ackWaitMs) });
    const js = nc.jetstream();
    for (let i = 0; i < 6; i++) await js.publish(`${cfg.stream}.x`, new TextEncoder().encode(`m${i}`));
  });
  after(async () => {
    if (!nc) return;
    await (await nc.jetstreamManager()).streams.delete(cfg.stream).catch(() => undefined);
    await nc.close();
  });

  const text = (msgs: JsMsg[]) => msgs.map((m) => new TextDecoder().decode(m.data));

  it('hands the rest of a pull that the in-flight window cut short to the next fetch, in stream order', async () => {
    const puller = new Puller(nc, cfg);
    try {
      const first: JsMsg[] = [];
      await puller.fetch(first);
      assert.deepEqual(text(first), ['m0', 'm1', 'm2']);
      // One slot free: the next pull gets m3 and stays open at the server for two more.
      first[0].ack();
      await nc.flush();
      const second: JsMsg[] = [];
      await puller.fetch(second);
      assert.deepEqual(text(second), ['m3']);
      // The acks free the window: the server serves the pull that ended above with m4 and m5.
      first[1].ack();
      first[2].ack();
      second[0].ack();
      await nc.flush();
      await new Promise((r) => setTimeout(r, 300)); // they arrive while no pull is under way
      const t0 = Date.now();
      const third: JsMsg[] = [];
      await puller.fetch(third);
      assert.deepEqual(text(third), ['m4', 'm5']);
      assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms (ack_wait is 30 s)`);
      for (const m of third) m.ack();
      await nc.flush();
    } finally {
      puller.close();
    }
  });
});
