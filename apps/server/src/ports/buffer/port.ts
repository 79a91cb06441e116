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

export interface IngestionBuffer {
  /** For start-up logs only: nothing outside ports/ decides anything on it. */
  readonly kind: 'memory' | 'jetstream';
  /**
   * Resolves once the buffer holds the batch. Bounded: a buffer without room either waits for
   * some (in-process) or refuses (JetStream: full, unreachable, timed out).
   */
  publish(batch: IngestionBatch): Promise<void>;
  consume(handler: (batch: IngestionBatch) => Promise<void>, opts?: ConsumeOptions): BufferConsumer;
  ping(): Promise<void>;
  close(): Promise<void>;
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
