import { headers, type JetStreamClient, type JsMsg, type NatsConnection } from 'nats';
import type { NatsConfig } from './jetstream-config.js';
import type { BufferLog, HookSet, IngestionBatch } from './port.js';
import { isPoison } from './port.js';
import { mergeBatches, mergeUnits, projectRuns } from './batches.js';
import { decodeBatch } from './jetstream-encoding.js';

/**
 * Delivery policy of the JetStream buffer: what happens to the messages of one fetch.
 * They are decoded, grouped per project in stream order; with `applyUnit`, a project's batches of
 * the fetch (any kinds, up to MAX_MERGED_RECORDS records) go to it in one call (one write per
 * store and table), otherwise consecutive mergeable batches of a project and kind are merged into
 * one handler call; each project's batches are applied in order
 * (up to 4 projects at once), and messages are acked after the handler resolved. A handler
 * failure naks that batch and every later batch of the project in the fetch with an exponential
 * delay (they come back first, in order). A message that cannot be decoded, or whose handler
 * throws a PoisonError, is copied to the dead-letter subject and terminated; so is one that keeps
 * failing while the stores answer (see failsForever). `working()` keeps long runs from being
 * redelivered.
 */

interface Item {
  msg: JsMsg;
  batch: IngestionBatch;
}

/** Failures while the stores answered, in this worker, before a batch is judged poison. */
const HEALTHY_FAILURES = 3;

export interface DeliveryContext {
  nc: NatsConnection;
  js: JetStreamClient;
  cfg: NatsConfig;
  log: BufferLog;
  hooks: HookSet;
  logThrottled(msg: string, err: unknown): void;
}

export class Delivery {
  private healthyFailures = new Map<number, number>();
  /** Until then every delivery is treated as possibly seen before (see `distrust`). */
  private distrustUntil = 0;

  constructor(
    private x: DeliveryContext,
    private handler: (batch: IngestionBatch) => Promise<void>,
    private mergeable: (batch: IngestionBatch) => boolean,
    private storesHealthy?: () => Promise<boolean>,
    private applyUnit?: (batches: IngestionBatch[]) => Promise<void>,
  ) {}

  /**
   * From now until a while after, deliveries are handled as redeliveries (the store writes only
   * the rows it lacks). A replicated consumer that loses its leader hands out again, flagged as
   * first deliveries, the messages its old leader delivered but had not replicated as delivered
   * (nats-server #6566): another worker may have stored them already. Called on a pull that went
   * unanswered or ended on a leadership change, a failed fetch, a NATS reconnect, and a real
   * redelivery (the failure behind it may have rewound the consumer too). Each call extends it.
   */
  distrust(): void {
    this.distrustUntil = Date.now() + Math.max(10_000, 2 * this.x.cfg.ackWaitMs);
  }

  /** Applies one fetch; returns how long to pause before the next fetch (after a store failure). */
  async processFetch(msgs: JsMsg[]): Promise<number> {
    const settled = new Set<JsMsg>();
    const keepAlive = setInterval(() => {
      for (const m of msgs) if (!settled.has(m)) m.working();
    }, Math.max(500, Math.floor(this.x.cfg.ackWaitMs / 3)));
    try {
      const byProject = new Map<number, Item[]>();
      if (msgs.some((m) => m.redelivered)) this.distrust();
      const distrusted = Date.now() < this.distrustUntil;
      for (const msg of msgs) {
        if (msg.redelivered) this.x.hooks.emit('redelivered');
        const decoded = decodeBatch(msg, this.x.cfg.subjectPrefix);
        if (typeof decoded === 'string') {
          await this.deadLetter(msg, decoded, settled);
          continue;
        }
        if (msg.redelivered) decoded.redelivered = true;
        else if (distrusted) {
          decoded.redelivered = true;
          this.x.hooks.emit('distrusted');
        }
        const list = byProject.get(decoded.projectId) ?? [];
        list.push({ msg, batch: decoded });
        byProject.set(decoded.projectId, list);
      }
      const pauses = await mapLimit([...byProject.values()], 4, (items) => this.processProject(items, settled));
      // Make sure the acks reached the server before the next fetch (they free the window).
      await this.x.nc.flush().catch(() => undefined);
      const pause = Math.max(0, ...pauses);
      return pause > 0 ? pause + 100 : 0;
    } finally {
      clearInterval(keepAlive);
    }
  }

