import { DAY_MS } from '../query/dialects/index.js';
import { resolveRange } from '../query/ir/range.js';
import type { DateRangeSpec } from '../query/ir/schema.js';

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * The calendar days a spec covers on `now`, resolved as the IR resolves it (`7d`: the 7 days
 * ending today; `3m`: from the same date 3 months back). Absolute ranges pass as written: they
 * were checked on write and are checked again by the query they run in.
 */
export function resolveDateRange(spec: DateRangeSpec, now: number): { from: string; to: string } {
  if (spec.kind === 'absolute') return { from: spec.from, to: spec.to };
  const r = resolveRange(spec, Number.MAX_SAFE_INTEGER, now);
  return { from: iso(r.fromMs), to: iso(r.toEndMs - DAY_MS) };
}
