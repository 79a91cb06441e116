import type { Deps } from '../deps.js';
import type { Worker } from '../workers.js';
import { applyBatch, isMergeable } from './apply.js';

/** The ingestion consumer: applies buffered batches to the stores, in order, acknowledging after each. */
export function ingestionWorker(deps: Deps): Worker {
  const consumer = deps.buffer.consume((batch) => applyBatch(deps, batch), { mergeable: isMergeable });
  return { name: 'ingestion', stop: () => consumer.stop() };
}
