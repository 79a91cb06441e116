import type { IngestionBatch } from './port.js';

/**
 * Merging of consecutive batches, shared by both buffers (ConsumeOptions.mergeable): many small
 * requests of one project reach the store as one large insert.
 */

/** Records one merged handler call may carry. */
export const MAX_MERGED_RECORDS = 50_000;

/**
 * Splits items (in order) into units: consecutive mergeable batches of one project and kind
 * (bounded by MAX_MERGED_RECORDS) together, everything else on its own. Items keep their order.
 */
export function mergeUnits<T>(items: T[], batchOf: (item: T) => IngestionBatch, mergeable: (batch: IngestionBatch) => boolean): T[][] {
  const out: T[][] = [];
  let records = 0;
  let open = false; // whether the last unit may take more batches
  for (const item of items) {
    const batch = batchOf(item);
    const last = out[out.length - 1];
    const n = batch.records.length;
    const canMerge = mergeable(batch);
    const head = last && batchOf(last[0]);
    if (open && canMerge && head.kind === batch.kind && head.projectId === batch.projectId && records + n <= MAX_MERGED_RECORDS) {
      last.push(item);
      records += n;
    } else {
      out.push([item]);
      records = n;
      open = canMerge;
    }
  }
  return out;
}

/** Consecutive batches of one project and kind as one batch (records in acceptance order). */
export function mergeBatches(batches: IngestionBatch[]): IngestionBatch {
  const first = batches[0];
  if (batches.length === 1) return first;
  return {
    id: `${first.id}+${batches.length - 1}`,
    kind: first.kind,
    projectId: first.projectId,
    acceptedAt: first.acceptedAt,
    records: batches.flatMap((b) => b.records),
    ...(batches.some((b) => b.redelivered) ? { redelivered: true } : {}),
  };
}
