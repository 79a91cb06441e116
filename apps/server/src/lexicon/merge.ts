import type { DataStore } from '../data/store.js';
import type { LexiconEntry, LexiconStore } from './store.js';

const DAY_MS = 86_400_000;
const blank = { description: null, displayName: null, hidden: false, tags: [] as string[], updated_at: null };
const fields = (e: LexiconEntry | undefined) =>
  e ? { description: e.description, displayName: e.displayName, hidden: e.hidden, tags: e.tags, updated_at: e.updated_at } : blank;

/**
 * Observed names (counted in the engine) joined with entries, most used first; entries written
 * ahead of any event follow with `observed: false`. `only` narrows to one name (the PUT answer).
 */
export async function lexiconEvents(data: DataStore, store: LexiconStore, projectId: number, only?: string) {
  const [observed, entries] = await Promise.all([data.eventNames(projectId, Date.now() - 30 * DAY_MS), store.list(projectId, 'event')]);
  const byName = new Map(entries.map((e) => [e.name, e]));
  const rows = observed.map((o) => ({ name: o.name, count: o.count, last_seen: o.last_seen as number | null, ...fields(byName.get(o.name)), observed: true }));
  const seen = new Set(observed.map((o) => o.name));
  for (const e of entries) if (!seen.has(e.name)) rows.push({ name: e.name, count: 0, last_seen: null, ...fields(e), observed: false });
  return only === undefined ? rows : rows.filter((r) => r.name === only);
}

export async function lexiconProperties(data: DataStore, store: LexiconStore, projectId: number, only?: string) {
  const [observed, entries] = await Promise.all([data.properties(projectId), store.list(projectId, 'property')]);
  const byName = new Map(entries.map((e) => [e.name, e]));
  const rows = observed.map((o) => ({ key: o.key, count: o.count, sampleValues: o.sampleValues, ...fields(byName.get(o.key)), observed: true }));
  const seen = new Set(observed.map((o) => o.key));
  for (const e of entries) if (!seen.has(e.name)) rows.push({ key: e.name, count: 0, sampleValues: [], ...fields(e), observed: false });
  return only === undefined ? rows : rows.filter((r) => r.key === only);
}
