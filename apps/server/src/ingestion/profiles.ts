import type { Deps } from '../deps.js';
import { sqlInt, sqlString } from '../ports/events/index.js';
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
  if (ids.length === 0) return out;
  const d = deps.events.dialect;
  const list = ids.map((id) => sqlString(d, id)).join(', ');
  const final = d === 'clickhouse' ? 'FINAL' : '';
  const rows = await deps.events.query<{ distinct_id: string; properties: string; updated_at: number; deleted: number; batch_id: string }>(
    `SELECT distinct_id, properties, updated_at, deleted, batch_id FROM profiles ${final}
     WHERE project_id = ${sqlInt(projectId)} AND distinct_id IN (${list})`,
  );
  for (const r of rows) {
    const prev = out.get(r.distinct_id);
    if (prev && prev.updated_at >= Number(r.updated_at)) continue;
    let props: Props;
    try {
      props = nullProto(JSON.parse(r.properties));
    } catch {
      props = Object.create(null);
    }
    out.set(r.distinct_id, {
      distinct_id: r.distinct_id, properties: props, updated_at: Number(r.updated_at), deleted: Number(r.deleted) === 1, batch_id: r.batch_id,
    });
  }
  return out;
}

/** Writes new profile versions (one per key). */
export async function writeProfiles(deps: Deps, projectId: number, rows: ProfileRow[]): Promise<void> {
  if (rows.length === 0) return;
  const stored = rows.map((r) => {
    const props = r.deleted ? Object.create(null) : r.properties;
    return {
      project_id: projectId, distinct_id: r.distinct_id, properties: JSON.stringify(props), ...propArrays(props),
      updated_at: r.updated_at, deleted: r.deleted ? 1 : 0, batch_id: r.batch_id,
    };
  });
  if (deps.events.dialect === 'clickhouse') {
    await deps.events.insertRows('profiles', stored);
    return;
  }
  const s = (v: string) => sqlString('duckdb', v);
  const arr = (a: string[]) => (a.length ? `[${a.map(s).join(', ')}]::VARCHAR[]` : `[]::VARCHAR[]`);
  const values = stored
    .map((r) => `(${sqlInt(r.project_id)}, ${s(r.distinct_id)}, ${s(r.properties)}, ${arr(r.prop_keys)}, ${arr(r.prop_values)}, ${sqlInt(r.updated_at)}, ${r.deleted}, ${s(r.batch_id)})`)
    .join(',\n');
  await deps.events.command(
    `INSERT OR REPLACE INTO profiles (project_id, distinct_id, properties, prop_keys, prop_values, updated_at, deleted, batch_id) VALUES ${values}`,
  );
}

/** Applies one op to a profile state in place (the spec's semantics, in the order set_once, set, add, unset, delete). */
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
