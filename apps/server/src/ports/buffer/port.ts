/**
 * The ingestion buffer port: the API publishes accepted batches, workers consume them into the
 * stores. Two implementations: in-process (embedded) and NATS JetStream (production).
 * A publish resolves only once the buffer holds the batch; a consumer's handler resolving means
 * "stored, acknowledge"; throwing means "retry later" (redelivery).
 */
export type IngestionKind = 'track' | 'engage' | 'alias';

export interface IngestionBatch {
  /** Stable id of the batch (derived from the request), used for publish-side dedup. */
  id: string;
  kind: IngestionKind;
  projectId: number;
  /** Unix ms when the API accepted it. */
  acceptedAt: number;
  /** Validated, enriched records, ready for the store. */
  records: unknown[];
  /**
   * Set by the buffer (never published) when the batch may have reached a handler before: a
   * redelivery after a crash, a lost ack or a failed write. Stores then write only what is missing.
   */
  redelivered?: boolean;
}

export interface ConsumeOptions {
  /**
   * Batches for which this returns true may reach the handler merged with their mergeable
   * neighbours of the same project and kind (records concatenated in acceptance order): the
   * JetStream buffer turns many small requests into one large store insert that way. A batch
   * whose effect depends on what earlier batches wrote (identity links) must answer false.
   * Unset: every batch on its own.
   */
  mergeable?: (batch: IngestionBatch) => boolean;
  /**
   * When set, the consecutive batches of one project a buffer holds (in-process: all it has
   * queued; JetStream: those of one fetch; any kinds, in acceptance order, up to
   * MAX_MERGED_RECORDS records) reach this in one call instead of reaching `handler` one (merged)
   * batch at a time. A failed unit comes back first (in-process: at the head of the queue,
   * flagged redelivered; JetStream: nak'ed, with the rest of its project's batches), so the next
   * unit starts with its batches; one judged poison is applied batch by batch, flagged redelivered.
   */
  applyUnit?: (batches: IngestionBatch[]) => Promise<void>;
  /**
   * Asked when a batch keeps failing (JetStream: NATS_POISON_AFTER_DELIVERIES deliveries): true
   * (the stores answer) means the batch itself is at fault, and it is dead-lettered like a
   * PoisonError instead of blocking its project forever. Unset: retried as long as it fails.
   */
  storesHealthy?: () => Promise<boolean>;
}

export interface BufferConsumer {
  /** Stops taking new batches and waits for in-flight ones to finish. */
  stop(): Promise<void>;
}

/** What a buffer reports as it works (the metrics module subscribes; see metrics/instrument.ts). */
export interface BufferHooks {
  /** A message arrived again (after a nak, a crash or an ack timeout). */
  redelivered?(): void;
  /**
   * A first delivery handled as a possible redelivery (its rows looked up before writing): it
   * came within a while of a sign that the consumer changed leaders (JetStream).
   */
  distrusted?(): void;
  /** A batch that can never be applied was set aside on the dead-letter subject. */
  deadLettered?(): void;
}

/** Messages not yet delivered, and delivered but not acknowledged. */
export interface BufferLag {
  pending: number;
  ackPending: number;
}

export interface IngestionBuffer {
  /** For start-up logs only: nothing outside ports/ decides anything on it. */
  readonly kind: 'memory' | 'jetstream';
  /**
   * Resolves once the buffer holds the batch. Bounded: a buffer without room either waits for
   * some (in-process) or throws BufferUnavailable (JetStream: full, unreachable, timed out);
   * a batch over the transport's size limit throws BatchTooLarge.
   */
  publish(batch: IngestionBatch): Promise<void>;
  consume(handler: (batch: IngestionBatch) => Promise<void>, opts?: ConsumeOptions): BufferConsumer;
  /** Subscribes to the buffer's reports (several subscribers may watch one buffer). */
  watch(hooks: BufferHooks): void;
  /** Consumer lag, for the metrics gauges; undefined when the buffer has no such figure. */
  lag(): Promise<BufferLag | undefined>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The buffer cannot take batches now (unreachable, full, timed out): the client retries later. */
export class BufferUnavailable extends Error {
  constructor(readonly retryAfterSeconds: number, message = 'ingestion buffer unavailable') {
    super(message);
    this.name = 'BufferUnavailable';
  }
}

/** One batch is larger than the buffer's transport accepts (NATS max_payload). */
export class BatchTooLarge extends Error {
  constructor(message = 'batch larger than the buffer accepts') {
    super(message);
    this.name = 'BatchTooLarge';
  }
}

/** The minimal log a buffer writes to (the service's logger fits). */
export interface BufferLog {
  info(msg: string, meta?: Record<string, unknown>): void;
  error(msg: string, meta?: Record<string, unknown>): void;
}

/** Fans one report out to every subscriber (a failing subscriber never breaks the buffer). */
export class HookSet {
  private list: BufferHooks[] = [];
  add(hooks: BufferHooks) {
    this.list.push(hooks);
  }
  emit(name: keyof BufferHooks) {
    for (const h of this.list) {
      try {
        h[name]?.();
      } catch {
        // metrics must not stop ingestion
      }
    }
  }
}

/**
 * Thrown by a consumer handler for a batch that can never be applied (fails validation forever).
 * The JetStream buffer terminates such a message and records it on the dead-letter subject
 * instead of retrying it; any other error means "retry later".
 */
export class PoisonError extends Error {
  readonly poison = true;
  constructor(message: string) {
    super(message);
    this.name = 'PoisonError';
  }
}

export const isPoison = (err: unknown): boolean =>
  err instanceof PoisonError || (typeof err === 'object' && err !== null && (err as { poison?: unknown }).poison === true);
