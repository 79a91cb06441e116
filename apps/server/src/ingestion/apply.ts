import type { Deps } from '../deps.js';
import { PoisonError, type IngestionBatch } from '../ports/buffer/port.js';
import type { StoredEvent } from '../ports/events/index.js';
import { linkIdentities, linksOf, mirrorLinks, type IdentityLink, type LinkRequest } from '../identity/links.js';
import { LinkRequests } from '../identity/requests.js';
import { applyOp, loadProfiles, nextVersion, writeProfiles, type ProfileRow } from './profiles.js';
import { eventPropLists, type Props, type TrackEventRecord } from './records.js';
import { asBatch, type Batch } from './batch.js';
import { withoutTombstoned } from '../privacy/tombstones.js';

/**
 * Writes one accepted batch to the stores: a unit of one (see applyUnit). Idempotent on
 * redelivery: events dedup on their key (same ids, same insert ids), links are re-mirrored when
 * they already exist, and a profile version carrying this batch's tag (id and accept time) means
 * its profile writes are done. The caller applies a project's batches in acceptance order (one at
 * a time).
 */
export async function applyBatch(deps: Deps, envelope: IngestionBatch): Promise<void> {
  return applyUnit(deps, [envelope]);
}

/**
 * Whether the buffer may merge this batch with its neighbours into one call (one large insert):
 * track batches without `$create_alias` records. Such an alias is retroactive or not depending on
 * the events stored before it, so its batch is applied on its own, in order. ($device_id/$user_id
 * links are retroactive regardless of stored events, so they merge safely.) applyUnit has no such
 * limit: it knows which events of the unit come before an alias.
 */
export function isMergeable(envelope: IngestionBatch): boolean {
  const batch = asBatch(envelope);
  return batch.kind === 'track' && batch.records.every((r) => r.t !== 'a');
}

/** One batch of a unit, prepared: its events, and its link requests as a range of the unit's. */
interface Step {
  batch: Batch;
  /** Its events as sent, then (once the unit's links are being read) as stored. */
  records: TrackEventRecord[];
  rows: StoredEvent[];
  /** The unit's link requests [linksFrom, linksTo) are this batch's. */
  linksFrom: number;
  linksTo: number;
}

/**
 * Applies consecutive batches of one project (any kinds, in acceptance order) with one write per
 * store and table: one metadata transaction for all their links, one mirror insert of links into
 * the event store, one profile read and one profile write, one events insert. What is stored is
 * what applying the batches one by one (applyBatch each) would store:
 * - a `$create_alias` or /alias is retroactive or not depending on the events stored before it:
 *   events earlier in the unit count as stored (aliasHasPendingEvents);
 * - each /track batch's rows get their `person_id` under the links stored before the unit and
 *   those of the unit's requests up to the batch's own (a later /alias in the unit does not reach
 *   them, as it would not have one by one);
 * - profile merges (an id with a profile joining a cluster) and /engage ops are applied in order
 *   on an in-memory copy of the profiles: an engage op is keyed by the canonical id under the
 *   links made up to it, a `$set_once` before an identify lands on the anonymous profile and is
 *   merged into the user's by the link that follows; only each profile's last version is written,
 *   tagged with the last batch that changed it;
 * - redelivery: the profile write is one insert, so a stored version tagged with a batch of the
 *   unit means the profile work of every batch up to that one is done (a retried unit starts with
 *   the batches of the failed one); links and events are idempotent as for one batch.
 */
