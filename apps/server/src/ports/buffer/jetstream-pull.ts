import { createInbox, nanos, type JsMsg, type Msg, type NatsConnection, type Subscription } from 'nats';
import { toJsMsg } from 'nats/lib/jetstream/jsmsg.js';
import type { NatsConfig } from './jetstream-config.js';

/**
 * Pulling from the durable consumer. One fetch of up to `fetchBatch` messages returns as soon
 * as the consumer has nothing more pending, instead of waiting `fetchExpiresMs` for the batch to
 * fill: a `no_wait` pull request takes what is there (nats-server 2.9 ends it with a 408/404
 * status once it ran out). Only when nothing is there does it long-poll (a pull of 1 with
 * `expires` = `fetchExpiresMs`) for the first message, then takes the rest the same way. Under
 * load each fetch collects what arrived while the previous insert ran (the insert time sets the
 * batch size); when idle the first message is applied at once. Raw pull requests are read until
 * the server's terminating status, so no delivered message is left behind (the client's `fetch`
 * stops at the first message reporting 0 pending, and with `no_wait` a later delivery would then
 * wait for `ack_wait`).
 *
 * Every pull replies to a subject of its own under one subscription that lasts as long as the
 * puller: a message the server delivers for a pull that already ended (nats-server 2.9 keeps a
 * `no_wait` pull that the in-flight window cut short and serves the rest of its batch once acks
 * free the window; a pull given up on its guard may still be answered) joins the pull under way,
 * or opens the next fetch. With a subscription per pull it was dropped unread and came back only
 * after `ack_wait`: about one `bench:pipeline` run in three stalled ~30 s (docs/pipeline.md).
 *
 * `fetch` resolves with a reason when a pull went unanswered (its guard timed out: the consumer's
 * leader is gone) or ended on a leadership change: the consumer may then hand out again, as first
 * deliveries, messages it had delivered but not yet replicated as delivered.
 */
export class Puller {
  private readonly prefix = createInbox();
  private sub?: Subscription;
  private pulls = 0;
  /** The pull being read: its reply subject and what it does with each message. */
  private current?: { subject: string; receive(m: Msg): void };
  /** Messages delivered for pulls that had ended: the next fetch's first. */
  private late: JsMsg[] = [];

  constructor(private nc: NatsConnection, private cfg: NatsConfig) {}

  /** Appends the fetched messages to `msgs` in stream order (a late one may precede the pull's own). */
  async fetch(msgs: JsMsg[]): Promise<string | undefined> {
    this.subscribe();
    msgs.push(...this.late.splice(0));
    try {
      const disturbed = await this.pull(msgs, this.cfg.fetchBatch - msgs.length, 0);
      if (msgs.length > 0 || disturbed) return disturbed;
      const waited = await this.pull(msgs, 1, this.cfg.fetchExpiresMs);
      if (msgs.length === 1 && msgs[0].info.pending > 0) return (await this.pull(msgs, this.cfg.fetchBatch - 1, 0)) ?? waited;
      return waited;
    } finally {
      msgs.sort((a, b) => a.seq - b.seq);
    }
  }

  /** Stops listening; messages kept for a next fetch are left to JetStream's redelivery. */
  close(): void {
    this.sub?.unsubscribe();
    this.sub = undefined;
    this.late = [];
  }

  private subscribe(): void {
    if (this.sub && !this.sub.isClosed()) return;
    this.sub = this.nc.subscribe(`${this.prefix}.*`, {
      callback: (err, m) => {
        if (err) return;
        // A stream message carries its own subject, not the pull's: whichever pull it was sent
        // for, it joins the pull under way (counted in its batch), else the next fetch. A status
        // carries the pull's subject: one for a pull that has ended is stale.
        if (isStatus(m)) {
          if (this.current && m.subject === this.current.subject) this.current.receive(m);
        } else if (this.current) this.current.receive(m);
        else this.late.push(toJsMsg(m, this.cfg.publishTimeoutMs));
      },
    });
  }

  /**
   * One pull request: `no_wait` when expiresMs is 0; resolves at its status, its batch, a no_wait
   * pull's quiet end (NO_WAIT_IDLE_MS after its last message), or a guard timeout (the guard and a
   * leadership-change status with a reason to distrust first deliveries for a while).
   */
  private pull(msgs: JsMsg[], batch: number, expiresMs: number): Promise<string | undefined> {
    if (batch <= 0) return Promise.resolve(undefined);
    const { nc, cfg } = this;
    const subject = `${this.prefix}.${++this.pulls}`;
    return new Promise<string | undefined>((resolve, reject) => {
      let got = 0;
      let done = false;
      let idle: ReturnType<typeof setTimeout> | undefined;
      const finish = (err?: unknown, disturbed?: string) => {
        if (done) return;
        done = true;
        clearTimeout(guard);
        clearTimeout(idle);
        if (this.current?.subject === subject) this.current = undefined;
        if (err) reject(err);
        else resolve(disturbed);
      };
      this.current = {
        subject,
        receive: (m) => {
          if (isStatus(m)) {
            const code = m.headers!.code;
            if (code === 100) return; // idle heartbeat / flow control
            // 404 no messages, 408 expired / no_wait ran out, 409 e.g. max ack pending: end of this pull
            if (code === 404 && /consumer/i.test(m.headers!.description)) return finish(new Error(`consumer not found: ${m.headers!.description}`));
            if (code === 409 && /leader/i.test(m.headers!.description)) return finish(undefined, `pull ended: ${code} ${m.headers!.description}`);
            if (code === 404 || code === 408 || code === 409) return finish();
            return finish(new Error(`pull: ${code} ${m.headers!.description}`));
          }
          msgs.push(toJsMsg(m, cfg.publishTimeoutMs));
          if (++got >= batch) return finish();
          // nats-server 2.9 answers a no_wait pull that the consumer's in-flight window cut short
          // with no status (it keeps the request; see the class comment): without this the pull
          // waited for its guard, 2 s, and then distrusted the next deliveries. Once messages stop
          // coming, a round trip to the server (flush) makes sure none it sent is still unread.
          if (expiresMs === 0) {
            clearTimeout(idle);
            idle = setTimeout(() => void nc.flush().then(() => finish(), () => finish()), NO_WAIT_IDLE_MS);
          }
        },
      };
      const guard = setTimeout(() => finish(undefined, 'pull request unanswered'), expiresMs + Math.max(2000, cfg.publishTimeoutMs));
      const req: Record<string, unknown> = { batch };
      if (expiresMs > 0) req.expires = nanos(expiresMs);
      else req.no_wait = true;
      nc.publish(`$JS.API.CONSUMER.MSG.NEXT.${cfg.stream}.${cfg.consumer}`, JSON.stringify(req), { reply: subject });
    });
  }
}

/** Quiet time after a no_wait pull's last message before it is taken as cut short. */
const NO_WAIT_IDLE_MS = 50;

/** A status message of a pull (no data, a code of 100 or more), not a stream message. */
const isStatus = (m: Msg) => m.data.length === 0 && !!m.headers && m.headers.code >= 100;
