import type { Dialect } from '../dialects/index.js';
import type { PropertyFilter } from '../schema.js';

export const ALL_EVENTS = '$all_events';

/** SQL condition of one PropertyFilter over the row's `prop_keys`/`prop_values`. */
export function filterSql(d: Dialect, f: PropertyFilter, keys = 'prop_keys', values = 'prop_values'): string {
  const has = d.propHas(f.key, keys);
  const val = d.propValue(f.key, keys, values);
  switch (f.op) {
    case 'set': return has;
    case 'not_set': return `NOT ${has}`;
    case 'eq': return `(${has} AND ${val} = ${d.str(f.value ?? '')})`;
    case 'neq': return `NOT (${has} AND ${val} = ${d.str(f.value ?? '')})`;
    case 'contains': return `(${has} AND ${d.contains(val, d.str(f.value ?? ''))})`;
  }
}

export function filtersSql(d: Dialect, filters: PropertyFilter[] | undefined): string {
  if (!filters || filters.length === 0) return '1 = 1';
  return filters.map((f) => `(${filterSql(d, f)})`).join(' AND ');
}

/** A derived event: a name over source events, each with its own filters. */
export interface DerivedEventDef {
  name: string;
  sources: Array<{ event: string; filters?: PropertyFilter[] }>;
}

/**
 * Resolves event names (concrete, `$all_events` or a derived event's name) to SQL conditions.
 * A derived event of the project wins over a concrete event of the same name.
 */
export class EventMatcher {
  constructor(private d: Dialect, private derived: Map<string, DerivedEventDef>) {}

  condition(name: string): string {
    if (name === ALL_EVENTS) return '1 = 1';
    const def = this.derived.get(name);
    if (!def) return `event = ${this.d.str(name)}`;
    const parts = def.sources.map((s) => {
      const base = s.event === ALL_EVENTS ? '1 = 1' : `event = ${this.d.str(s.event)}`;
      return s.filters && s.filters.length ? `(${base} AND ${filtersSql(this.d, s.filters)})` : `(${base})`;
    });
    return parts.length ? `(${parts.join(' OR ')})` : '1 = 0';
  }

  /** Whether the condition reads properties (derived events with filters). */
  needsProps(name: string): boolean {
    return this.derived.get(name)?.sources.some((s) => (s.filters?.length ?? 0) > 0) ?? false;
  }
}
