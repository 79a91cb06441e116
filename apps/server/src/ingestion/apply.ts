import type { Deps } from '../deps.js';
import { PoisonError, type IngestionBatch } from '../ports/buffer/port.js';
import type { StoredEvent } from '../ports/events/index.js';
import { linkIdentities, linksOf, mirrorLinks, type IdentityLink, type LinkRequest } from '../identity/links.js';
import { applyOp, loadProfiles, nextVersion, writeProfiles, type ProfileRow } from './profiles.js';
import { propArrays, type Props, type TrackEventRecord } from './records.js';
import { asBatch, type Batch, type EngageBatch, type TrackBatch } from './batch.js';
import { withoutTombstoned } from '../privacy/tombstones.js';

/**
 * Writes one accepted batch to the stores. Idempotent on redelivery: events dedup on their key
 * (same ids, same insert ids), links are re-mirrored when they already exist, and a profile
 * version carrying this batch's tag (id and accept time) means its profile writes are done.
 * The caller applies a project's batches in acceptance order (one at a time).
 */
export async function applyBatch(deps: Deps, envelope: IngestionBatch): Promise<void> {
  const batch = await withoutTombstoned(deps, asBatch(envelope));
  switch (batch.kind) {
    case 'track':
      return applyTrack(deps, batch);
    case 'engage':
      return applyEngage(deps, batch);
    case 'alias':
      return applyLinks(deps, batch, batch.records.map((r) => ({ alias: r.alias, distinctId: r.distinct_id, retroactive: 'auto' as const, at: batch.acceptedAt })));
    default:
      throw new PoisonError(`unknown ingestion batch kind ${JSON.stringify((batch as { kind?: unknown }).kind)}`);
  }
}

/**
 * Whether the buffer may merge this batch with its neighbours into one call (one large insert):
 * track batches without `$create_alias` records. Such an alias is retroactive or not depending on
 * the events stored before it, so its batch is applied on its own, in order. ($device_id/$user_id
 * links are retroactive regardless of stored events, so they merge safely.)
 */
export function isMergeable(envelope: IngestionBatch): boolean {
  const batch = asBatch(envelope);
  return batch.kind === 'track' && batch.records.every((r) => r.t !== 'a');
}

async function applyTrack(deps: Deps, batch: TrackBatch) {
  const records = batch.records;
  const processedAt = Date.now();
  const rows: StoredEvent[] = [];
  const links: LinkRequest[] = [];
  // distinct_ids of the events sent before the current record: the batch is applied as if its
  // records had arrived one per request, in the order the client sent them.
  const earlier = new Set<string>();
  for (const r of records) {
    if (r.t === 'a') {
      links.push({ alias: r.alias, distinctId: r.distinct_id, retroactive: 'auto', at: r.time ?? batch.acceptedAt, aliasHasPendingEvents: earlier.has(r.alias) });
      continue;
    }
    rows.push(storedEvent(batch.projectId, r, processedAt));
    earlier.add(r.distinct_id);
    // The $device_id/$user_id rule: the device's history joins the user's identity.
    const device = r.properties.$device_id;
    const user = r.properties.$user_id;
    if (typeof device === 'string' && typeof user === 'string' && device && device !== user && r.distinct_id === user) {
      links.push({ alias: device, distinctId: user, retroactive: 'always', at: batch.acceptedAt });
    }
    // mixpanel-browser's `$identify` (original ID merge): the anonymous id's history joins the user.
    const anon = r.properties.$anon_distinct_id;
    if (r.event === '$identify' && typeof anon === 'string' && anon && anon !== r.distinct_id) {
      links.push({ alias: anon, distinctId: r.distinct_id, retroactive: 'always', at: batch.acceptedAt });
    }
  }
  // Links first: whether a `$create_alias` is retroactive depends on the events stored before the
  // batch and those sent before it in the batch (aliasHasPendingEvents), never on events sent
  // after it. A redelivery finds its links already made, so the order also keeps it idempotent.
  await applyLinks(deps, batch, links);
  await resolvePersons(deps, batch.projectId, rows);
  await deps.events.writeEvents(batch.projectId, rows, { redelivered: batch.redelivered === true });
}

/**
 * Persons on events: each row gets its identity under the links stored now (the batch's own
 * included), one metadata read per batch. A link made later reaches these rows through the
 * readers' join of unfolded links until the fold (identity/fold.ts) rewrites them.
 */
async function resolvePersons(deps: Deps, projectId: number, rows: StoredEvent[]) {
  const links = await linksOf(deps.db, projectId, [...new Set(rows.map((r) => r.distinct_id))]);
  for (const r of rows) {
    const link = links.get(r.distinct_id);
    r.person_id = link && r.time >= Number(link.from_time) ? link.canonical_id : r.distinct_id;
  }
}

function storedEvent(projectId: number, r: TrackEventRecord, processedAt: number): StoredEvent {
  // The record's own map (the API's copy, or JSON.parse output when the batch crossed NATS).
  const props: Props = r.properties;
  if (!Object.hasOwn(props, '$processed_at')) props.$processed_at = processedAt;
  return {
    project_id: projectId, id: r.id, event: r.event, distinct_id: r.distinct_id, time: r.time, insert_id: r.insert_id,
    properties: JSON.stringify(props), ...propArrays(props), received_at: r.received_at,
  };
}

