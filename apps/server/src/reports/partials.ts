import { checkBreakdownCells } from '../query/engine/guard.js';
import { evalFormula, parseFormula } from '../query/engine/formula.js';
import { bucketCount, bucketLabel, bucketStarts, type DateRange } from '../query/engine/range.js';
import { breakdownName, type BreakdownProps } from '../query/breakdowns.js';
import { analysisNamed } from '../query/registry.js';
import { irRanges } from '../query/ir/run.js';
import type { QueryV2 } from '../query/ir/document.js';
import type { TrendResult } from '../query/ir/results.js';
import type { SegmentationResult } from '../query/schema.js';
import type { ProjectScope } from '../query/executor.js';
import type { PartialPlan } from '../results-cache/partials.js';
import type { ReportRunner, ReportRunResult } from './run.js';

/**
 * Which report runs are cut per calendar bucket so closed days are never recomputed
 * (results-cache/partials.ts; docs/analyses.md, "Closed days"), and how. Only where the answer
 * stitched from per-bucket parts is exactly the whole computation's:
 *
 * - v0 segmentation of event totals (any breakdown and filters) and v0 calculated metrics: every
 *   number is per bucket (formulas are applied per bucket), a series' total is its buckets' sum;
 *   series are ranked by their bucket sum (integers) then name, as the whole run ranks them; the
 *   breakdown's cell limit is checked over the whole range.
 * - IR trends without comparison and breakdown whose metrics are all counts or calculated metrics:
 *   a count's total is the sum of its buckets, a calculated metric's is null, the formula's is
 *   evaluated on those totals.
 *
 * Not cut (the whole range is computed as before): hourly units; v0 segmentation of unique
 * identities (a series' total counts each person once over the range); IR trends with a unique or
 * property aggregation (their total is one figure over the whole range: identities are not
 * additive, averages and medians are not sums, float sums differ in the last bits by order), with a
 * breakdown (its `limit` keeps the top segments over the whole range), or a comparison (the
 * dropped identities span both ranges); funnels, retention, flows, sessions.
 */
type Unit = 'day' | 'week' | 'month';
/** Cohort filters and breakdowns are not cut: a cohort's members may change with the day it is read on. */
const namesCohort = (v: unknown) => JSON.stringify(v ?? null).includes('"cohort');
const UNITS = new Set<string>(['day', 'week', 'month']);
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

type Prepared =
  | { kind: 'v0'; body: unknown; range: DateRange; warnings: string[] }
  | { kind: 'ir'; query: QueryV2; warnings: string[] };

export function partialPlan(runner: ReportRunner, project: ProjectScope, type: string, p: Prepared, now: number): PartialPlan<ReportRunResult> | undefined {
  if (p.kind === 'v0') return v0Plan(runner, project, type, p.body as Record<string, unknown>, p.range, p.warnings);
  return irPlan(runner, project, p.query, p.warnings, now);
}

/**
 * One bucket of a v0 segmentation answer: its series' values (zeros only for the one series of a
 * run without breakdown), and whether the series carry their `total` (the buckets' sum for events).
 */
interface V0Part { s: Array<[string, number]>; t: boolean }