export async function applyUnit(deps: Deps, envelopes: IngestionBatch[]): Promise<void> {
  if (envelopes.length === 0) return;
  const projectId = envelopes[0].projectId;
  if (envelopes.some((e) => e.projectId !== projectId)) throw new Error('applyUnit: batches of one project only');
  for (const e of envelopes) {
    const kind = (e as { kind?: unknown }).kind;
    if (kind !== 'track' && kind !== 'engage' && kind !== 'alias') throw new PoisonError(`unknown ingestion batch kind ${JSON.stringify(kind)}`);
  }
  const batches = await withoutTombstonedUnit(deps, envelopes.map(asBatch));
  const processedAt = Date.now();
  const steps: Step[] = [];
  const ids = new Set<string>();
  // The unit is applied as if its records had arrived one per request, in the order the clients
  // sent them: the identity rules (identity/requests.ts) see them so.
  const links = new LinkRequests();
  for (const batch of batches) {
    const step: Step = { batch, records: [], rows: [], linksFrom: links.length, linksTo: links.length };
    steps.push(step);
    if (batch.kind === 'track') {
      for (const r of batch.records) {
        if (r.t === 'a') {
          links.alias(r.alias, r.distinct_id, r.time ?? batch.acceptedAt);
          continue;
        }
        step.records.push(r);
        ids.add(r.distinct_id);
        links.event(r, batch.acceptedAt);
      }
    } else if (batch.kind === 'alias') {
      for (const r of batch.records) links.alias(r.alias, r.distinct_id, batch.acceptedAt);
    } else {
      for (const op of batch.records) ids.add(op.distinct_id);
    }
    step.linksTo = links.length;
  }
  const requests = links.requests;
  for (const r of requests) ids.add(r.alias).add(r.distinctId);

  // Links first: whether a `$create_alias` is retroactive depends on the events stored before it
  // and those sent before it (aliasHasPendingEvents), never on events sent after it. A
  // redelivery finds its links already made, so the order also keeps it idempotent.
  // The stored rows are built while the store reads the links (one statement on PostgreSQL).
  const storedRead = ids.size ? linksOf(deps.db, projectId, [...ids]) : Promise.resolve(new Map<string, IdentityLink>());
  storedRead.catch(() => undefined); // awaited below; this only keeps a throw in between from leaving it unhandled
  for (const step of steps) for (const r of step.records) step.rows.push(storedEvent(projectId, r, processedAt));
  const stored = await storedRead;
  const { made, madeBy, unmirrored } = await applyLinks(deps, projectId, requests, stored);
  // The links as each step sees them: stored before the unit, or made by an earlier request.
  const madeAt = new Map<string, { link: IdentityLink; request: number }>();
  made.forEach((link, i) => madeAt.set(link.distinct_id, { link, request: madeBy[i] }));
  const linkBefore = (id: string, request: number): IdentityLink | undefined => {
    const s = stored.get(id);
    if (s) return s;
    const m = madeAt.get(id);
    return m && m.request < request ? m.link : undefined;
  };

  // Persons on events: each row gets its identity under the links stored when its batch applies
  // (its own included). A link made later reaches these rows through the readers' join of
  // unfolded links until the fold (identity/fold.ts) rewrites them.
  let rows: StoredEvent[] = [];
  let redelivered = false;
  for (const step of steps) {
    if (step.rows.length === 0) continue;
    for (const r of step.rows) {
      const link = linkBefore(r.distinct_id, step.linksTo);
      r.person_id = link && r.time >= Number(link.from_time) ? link.canonical_id : r.distinct_id;
    }
    if (rows.length === 0) rows = step.rows;
    else for (const r of step.rows) rows.push(r);
    if (step.batch.redelivered) redelivered = true;
  }
  // The event-store writes depend only on the links decided above, and each is idempotent on
  // redelivery, so they run at once (ClickHouse inserts one while this process encodes the next). A
  // failure is thrown once all have settled, so a retry never overlaps a write still running.
  const writes = await Promise.allSettled([
    mirrorUnitLinks(deps, unmirrored),
    applyProfiles(deps, projectId, steps, made, madeBy, linkBefore),
    deps.events.writeEvents(projectId, rows, { redelivered }),
  ]);
  for (const w of writes) if (w.status === 'rejected') throw w.reason;
}

/** withoutTombstoned for a unit: one read of the tombstones, the same records kept per batch. */
async function withoutTombstonedUnit(deps: Deps, batches: Batch[]): Promise<Batch[]> {
  if (batches.length === 1) return [await withoutTombstoned(deps, batches[0])];
  const all: unknown[] = [];
  for (const b of batches) for (const r of b.records) all.push(r);
  const kept = await withoutTombstoned(deps, { projectId: batches[0].projectId, records: all });
  if (kept.records.length === all.length) return batches;
  const keep = new Set(kept.records);
  return batches.map((b) => ({ ...b, records: (b.records as unknown[]).filter((r) => keep.has(r)) }) as Batch);
}

function storedEvent(projectId: number, r: TrackEventRecord, processedAt: number): StoredEvent {
  // The record's own map (the API's copy, or JSON.parse output when the batch crossed NATS).
  const props: Props = r.properties;
  if (!Object.hasOwn(props, '$processed_at')) props.$processed_at = processedAt;
  return {
    project_id: projectId, id: r.id, event: r.event, distinct_id: r.distinct_id, time: r.time, insert_id: r.insert_id,
    ...eventPropLists(props), received_at: r.received_at,
  };
}

/** The unit's links: one metadata transaction; `unmirrored`: those this process has not mirrored yet. */
async function applyLinks(deps: Deps, projectId: number, requests: LinkRequest[], stored: Map<string, IdentityLink>) {
  if (requests.length === 0) return { made: [], madeBy: [], unmirrored: new Map<string, IdentityLink>() };
  const { made, madeBy, existed } = await linkIdentities(deps, projectId, requests, stored);
  // The same link again (SDKs send $device_id/$user_id on every identified event): mirror it once
  // per process, which repairs a crash between the metadata and event-store writes.
  const mirrored = mirroredSet(deps);
  const unmirrored = new Map<string, IdentityLink>();
  for (const l of [...made, ...existed]) if (!mirrored.has(mirrorKey(l))) unmirrored.set(mirrorKey(l), l);
  return { made, madeBy, unmirrored };
}