async function applyLinks(deps: Deps, batch: Batch, requests: LinkRequest[]) {
  if (requests.length === 0) return;
  const { made, existed } = await linkIdentities(deps, batch.projectId, requests);
  // The same link again (SDKs send $device_id/$user_id on every identified event): mirror it once
  // per process, which repairs a crash between the metadata and event-store writes.
  const mirrored = mirroredSet(deps);
  const rows = new Map<string, IdentityLink>();
  for (const l of [...made, ...existed]) if (!mirrored.has(mirrorKey(l))) rows.set(mirrorKey(l), l);
  await mirrorLinks(deps, [...rows.values()]);
  for (const k of rows.keys()) mirrored.add(k);
  await mergeProfilesIntoClusters(deps, batch, made);
}

/** Links this process has mirrored into an event store (bounded; forgetting only costs a re-mirror). */
const mirroredBy = new WeakMap<object, Set<string>>();
const mirrorKey = (l: IdentityLink) => `${l.project_id}\u0000${l.distinct_id}\u0000${l.canonical_id}`;
function mirroredSet(deps: Deps): Set<string> {
  let set = mirroredBy.get(deps.events);
  if (!set) mirroredBy.set(deps.events, (set = new Set()));
  if (set.size >= 100_000) set.clear();
  return set;
}

/**
 * When an id with a profile of its own joins a cluster, its properties fill gaps in the cluster's
 * profile and its own profile is deleted. The links are folded in order (one read, one write).
 */
async function mergeProfilesIntoClusters(deps: Deps, batch: Batch, links: IdentityLink[]) {
  if (links.length === 0) return;
  const state = await loadProfiles(deps, batch.projectId, [...new Set(links.flatMap((l) => [l.distinct_id, l.canonical_id]))]);
  const changed = new Set<string>();
  const now = Date.now();
  for (const link of links) {
    const own = state.get(link.distinct_id);
    if (!own || own.deleted) continue;
    const target = state.get(link.canonical_id);
    const merged: Props = Object.create(null);
    for (const k of Object.keys(own.properties)) merged[k] = own.properties[k];
    if (target && !target.deleted) for (const k of Object.keys(target.properties)) merged[k] = target.properties[k];
    state.set(link.canonical_id, {
      distinct_id: link.canonical_id, properties: merged, updated_at: nextVersion(target?.updated_at, now), deleted: false, batch_id: versionTag(batch),
    });
    state.set(link.distinct_id, {
      distinct_id: link.distinct_id, properties: Object.create(null), updated_at: nextVersion(own.updated_at, now), deleted: true, batch_id: versionTag(batch),
    });
    changed.add(link.canonical_id).add(link.distinct_id);
  }
  await writeProfiles(deps, batch.projectId, [...changed].map((id) => state.get(id)!));
}

/**
 * What a profile version records about the batch that wrote it. Batch ids are derived from the
 * request (identical requests share one), so the accept time is part of the tag: a redelivery of
 * this batch carries both, a second identical request (say, the same `$add` twice) does not.
 */
const versionTag = (batch: Batch) => `${batch.id}@${batch.acceptedAt}`;

async function applyEngage(deps: Deps, batch: EngageBatch) {
  const ops = batch.records;
  if (ops.length === 0) return;
  // Profiles are keyed by the canonical id of the op's cluster (ignoring from_time).
  const ids = [...new Set(ops.map((o) => o.distinct_id))];
  const canonical = new Map<string, string>();
  for (let i = 0; i < ids.length; i += 500) {
    const rows: Array<{ distinct_id: string; canonical_id: string }> = await deps.db('identity_links')
      .where({ project_id: batch.projectId }).whereIn('distinct_id', ids.slice(i, i + 500)).select('distinct_id', 'canonical_id');
    for (const r of rows) canonical.set(r.distinct_id, r.canonical_id);
  }
  const keyOf = (id: string) => canonical.get(id) ?? id;
  const keys = [...new Set(ids.map(keyOf))];
  const current = await loadProfiles(deps, batch.projectId, keys);
  for (const row of current.values()) if (row.batch_id === versionTag(batch)) return; // redelivered: already written
  const now = Date.now();
  const next = new Map<string, ProfileRow>();
  for (const op of ops) {
    const key = keyOf(op.distinct_id);
    let state = next.get(key);
    if (!state) {
      const prev = current.get(key);
      const props: Props = Object.create(null);
      if (prev && !prev.deleted) for (const k of Object.keys(prev.properties)) props[k] = prev.properties[k];
      state = { distinct_id: key, properties: props, deleted: prev ? prev.deleted : true, updated_at: nextVersion(prev?.updated_at, now), batch_id: versionTag(batch) };
      next.set(key, state);
    }
    applyOp(state, op);
  }
  // A profile that never existed and ends deleted needs no row.
  const rows = [...next.values()].filter((r) => !(r.deleted && !current.has(r.distinct_id)));
  await writeProfiles(deps, batch.projectId, rows);
}
