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

/**
 * How many items from `start` on make one applyUnit unit: the batch there and the batches of its
 * project right behind it, any kinds, up to MAX_MERGED_RECORDS records (the first always).
 */
export function projectRunLength<T>(items: T[], batchOf: (item: T) => IngestionBatch, start = 0): number {
  const projectId = batchOf(items[start]).projectId;
  let records = batchOf(items[start]).records.length;
  let end = start + 1;
  while (end < items.length && batchOf(items[end]).projectId === projectId && records + batchOf(items[end]).records.length <= MAX_MERGED_RECORDS) {
    records += batchOf(items[end]).records.length;
    end++;
  }
  return end - start;
}

/** Items (in order) split into applyUnit units (projectRunLength). */
export function projectRuns<T>(items: T[], batchOf: (item: T) => IngestionBatch): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length;) {
    const n = projectRunLength(items, batchOf, i);
    out.push(items.slice(i, i + n));
    i += n;
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