/** One mirror insert of the unit's links into the event store, remembered once it succeeded. */
async function mirrorUnitLinks(deps: Deps, links: Map<string, IdentityLink>): Promise<void> {
  if (links.size === 0) return;
  await mirrorLinks(deps, [...links.values()]);
  const mirrored = mirroredSet(deps);
  for (const k of links.keys()) mirrored.add(k);
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
 * The unit's profile work, in order, on one read of the profiles it touches and one write of
 * their last versions:
 * - when an id with a profile of its own joins a cluster (a link made by a track or alias batch),
 *   its properties fill gaps in the cluster's profile and its own profile is deleted;
 * - engage ops change the profile of their id's cluster (keyed by the canonical id under the
 *   links made up to the op, ignoring from_time).
 */
async function applyProfiles(
  deps: Deps, projectId: number, steps: Step[], made: IdentityLink[], madeBy: number[],
  linkBefore: (id: string, request: number) => IdentityLink | undefined,
) {
  const keyOf = (id: string, request: number) => linkBefore(id, request)?.canonical_id ?? id;
  const keys = new Set<string>();
  for (const l of made) keys.add(l.distinct_id).add(l.canonical_id);
  for (const step of steps) {
    if (step.batch.kind === 'engage') for (const op of step.batch.records) keys.add(keyOf(op.distinct_id, step.linksFrom));
  }
  if (keys.size === 0) return;
  const state = await loadProfiles(deps, projectId, [...keys]);
  // Profiles that have a stored row (a delete of one that never existed writes none).
  const exists = new Set(state.keys());
  // A stored version tagged with a batch of this unit: the profile work up to that batch is done.
  let done = -1;
  const tags = steps.map((s) => versionTag(s.batch));
  for (const row of state.values()) {
    const i = tags.lastIndexOf(row.batch_id);
    if (i > done) done = i;
  }
  const changed = new Set<string>();
  const now = Date.now();
  let m = 0; // the next of `made` (in request order)
  steps.forEach((step, i) => {
    const tag = tags[i];
    if (step.batch.kind !== 'engage') {
      for (; m < made.length && madeBy[m] < step.linksTo; m++) {
        if (i <= done) continue;
        const link = made[m];
        const own = state.get(link.distinct_id);
        if (!own || own.deleted) continue;
        const target = state.get(link.canonical_id);
        const merged: Props = Object.create(null);
        for (const k of Object.keys(own.properties)) merged[k] = own.properties[k];
        if (target && !target.deleted) for (const k of Object.keys(target.properties)) merged[k] = target.properties[k];
        state.set(link.canonical_id, {
          distinct_id: link.canonical_id, properties: merged, updated_at: nextVersion(target?.updated_at, now), deleted: false, batch_id: tag,
        });
        state.set(link.distinct_id, {
          distinct_id: link.distinct_id, properties: Object.create(null), updated_at: nextVersion(own.updated_at, now), deleted: true, batch_id: tag,
        });
        changed.add(link.canonical_id).add(link.distinct_id);
        exists.add(link.canonical_id).add(link.distinct_id);
      }
      return;
    }
    if (i <= done) return;
    const next = new Map<string, ProfileRow>();
    for (const op of step.batch.records) {
      const key = keyOf(op.distinct_id, step.linksFrom);
      let s = next.get(key);
      if (!s) {
        const prev = state.get(key);
        const props: Props = Object.create(null);
        if (prev && !prev.deleted) for (const k of Object.keys(prev.properties)) props[k] = prev.properties[k];
        s = { distinct_id: key, properties: props, deleted: prev ? prev.deleted : true, updated_at: nextVersion(prev?.updated_at, now), batch_id: tag };
        next.set(key, s);
      }
      applyOp(s, op);
    }
    for (const s of next.values()) {
      // A profile that never existed and ends deleted needs no row.
      if (s.deleted && !exists.has(s.distinct_id)) continue;
      state.set(s.distinct_id, s);
      exists.add(s.distinct_id);
      changed.add(s.distinct_id);
    }
  });
  await writeProfiles(deps, projectId, [...changed].map((id) => state.get(id)!));
}

/**
 * What a profile version records about the batch that wrote it. Batch ids are derived from the
 * request (identical requests share one), so the accept time is part of the tag: a redelivery of
 * this batch carries both, a second identical request (say, the same `$add` twice) does not.
 */
const versionTag = (batch: Batch) => `${batch.id}@${batch.acceptedAt}`;
