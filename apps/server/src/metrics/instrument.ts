import type { IngestionBatch, IngestionBuffer } from '../ports/buffer/port.js';
import { ingestMetrics, setLagSource } from './registry.js';

const instrumented = new WeakSet<object>();

/**
 * Counts accepted / published / stored records and times the handler, for either buffer. Wraps
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
  buffer.consume = (handler, opts) =>
    consume(async (batch) => {
      const end = ingestMetrics.insertSeconds.startTimer();
      try {
        await handler(batch);
      } catch (err) {
        if (!(err as { poison?: boolean })?.poison) ingestMetrics.storeFailures.inc();
        throw err;
      } finally {
        end();
      }
      ingestMetrics.stored.inc({ kind: batch.kind }, batch.records.length);
    }, opts);
  return buffer;
}
