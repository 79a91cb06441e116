import { createInbox, nanos, type JsMsg, type NatsConnection } from 'nats';
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
 * Resolves with a reason when a pull went unanswered (its guard timed out: the consumer's leader
 * is gone) or ended on a leadership change: the consumer may then hand out again, as first
 * deliveries, messages it had delivered but not yet replicated as delivered.
 */
export async function fetchAvailable(nc: NatsConnection, cfg: NatsConfig, msgs: JsMsg[]): Promise<string | undefined> {
  const disturbed = await pull(nc, cfg, msgs, cfg.fetchBatch, 0);
  if (msgs.length > 0 || disturbed) return disturbed;
  const waited = await pull(nc, cfg, msgs, 1, cfg.fetchExpiresMs);
  if (msgs.length === 1 && msgs[0].info.pending > 0) return (await pull(nc, cfg, msgs, cfg.fetchBatch - 1, 0)) ?? waited;
  return waited;
}

/** Quiet time after a no_wait pull's last message before it is taken as cut short. */
const NO_WAIT_IDLE_MS = 50;

/**
 * One pull request: `no_wait` when expiresMs is 0; resolves at its status, its batch, a no_wait
 * pull's quiet end (NO_WAIT_IDLE_MS after its last message), or a guard timeout (the guard and a
 * leadership-change status with a reason to distrust first deliveries for a while).
 */
function pull(nc: NatsConnection, cfg: NatsConfig, msgs: JsMsg[], batch: number, expiresMs: number): Promise<string | undefined> {
  if (batch <= 0) return Promise.resolve(undefined);
  return new Promise<string | undefined>((resolve, reject) => {
    let got = 0;
    let done = false;
    let idle: ReturnType<typeof setTimeout> | undefined;
    const inbox = createInbox();
    const finish = (err?: unknown, disturbed?: string) => {
      if (done) return;
      done = true;
      clearTimeout(guard);
      clearTimeout(idle);
      sub.unsubscribe();
      if (err) reject(err);
      else resolve(disturbed);
    };
    const sub = nc.subscribe(inbox, {
      callback: (err, m) => {
        if (err) return finish(err);
        const code = m.headers?.code ?? 0;
        if (code >= 100 && m.data.length === 0 && m.headers) {
          if (code === 100) return; // idle heartbeat / flow control
          // 404 no messages, 408 expired / no_wait ran out, 409 e.g. max ack pending: end of this pull
          if (code === 404 && /consumer/i.test(m.headers.description)) return finish(new Error(`consumer not found: ${m.headers.description}`));
          if (code === 409 && /leader/i.test(m.headers.description)) return finish(undefined, `pull ended: ${code} ${m.headers.description}`);
          if (code === 404 || code === 408 || code === 409) return finish();
          return finish(new Error(`pull: ${code} ${m.headers.description}`));
        }
        msgs.push(toJsMsg(m, cfg.publishTimeoutMs));
        if (++got >= batch) return finish();
        // nats-server 2.9 ends a no_wait pull that the consumer's in-flight window cut short
        // (another worker holds the rest of it) with no status at all: without this the pull
        // waited for its guard, 2 s, and then distrusted the next deliveries. Once messages stop
        // coming, a round trip to the server (flush) makes sure none it sent is still unread.
        if (expiresMs === 0) {
          clearTimeout(idle);
          idle = setTimeout(() => void nc.flush().then(() => finish(), () => finish()), NO_WAIT_IDLE_MS);
        }
      },
    });
    const guard = setTimeout(() => finish(undefined, 'pull request unanswered'), expiresMs + Math.max(2000, cfg.publishTimeoutMs));
    const req: Record<string, unknown> = { batch };
    if (expiresMs > 0) req.expires = nanos(expiresMs);
    else req.no_wait = true;
    nc.publish(`$JS.API.CONSUMER.MSG.NEXT.${cfg.stream}.${cfg.consumer}`, JSON.stringify(req), { reply: inbox });
  });
}
