import type { IngestionBatch } from '../ports/buffer/port.js';
import type { AliasRecord, EngageRecord, TrackRecord } from './records.js';

/**
 * The batches ingestion publishes, as a discriminated union: the buffer carries them as plain
 * envelopes (IngestionBatch, records unknown), the kind says what the records are.
 */
interface BatchOf<K extends IngestionBatch['kind'], R> extends IngestionBatch {
  kind: K;
  records: R[];
}

/** Events (and `$create_alias` events, applied as links) from /track. */
export type TrackBatch = BatchOf<'track', TrackRecord>;
/** Profile updates from /engage. */
export type EngageBatch = BatchOf<'engage', EngageRecord>;
/** Identity links from /alias. */
export type AliasBatch = BatchOf<'alias', AliasRecord>;

export type Batch = TrackBatch | EngageBatch | AliasBatch;

/**
 * A buffered envelope as the batch ingestion published. The records were validated when they
 * were accepted and the buffer checked the envelope (JetStream: decodeBatch), so this only names
 * the type; a kind nobody publishes is left for the caller's exhaustive switch.
 */
export const asBatch = (envelope: IngestionBatch): Batch => envelope as Batch;
