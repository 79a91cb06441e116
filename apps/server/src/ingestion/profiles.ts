import type { Deps } from '../deps.js';
import { nullProto, propArrays, type EngageRecord, type Props } from './records.js';

/**
 * Profiles in the event store's `profiles` table, keyed by the cluster's canonical id at write
 * time (see ports/events/schema.ts). Every change writes a new version of the whole row; the
 * latest `updated_at` wins. `batch_id` names the batch that wrote a version, which makes a
 * redelivered batch a no-op.
 */
export interface ProfileRow {
  distinct_id: string;
  properties: Props;
  updated_at: number;
  deleted: boolean;
  batch_id: string;
}

/** Current versions of the given profile keys. */
export async function loadProfiles(deps: Deps, projectId: number, ids: string[]): Promise<Map<string, ProfileRow>> {
  const out = new Map<string, ProfileRow>();
  for (const v of await deps.events.latestProfiles(projectId, ids)) {
    let props: Props;
    try {
      props = nullProto(JSON.parse(v.properties));
    } catch {
      props = Object.create(null);
    }
    out.set(v.distinct_id, { distinct_id: v.distinct_id, properties: props, updated_at: v.updated_at, deleted: v.deleted, batch_id: v.batch_id });
  }
  return out;
}

/** Writes new profile versions (one per key). */
export async function writeProfiles(deps: Deps, projectId: number, rows: ProfileRow[]): Promise<void> {
  if (rows.length === 0) return;
  await deps.events.writeProfiles(rows.map((r) => {
    const props = r.deleted ? Object.create(null) : r.properties;
    return {
      project_id: projectId, distinct_id: r.distinct_id, properties: JSON.stringify(props), ...propArrays(props),
      updated_at: r.updated_at, deleted: r.deleted, batch_id: r.batch_id,
    };
  }));
}

/** Applies one op to a profile state in place (the API's semantics, in the order set_once, set, add, unset, delete). */
export function applyOp(state: { properties: Props; deleted: boolean }, op: EngageRecord): void {
  if (op.set_once || op.set || op.add) {
    if (state.deleted) {
      state.properties = Object.create(null);
      state.deleted = false;
    }
  }
  const p = state.properties;
  if (op.set_once) for (const k of Object.keys(op.set_once)) if (!(k in p)) p[k] = op.set_once[k];
  if (op.set) for (const k of Object.keys(op.set)) p[k] = op.set[k];
  if (op.add) {
    for (const k of Object.keys(op.add)) {
      const cur = p[k];
      const base = typeof cur === 'number' && Number.isFinite(cur) ? cur : 0;
      const next = base + op.add[k];
      p[k] = Number.isFinite(next) ? next : base;
    }
  }
  if (op.unset) for (const k of op.unset) delete p[k];
  if (op.delete) {
    state.properties = Object.create(null);
    state.deleted = true;
  }
}

/** The next version stamp of a profile: now, but always after the version it replaces. */
export const nextVersion = (prev: number | undefined, now: number) => Math.max(now, (prev ?? 0) + 1);
