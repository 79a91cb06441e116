import { bucketStart, nextBucket, type DateRange } from '../query/engine/range.js';
import { DAY_MS } from '../query/dialects/index.js';
import type { Entry } from './lru.js';
import type { LayeredEntries } from './layered.js';
import { dayOf } from './versions.js';

/** One row of `results_versions` (versions.ts): a span of days of a project, or its identity changes (days before 0), and its change number. */
export interface VersionRow {
  first_day: number;
  last_day: number;
  version: number;
}

/**
 * How an answer over a range of calendar buckets is cut into one part per bucket and put back
 * together, so the buckets of closed days are computed once (docs/analyses.md, "Closed days").
 * A query kind offers a plan only where stitching gives exactly the answer of the whole
 * computation (reports/partials.ts says which and why).
 *
 * - `parts`: names the query without its range (the engine is added by the executor);
 * - `compute(range)`: the same compiled query over a narrowed range (whole buckets of `range`);
 * - `split(value, range)`: one part per bucket of `range`, in order;
 * - `join(parts, range)`: the answer over `range` from one part per bucket, in order;
 * - `check()`: the checks the whole run makes before the engine (its estimate over the whole
 *   range), made once before any bucket is served or computed.
 *
 * `split` answers undefined when a computed answer cannot be cut exactly (two series of one
 * name): the run then computes the whole range as if there were no plan.
 */
export interface PartialPlan<V, P = unknown> {
  parts: unknown;
  unit: 'day' | 'week' | 'month';
  range: DateRange;
  compute(range: DateRange): Promise<V>;
  split(value: V, range: DateRange): P[] | undefined;
  join(parts: P[], range: DateRange): Promise<V>;
  check?(): void;
}

/** One bucket of a range, cut to the range: `[fromMs, toEndMs)`. */
export interface Slice extends DateRange {
  /** Every day of it lies before today: its data can change only by a write that bumps its days' versions. */
  closed: boolean;
}

/** The buckets of `range` cut to it; closed when they end by `todayMs` (00:00 UTC of today). */
export function slicesOf(unit: PartialPlan<unknown>['unit'], range: DateRange, todayMs: number): Slice[] {
  const out: Slice[] = [];
  for (let b = bucketStart(unit, range.fromMs); b < range.toEndMs; b = nextBucket(unit, b)) {
    const s = { fromMs: Math.max(b, range.fromMs), toEndMs: Math.min(nextBucket(unit, b), range.toEndMs) };
    out.push({ ...s, closed: s.toEndMs <= todayMs });
  }
  return out;
}

/**
 * The sum of the versions of the rows overlapping the slice's days, and of the identity changes
 * among `rows` (rows before day 0: given only for answers that may depend on identities), as
 * DataVersions.signature, from rows read once.
 */
export function sliceSignature(rows: readonly VersionRow[], s: DateRange): number {
  const first = dayOf(s.fromMs);
  const last = dayOf(s.toEndMs - 1);
  let sum = 0;
  for (const r of rows) if ((r.first_day <= last && r.last_day >= first) || r.last_day < 0) sum += r.version;
  return sum;
}

/** Contiguous runs of slices: each missing run is computed by one statement set over its range. */
export function runsOf(slices: readonly Slice[], missing: readonly boolean[]): DateRange[] {
  const out: DateRange[] = [];
  slices.forEach((s, i) => {
    if (!missing[i]) return;
    const last = out.at(-1);
    if (last && i > 0 && missing[i - 1]) last.toEndMs = s.toEndMs;
    else out.push({ fromMs: s.fromMs, toEndMs: s.toEndMs });
  });
  return out;
}

/** Where the parts of closed buckets are kept: read and written a run's worth at a time. */
export interface KeptParts {
  /** Each id's part if it is kept under that signature (else undefined), in order. */
  read(wanted: ReadonlyArray<{ id: string; signature: string }>): Promise<unknown[]>;
  write(entries: ReadonlyArray<readonly [string, Entry<object>]>): Promise<void>;
}

/**
 * A project's parts where its answers are kept (layered.ts: this process's memory under the
 * answers' budget and, with RESULTS_CACHE=shared, the table every process shares), so a day one API
 * process or the worker warming boards computed is not computed again by another: a read takes
 * what memory holds under the asked signature and the rest from the table in one statement.
 */
export function keptParts(entries: LayeredEntries, projectId: number): KeptParts {
  return {
    async read(wanted) {
      const found = await entries.getMany(wanted.map((w) => w.id), projectId, (e, i) => !!e && e.signature === wanted[i].signature);
      return found.map((e) => (e ? (e.value as { p: unknown }).p : undefined));
    },
    write: (written) => entries.setMany(written, projectId),
  };
}

export interface PartialsRun<V> {
  value: V;
  /** The ranges computed (one per contiguous run of open or missing buckets). */
  computed: DateRange[];
  /** Buckets served from stored parts. */
  reused: number;
}

/**
 * Serves the closed buckets whose stored part still holds (same data versions of its days, same
 * metadata), computes the others over contiguous runs, stores the parts of the closed buckets it
 * computed (with the signature read before computing), and joins. `refresh` reads no part.
 */
export async function runWithPartials<V>(
  kept: KeptParts, idOf: (slice: DateRange) => string, plan: PartialPlan<V>, todayMs: number,
  versions: () => Promise<VersionRow[]>, meta: string, refresh: boolean, now: number,
): Promise<PartialsRun<V>> {
  plan.check?.();
  const slices = slicesOf(plan.unit, plan.range, todayMs);
  const closed = slices.filter((s) => s.closed);
  const rows = closed.length ? await versions() : [];
  const sigs = slices.map((s) => (s.closed ? `${sliceSignature(rows, s)}:${meta}` : ''));
  const ids = slices.map((s) => (s.closed ? idOf(s) : ''));
  const wanted = refresh ? [] : slices.map((s, i) => ({ id: ids[i], signature: sigs[i] })).filter((_, i) => slices[i].closed);
  const found = wanted.length ? await kept.read(wanted) : [];
  const byId = new Map(wanted.map((w, k) => [w.id, found[k]]));
  const parts: unknown[] = slices.map((s, i) => (s.closed ? byId.get(ids[i]) : undefined));
  const fresh: Array<[string, Entry<object>]> = [];
  const missing = parts.map((p) => p === undefined);
  const computed = runsOf(slices, missing);
  for (const r of computed) {
    const value = await plan.compute(r);
    const own = slices.map((s, i) => i).filter((i) => slices[i].fromMs >= r.fromMs && slices[i].toEndMs <= r.toEndMs);
    const cut = plan.split(value, r);
    if (!cut) return { value: await plan.compute(plan.range), computed: [plan.range], reused: 0 };
    if (cut.length !== own.length) throw new Error(`partials: ${cut.length} parts for ${own.length} buckets`);
    own.forEach((i, k) => {
      parts[i] = cut[k];
      if (!slices[i].closed) return;
      const value = { p: cut[k] };
      fresh.push([ids[i], { value, signature: sigs[i], at: now, live: false, bytes: 2 * (JSON.stringify(value)?.length ?? 0) + ids[i].length }]);
    });
  }
  // Kept before answering, so the next run on any process finds them.
  if (fresh.length) await kept.write(fresh);
  const value = await plan.join(parts, plan.range);
  return { value, computed, reused: missing.filter((m) => !m).length };
}

/** 00:00 UTC of the day holding `ms`. */
export const dayStart = (ms: number) => dayOf(ms) * DAY_MS;
