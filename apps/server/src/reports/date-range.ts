import { z } from 'zod';
import { DAY_MS } from '../query/dialects/index.js';

/** A board's (or an IR document's) date range: a preset counted back from today (UTC), or two days. */
export const DateRangeSpec = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('preset'), preset: z.enum(['today', 'yesterday', '7d', '30d', '3m', '6m', '12m']) }).strict(),
  z.object({ kind: z.literal('absolute'), from: z.string().max(32), to: z.string().max(32) }).strict(),
]);
export type DateRangeSpec = z.infer<typeof DateRangeSpec>;

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * The calendar days a spec covers on `now` (UTC): `Nd` is the N days ending today, `Nm` starts on
 * the same date N months back (so `3m` on 2024-05-15 is 2024-02-15..2024-05-15).
 */
export function resolveDateRange(spec: DateRangeSpec, now: number): { from: string; to: string } {
  if (spec.kind === 'absolute') return { from: spec.from, to: spec.to };
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  switch (spec.preset) {
    case 'today': return { from: iso(today), to: iso(today) };
    case 'yesterday': return { from: iso(today - DAY_MS), to: iso(today - DAY_MS) };
    case '7d': return { from: iso(today - 6 * DAY_MS), to: iso(today) };
    case '30d': return { from: iso(today - 29 * DAY_MS), to: iso(today) };
    default: {
      // Same day N months back (Date.UTC carries an overflowing day into the next month), as the IR's presets.
      const d = new Date(today);
      return { from: iso(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - Number(spec.preset.slice(0, -1)), d.getUTCDate())), to: iso(today) };
    }
  }
}
