import type { Deps } from '../deps.js';
import { int } from '../env.js';
import { hashId } from './store.js';

/**
 * Tombstones: events naming an id of a delete request are dropped at ingestion while the delete
 * is pending or running, and for PRIVACY_TOMBSTONE_MS after it completed (default 7 days; 0: no
 * window after completion), so a deleted person does not come back from the ingestion buffer or
 * from a client that still sends their id. Completed deletes keep only hashes of their ids, so
 * incoming ids are compared as SHA-256 hashes.
 */
export const tombstoneWindowMs = (env = process.env) => int(env, 'PRIVACY_TOMBSTONE_MS', 7 * 86_400_000);

/** Hashes of the ids currently tombstoned in the project (empty when there are none: the common case). */
export async function tombstonedHashes(deps: Deps, projectId: number, now = Date.now()): Promise<Set<string>> {
  const rows = await deps.db('privacy_requests')
    .where({ project_id: projectId, type: 'delete' })
    .andWhere((q) => q.whereIn('status', ['pending', 'running']).orWhere((c) => c.where({ status: 'completed' }).andWhere('completed_at', '>=', now - tombstoneWindowMs())))
    .select('status', 'distinct_ids', 'cluster_ids');
  const out = new Set<string>();
  for (const r of rows) {
    const cluster: string[] = r.cluster_ids ? JSON.parse(r.cluster_ids) : [];
    if (r.status === 'completed') for (const h of cluster) out.add(h);
    else for (const id of [...JSON.parse(r.distinct_ids), ...cluster] as string[]) out.add(hashId(id));
  }
  return out;
}

/** The ids a buffered record names: its distinct_id, an alias, and ids that would link to it. */
function idsOf(record: Record<string, unknown>): string[] {
  const ids: string[] = [];
  for (const v of [record.distinct_id, record.alias]) if (typeof v === 'string') ids.push(v);
  const props = record.properties as Record<string, unknown> | undefined;
  if (props && typeof props === 'object') {
    for (const k of ['$device_id', '$user_id', '$anon_distinct_id']) if (typeof props[k] === 'string') ids.push(props[k] as string);
  }
  return ids;
}

/** The batch without records naming a tombstoned id (the ingestion worker's hook, before applying). */
export async function withoutTombstoned<B extends { projectId: number; records: unknown[] }>(deps: Deps, batch: B): Promise<B> {
  if (batch.records.length === 0) return batch;
  const dead = await tombstonedHashes(deps, batch.projectId);
  if (dead.size === 0) return batch;
  const records = batch.records.filter((r) => !idsOf(r as Record<string, unknown>).some((id) => dead.has(hashId(id))));
  return records.length === batch.records.length ? batch : { ...batch, records };
}