function v0Plan(runner: ReportRunner, project: ProjectScope, type: string, body: Record<string, unknown>, range: DateRange, warnings: string[]): PartialPlan<ReportRunResult, V0Part> | undefined {
  if (type !== 'segmentation' && type !== 'metric') return undefined;
  // A series of unique identities may carry its total over the whole range (each person once): not a sum of buckets.
  if (type === 'segmentation' && body.type === 'unique') return undefined;
  const unit = String(body.unit);
  if (!UNITS.has(unit) || namesCohort(body.filters) || namesCohort(body.breakdown)) return undefined;
  const def = analysisNamed(type);
  const breakdown = type === 'segmentation' ? (body.breakdown as BreakdownProps | undefined) : undefined;
  const { from: _f, to: _t, dateRange: _d, ...rest } = body;
  const annotate = def.annotate === 'always' || def.annotate === 'reports';
  return {
    parts: { t: type, b: rest },
    unit: unit as Unit,
    range,
    check: () => runner.executor.checkAnalysis(def, body, range),
    compute: async (r) => ({ result: await runner.executor.analysis(project, def, body, r, 'report'), warnings }),
    split(value, r) {
      const res = value.result as SegmentationResult;
      const n = bucketStarts(unit as Unit, r).length;
      // Two series of one name (a value spelled as the missing one's name) cannot be told apart once cut.
      if (new Set(res.series.map((x) => x.name)).size !== res.series.length || res.buckets.length !== n) return undefined;
      const t = res.series.some((x) => (x as { total?: number }).total !== undefined);
      return Array.from({ length: n }, (_, i) => ({
        s: res.series.filter((x) => !breakdown || x.data[i].value !== 0).map((x): [string, number] => [x.name, x.data[i].value]),
        t,
      }));
    },
    async join(parts, r) {
      const starts = bucketStarts(unit as Unit, r);
      const labels = starts.map((b) => bucketLabel(unit as Unit, b));
      const byName = new Map<string, number[]>();
      parts.forEach((part, i) => {
        for (const [name, v] of part.s) {
          let data = byName.get(name);
          if (!data) byName.set(name, (data = new Array<number>(parts.length).fill(0)));
          data[i] = v;
        }
      });
      if (breakdown) checkBreakdownCells(runner.executor.guard, byName.size, bucketCount(unit as Unit, r), breakdownName(breakdown));
      const sum = (d: number[]) => d.reduce((a, b) => a + b, 0);
      const ordered = [...byName].map(([name, data]) => ({ name, data, sum: sum(data) }))
        .sort((a, b) => b.sum - a.sum || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      const result: SegmentationResult = {
        buckets: labels,
        series: ordered.map((x) => ({ name: x.name, data: x.data.map((value, i) => ({ bucket: labels[i], value })), ...(parts.some((p) => p.t) ? { total: x.sum } : {}) })),
        ...(annotate ? { annotations: await runner.executor.annotations(project.id, r) } : {}),
      };
      return { result, warnings };
    },
  };
}

/** One bucket of an IR trend: each series' letter, name and value. */
interface IrPart { s: Array<[string, string, number]> }

function irPlan(runner: ReportRunner, project: ProjectScope, query: QueryV2, warnings: string[], now: number): PartialPlan<ReportRunResult, IrPart> | undefined {
  const a = query.analysis;
  if (a.kind !== 'trend' || a.compare || query.breakdown || !UNITS.has(a.unit) || namesCohort(query.filters) || namesCohort(query.metrics)) return undefined;
  if (!query.metrics.every((m) => m.kind === 'calculated' || (m.kind === 'event' && m.aggregation.op === 'count'))) return undefined;
  let range: DateRange;
  try {
    range = irRanges(runner, query, now).range;
  } catch {
    return undefined;
  }
  const unit = a.unit as Unit;
  const formula = a.formula ? parseFormula(a.formula) : undefined;
  const { dateRange: _d, ...rest } = query;
  return {
    parts: { t: 'ir', q: rest },
    unit,
    range,
    check: () => runner.executor.checkIr(query, now),
    compute: async (r) => {
      const narrowed: QueryV2 = { ...query, dateRange: { kind: 'absolute', from: day(r.fromMs), to: day(r.toEndMs - 1) } };
      return { result: await runner.executor.ir(project, narrowed), warnings };
    },
    split(value, r) {
      const res = value.result as TrendResult;
      const n = bucketStarts(unit, r).length;
      if (res.buckets.length !== n) return undefined;
      return Array.from({ length: n }, (_, i) => ({ s: res.series.map((x): [string, string, number] => [x.metricId, x.name, x.data[i]]) }));
    },
    async join(parts, r) {
      const totals: Record<string, number | null> = {};
      const series = parts[0].s.map(([metricId, name], j) => {
        const data = parts.map((p) => p.s[j][2]);
        const m = query.metrics.find((x) => x.id === metricId);
        let total: number | null;
        if (metricId === 'formula' && formula) {
          const ts = query.metrics.map((x) => totals[x.id]);
          total = ts.some((t) => t === null || t === undefined) ? null : evalFormula(formula, Object.fromEntries(query.metrics.map((x) => [x.id, totals[x.id]!])));
        } else {
          total = m?.kind === 'calculated' ? null : data.reduce((x, y) => x + y, 0);
          totals[metricId] = total;
        }
        return { metricId, name, range: 'primary' as const, data, total };
      });
      const result: TrendResult = {
        kind: 'trend', unit: a.unit, range: { from: day(r.fromMs), to: day(r.toEndMs - 1) },
        buckets: bucketStarts(unit, r).map((b) => bucketLabel(unit, b)),
        series, omittedSegments: 0, annotations: await runner.executor.annotations(project.id, r),
      };
      return { result, warnings };
    },
  };
}
