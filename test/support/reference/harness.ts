import fc from 'fast-check';
import type { Deps } from '../../../apps/server/src/deps.js';
import type { StoredEvent } from '../../../apps/server/src/ports/events/index.js';
import { eventPropLists } from '../../../apps/server/src/ingestion/records.js';
import { DefinitionStore } from '../../../apps/server/src/definitions/store.js';
import { dedup, type RefData, type RefEvent, type RefFilter } from './index.js';

let nextId = 1;

/**
 * How a dataset's identities reach the store, chosen from the dataset itself so the generated
 * runs cover all three: `links only` (rows without person_id, every link unfolded: rows written
 * before persons on events), `late links` (rows carry the person_id of the links known when they
 * were written, every second link; those are folded, the rest (the first link among them) arrived later and are unfolded
 * overrides) and `folded` (as `late links`, then the real fold rewrites the rows and the months
 * are merged, so ClickHouse reads them without FINAL until another dataset writes to them).
 */
export type IdentityLoad = 'links only' | 'late links' | 'folded';
export function identityLoadOf(data: RefData): IdentityLoad {
  return (['links only', 'late links', 'folded'] as const)[(data.events.length + data.links.length) % 3];
}

/**
 * Loads a dataset the way ingestion leaves it: DuckDB dedups at write, so it receives each key
 * once; ClickHouse receives the duplicates in a second insert (a separate part that only FINAL
 * collapses). Identities as `identityLoadOf` says.
 */
export async function loadDataset(deps: Deps, projectId: number, data: RefData, mode = identityLoadOf(data)): Promise<void> {
  const known = new Map(mode === 'links only' ? [] : data.links.filter((_, i) => i % 2 === 1).map((l) => [l.distinct_id, l]));
  const personOf = (e: RefEvent) => {
    if (mode === 'links only') return undefined;
    const l = known.get(e.distinct_id);
    return l && e.time >= l.from_time ? l.canonical_id : e.distinct_id;
  };
  const toRow = (e: RefEvent): StoredEvent => ({
    project_id: projectId, id: nextId++, event: e.event, distinct_id: e.distinct_id, time: e.time, insert_id: e.insert_id,
    ...eventPropLists(e.props), received_at: e.time,
    ...(personOf(e) !== undefined ? { person_id: personOf(e) } : {}),
  });
  const unique = dedup(data.events);
  await deps.events.insertEvents(unique.map(toRow));
  if (deps.events.dialect === 'clickhouse') {
    const seen = new Set<RefEvent>(unique);
    const dups = data.events.filter((e) => !seen.has(e));
    if (dups.length) await deps.events.insertEvents(dups.map(toRow));
  }
  if (data.links.length) {
    await deps.events.insertRows('identity_links', data.links.map((l) => ({
      project_id: projectId, ...l, created_at: 1, folded: mode === 'late links' && known.has(l.distinct_id) ? 1 : 0,
    })));
  }
  if (mode === 'folded') {
    await deps.events.foldLinks(1_000_000, Date.now());
    // As the compaction worker leaves quiet months (ClickHouse: merged, read without FINAL until written again).
    await deps.events.mergeQuietPartitions(0, 100);
  }
  if (data.profiles?.length) {
    await deps.events.insertRows('profiles', data.profiles.map((p) => ({
      project_id: projectId, distinct_id: p.distinct_id, properties: JSON.stringify(p.props), prop_keys: Object.keys(p.props),
      prop_values: Object.values(p.props), updated_at: 1, deleted: p.deleted ? 1 : 0,
    })));
  }
  const store = new DefinitionStore<{ sources: Array<{ event: string; filters?: RefFilter[] }> }>(deps.db, 'derived_events');
  for (const [name, sources] of Object.entries(data.derived ?? {})) {
    await store.create({ projectId, createdBy: null, name, description: null, definition: { sources } });
  }
}

export async function freshProject(deps: Deps): Promise<number> {
  return (await deps.projects.create({ orgId: null, name: `gen-${nextId}` })).id;
}

export const DAY = 86_400_000;
/** 2024-01-01 is a Monday; generated ranges start there. */
export const T0 = Date.UTC(2024, 0, 1);
export const EVENT_NAMES = ['A', 'B', 'C'];
export const IDS = ['u1', 'u2', 'u3', 'a1', 'a2', 'a3'];

/** Offsets that land on bucket, window and session edges, so ties and edges are common. */
const within = fc.constantFrom(0, 1, 999, 1_799_999, 1_800_000, 1_800_001, 3_600_000, 43_200_000, 86_399_999);
const timeArb = fc.tuple(fc.integer({ min: -1, max: 17 }), within).map(([d, s]) => T0 + d * DAY + s);
const propsArb = fc.record({ p: fc.constantFrom('x', 'y', 'xy'), q: fc.constantFrom('1', '2') }, { requiredKeys: [] });
const eventArb = fc.record({
  event: fc.constantFrom(...EVENT_NAMES), distinct_id: fc.constantFrom(...IDS), time: timeArb,
  insert_id: fc.constantFrom('i1', 'i2', 'i3', 'i4', 'i5', 'i6', 'i7', 'i8'), props: propsArb,
});
const linkArb = fc.record({
  distinct_id: fc.constantFrom('a1', 'a2', 'a3'), canonical_id: fc.constantFrom('u1', 'u2'),
  from_time: fc.oneof(fc.constant(0), timeArb),
});

export const filterArb: fc.Arbitrary<RefFilter> = fc.oneof(
  fc.record({ key: fc.constantFrom('p', 'q'), op: fc.constantFrom('eq' as const, 'neq' as const, 'contains' as const), value: fc.constantFrom('x', 'y', '1', '') }),
  fc.record({ key: fc.constantFrom('p', 'q', 'r'), op: fc.constantFrom('set' as const, 'not_set' as const) }),
);

/** Events (with exact duplicates appended), links (one per alias) and sometimes a derived event `D`. */
export const datasetArb: fc.Arbitrary<RefData> = fc
  .record({
    events: fc.array(eventArb, { maxLength: 60 }),
    dupIdx: fc.array(fc.nat(), { maxLength: 6 }),
    links: fc.uniqueArray(linkArb, { selector: (l) => l.distinct_id, maxLength: 3 }),
    derived: fc.option(fc.record({ D: fc.array(fc.record({ event: fc.constantFrom('A', 'B', '$all_events'), filters: fc.array(filterArb, { maxLength: 1 }) }), { minLength: 1, maxLength: 2 }) }), { nil: undefined }),
    profiles: fc.array(fc.record({ distinct_id: fc.constantFrom(...IDS), props: propsArb, deleted: fc.boolean() }), { maxLength: 4 }),
  })
  .map(({ events: raw, dupIdx, links, derived, profiles }) => {
    const byKey = new Map<string, RefEvent>();
    for (const e of raw) { const k = JSON.stringify([e.event, e.time, e.distinct_id, e.insert_id]); if (!byKey.has(k)) byKey.set(k, e); }
    const events = [...byKey.values()];
    return {
    events: events.length ? [...events, ...dupIdx.map((i) => ({ ...events[i % events.length] }))] : events,
    links, derived,
    profiles: [...new Map(profiles.map((p) => [p.distinct_id, p])).values()],
  };
  });

export const eventNameArb = (withDerived: boolean) => fc.constantFrom(...EVENT_NAMES, '$all_events', ...(withDerived ? ['D'] : []));
