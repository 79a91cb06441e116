import type { Deps } from '../deps.js';
import type { Worker } from '../workers.js';
import { applyBatch, isMergeable } from './apply.js';
import { flushEvents } from './events.js';

/** The ingestion consumer: applies buffered batches to the stores, in order, acknowledging after each. */
export function ingestionWorker(deps: Deps): Worker {
  const consumer = deps.buffer.consume((batch) => applyBatch(deps, batch), { mergeable: isMergeable });
  return {
    name: 'ingestion',
    async stop() {
      await consumer.stop();
      await flushEvents(deps); // events held for a group write (in-process buffer only)
    },
  };
}