  private async processProject(items: Item[], settled: Set<JsMsg>): Promise<number> {
    const queue = this.applyUnit ? projectRuns(items, (i) => i.batch) : mergeUnits(items, (i) => i.batch, this.mergeable);
    while (queue.length > 0) {
      const unit = queue.shift()!;
      try {
        if (this.applyUnit) await this.applyUnit(unit.map((i) => i.batch));
        else await this.handler(mergeBatches(unit.map((i) => i.batch)));
        for (const { msg } of unit) { msg.ack(); settled.add(msg); }
        continue;
      } catch (err) {
        const reason = isPoison(err) ? (err as Error).message : await this.failsForever(unit, err);
        if (reason !== undefined) {
          if (unit.length > 1) {
            // Find the poison message: apply the merged batches one by one. A unit may have
            // written its links and profiles before failing: its batches go as redeliveries.
            queue.unshift(...unit.map((i) => [this.applyUnit ? { ...i, batch: { ...i.batch, redelivered: true } } : i]));
            continue;
          }
          if (await this.deadLetter(unit[0].msg, reason, settled)) continue;
        }
        // Store failure: this batch and every later one of the project come back later, in order.
        const rest = [unit, ...queue].flat();
        const delay = this.nakDelay(unit[0].msg);
        for (const { msg } of rest) { msg.nak(delay); settled.add(msg); }
        this.x.logThrottled(`ingestion: store write failed, ${rest.length} message(s) retried in ${delay} ms`, err);
        return delay;
      }
    }
    return 0;
  }

  /**
   * A reason when a batch failed `poisonAfterDeliveries` deliveries and, in this worker, at least
   * HEALTHY_FAILURES times while the stores answered (so a store that is just coming back does
   * not turn good data into dead letters); undefined otherwise.
   */
  private async failsForever(unit: Item[], err: unknown): Promise<string | undefined> {
    const deliveries = Math.min(...unit.map((i) => i.msg.info.redeliveryCount));
    if (!this.storesHealthy || deliveries < this.x.cfg.poisonAfterDeliveries) return undefined;
    if (!(await this.storesHealthy().catch(() => false))) return undefined;
    if (unit.length > 1) return 'split'; // merged: retried one by one, each batch judged alone
    const key = unit[0].msg.seq;
    const n = (this.healthyFailures.get(key) ?? 0) + 1;
    if (this.healthyFailures.size > 10_000) this.healthyFailures.clear();
    this.healthyFailures.set(key, n);
    if (n < HEALTHY_FAILURES) return undefined;
    this.healthyFailures.delete(key);
    return `failed ${deliveries} deliveries, ${n} of them while the stores answered: ${err instanceof Error ? err.message : String(err)}`;
  }

  private nakDelay(msg: JsMsg): number {
    const deliveries = Math.max(1, msg.info.redeliveryCount);
    return Math.min(500 * 2 ** Math.min(deliveries - 1, 10), this.x.cfg.nakMaxDelayMs);
  }

  /** Copies the message to the dead-letter subject, then terminates it. False if that failed. */
  private async deadLetter(msg: JsMsg, reason: string, settled: Set<JsMsg>): Promise<boolean> {
    const { cfg } = this.x;
    const h = headers();
    h.set('Ingest-Error', reason.replace(/[\r\n]+/g, ' ').slice(0, 1000) || 'poison');
    h.set('Ingest-Subject', msg.subject);
    h.set('Ingest-Stream-Seq', String(msg.seq));
    const project = msg.subject.slice(cfg.subjectPrefix.length + 1);
    try {
      await this.x.js.publish(deadSubject(cfg, /^\d+$/.test(project) ? project : 'unknown'), msg.data, {
        msgID: `dead.${cfg.stream}.${msg.seq}`,
        headers: h,
        timeout: cfg.publishTimeoutMs,
      });
    } catch (err) {
      this.x.logThrottled('ingestion: could not record a poison message on the dead-letter subject', err);
      if (!settled.has(msg)) { msg.nak(this.nakDelay(msg)); settled.add(msg); }
      return false;
    }
    msg.term();
    settled.add(msg);
    this.x.hooks.emit('deadLettered');
    this.x.log.error('ingestion: poison message dead-lettered', { subject: msg.subject, seq: msg.seq, reason });
    return true;
  }
}

export const deadSubject = (cfg: NatsConfig, project: number | string) => `${cfg.subjectPrefix}.dead.${project}`;

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
  return out;
}
