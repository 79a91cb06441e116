import type { Deps } from '../deps.js';
import type { Worker } from '../worker.js';
import { applyBatch, applyUnit, isMergeable } from './apply.js';

/**
 * The ingestion consumer: applies buffered batches to the stores, in order, acknowledging after
 * each. The in-process buffer hands over every queued batch of a project at once (applyUnit: one
 * write per store and table for the lot); JetStream hands over one batch, or consecutive
 * mergeable track batches merged into one.
 */
export function ingestionWorker(deps: Deps): Worker {
  const consumer = deps.buffer.consume((batch) => applyBatch(deps, batch), {
    mergeable: isMergeable,
    applyUnit: (batches) => applyUnit(deps, batches),
    // a batch failing again and again while both stores answer is dead-lettered (JetStream)
    storesHealthy: () => Promise.all([deps.events.ping(), deps.db.raw('select 1')]).then(() => true, () => false),
  });
  return {
    name: 'ingestion',
    stop: () => consumer.stop(),
  };
}

