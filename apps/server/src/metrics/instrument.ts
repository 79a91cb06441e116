import type { IngestionBatch, IngestionBuffer } from '../ports/buffer/port.js';
import { ingestMetrics, setLagSource } from './registry.js';

const instrumented = new WeakSet<object>();

/** Times one store write of `batches` (a handler or applyUnit call) and counts their records stored, or the failure. */
async function counted(batches: IngestionBatch[], write: () => Promise<void>): Promise<void> {
  const end = ingestMetrics.insertSeconds.startTimer();
  try {
    await write();
  } catch (err) {
    if (!(err as { poison?: boolean })?.poison) ingestMetrics.storeFailures.inc();
    throw err;
  } finally {
    end();
  }
  for (const b of batches) ingestMetrics.stored.inc({ kind: b.kind }, b.records.length);
}

/**
 * Counts accepted / published / stored records and times the handler (and applyUnit), for either buffer. Wraps
 * `publish` and `consume` on the instance itself, so the object keeps its class (tests may call
 * MemoryBuffer-only methods such as `idle()`). What only the buffer sees (redeliveries, dead
 * letters, consumer lag) comes through its hooks and `lag()`.
 */
export function instrumentBuffer<B extends IngestionBuffer>(buffer: B): B {
  if (instrumented.has(buffer)) return buffer;
  instrumented.add(buffer);
  const publish = buffer.publish.bind(buffer);
  const consume = buffer.consume.bind(buffer);
  const close = buffer.close.bind(buffer);
  buffer.watch({
    redelivered: () => ingestMetrics.redelivered.inc(),
    distrusted: () => ingestMetrics.distrusted.inc(),
    deadLettered: () => ingestMetrics.deadLettered.inc(),
  });
  const lag = () => buffer.lag();
  setLagSource(lag);
  buffer.close = async () => {
    setLagSource(undefined, lag);
    await close();
  };
  buffer.publish = async (batch: IngestionBatch) => {
    const n = batch.records.length;
    ingestMetrics.accepted.inc({ kind: batch.kind }, n);
    try {
      await publish(batch);
    } catch (err) {
      ingestMetrics.publishFailures.inc();
      throw err;
    }
    ingestMetrics.published.inc({ kind: batch.kind }, n);
  };
  buffer.consume = (handler, opts = {}) => {
    const { applyUnit } = opts;
    return consume((batch) => counted([batch], () => handler(batch)), {
      ...opts,
      ...(applyUnit ? { applyUnit: (batches: IngestionBatch[]) => counted(batches, () => applyUnit(batches)) } : {}),
    });
  };
  return buffer;
}
