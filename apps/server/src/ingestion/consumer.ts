import type { Deps } from '../deps.js';
import type { BackgroundLoop } from '../background/loop.js';
import { applyBatch, applyUnit, isMergeable } from './apply.js';

/**
 * The ingestion consumer: applies buffered batches to the stores, in order, acknowledging after
 * each. The in-process buffer hands over every queued batch of a project at once, JetStream a
 * project's batches of one fetch (applyUnit: one write per store and table for the lot).
 */
export function ingestionConsumer(deps: Deps): BackgroundLoop {
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

