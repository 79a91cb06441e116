import type { Dialect } from './dialects/index.js';

/**
 * A breakdown on one property, or on up to three (`MAX_BREAKDOWN_PROPERTIES`) whose values make
 * one segment together, named like Mixpanel's: the values joined with `BREAKDOWN_SEPARATOR`
 * ("fr / chrome"), a property an event lacks counting as `(none)` in its place. With one property
 * an event without it is the `(none)` segment, as before; with several every event has a segment.
 * Values are joined as text, so "a / b" of one property and "a", "b" of two land in one segment.
 */
export type BreakdownProps = string | readonly string[];

export const MAX_BREAKDOWN_PROPERTIES = 3;
export const BREAKDOWN_SEPARATOR = ' / ';
const NONE = '(none)';

/** The properties of a breakdown, in order. */
export const breakdownList = (b: BreakdownProps): readonly string[] => (typeof b === 'string' ? [b] : b);

/**
 * A breakdown as one property when it has one, else the list (what the engines' builders take);
 * undefined for none and for a breakdown by cohorts (run once per cohort, engine/cohorts.ts).
 */
export const breakdownOf = (b: { property: string; thenBy?: readonly string[] } | { cohorts: readonly number[] } | undefined): BreakdownProps | undefined =>
  b === undefined || !('property' in b) ? undefined : b.thenBy?.length ? [b.property, ...b.thenBy] : b.property;

/** SQL: whether an event has the breakdown's segment (several properties: always). */
export function breakdownHas(d: Dialect, b: BreakdownProps): string {
  const list = breakdownList(b);
  return list.length === 1 ? d.propHas(list[0]) : '1 = 1';
}

/** SQL: the event's segment value (a string), `missing` when it has none (one property only). */
export function breakdownValueOr(d: Dialect, b: BreakdownProps, missing: string): string {
  const list = breakdownList(b);
  if (list.length === 1) return d.propValueOr(list[0], missing);
  const parts = list.map((p) => `CASE WHEN ${d.propHas(p)} THEN ${d.propValueOr(p, "''")} ELSE ${d.str(NONE)} END`);
  return `concat(${parts.join(`, ${d.str(BREAKDOWN_SEPARATOR)}, `)})`;
}

/** The breakdown as the cost guard's message names it. */
export const breakdownName = (b: BreakdownProps) => breakdownList(b).join(', ');
