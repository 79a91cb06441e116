import { checkCells, coarserUnit } from '../../engine/guard.js';
import { bucketCount, type DateRange } from '../../engine/range.js';
import { DAY_MS } from '../../dialects/index.js';
import { runRetention } from './compile.js';
import { RetentionQuerySchema, RetentionResultSchema } from '../../schema.js';
import { RetentionAnalysisSchema } from '../../ir/schema.js';
import { defineAnalysis, type IrKindDef } from '../define.js';

/** A valid IR document of this kind answers 501 on POST /api/query (no `run`): the v0 endpoint serves it. */
const RETENTION: IrKindDef<typeof RetentionAnalysisSchema> = {
  kind: 'retention',
  analysis: RetentionAnalysisSchema,
  fromV1(a, { ids, warnings }) {
    if (a.unit && a.unit !== 'day' && a.unit !== 'week') warnings.push(`analysis.unit: retention runs by day or week; ${a.unit} became week`);
    return { kind: 'retention', born: ids[0], returning: ids[1] ?? ids[0], unit: a.unit === 'day' ? 'day' : 'week', ...(a.buckets ? { buckets: a.buckets } : {}) };
  },
  resolve(query, ref) {
    ref(query.analysis.born, 'analysis.born', true);
    ref(query.analysis.returning, 'analysis.returning', true);
  },
  span: (query, range) => returnsAfter(range, query.analysis.unit, query.analysis.buckets),
};

/** A cohort born on the range's last day returns up to `buckets` units after it. */
const returnsAfter = (range: DateRange, unit: 'day' | 'week', buckets: number): DateRange =>
  ({ fromMs: range.fromMs, toEndMs: range.toEndMs + buckets * (unit === 'day' ? 1 : 7) * DAY_MS });

/** Cohorts by birth bucket and their returns per following bucket. */
export const retention = defineAnalysis({
  name: 'retention',
  summary: 'Cohorts by birth bucket and how many return in each following bucket',
  body: RetentionQuerySchema,
  response: RetentionResultSchema,
  // One row of `buckets` counts per cohort, and a cohort per unit of the range.
  estimate: (guard, body, range) => checkCells(guard, bucketCount(body.unit, range), body.buckets, [...coarserUnit(body.unit), 'the date range (from/to)', 'buckets']),
  run: (env, q, body, range) => runRetention(env.events, q, body, range),
  span: (body, range) => returnsAfter(range, body.unit, body.buckets),
  report: { filterable: false },
  guess: { order: 1, when: (doc) => 'bornEvent' in doc || 'returnEvent' in doc },
  ir: RETENTION,
  toIr: (r) => ({
    metrics: [
      { id: 'A', kind: 'event', event: r.bornEvent, aggregation: { op: 'unique' } },
      { id: 'B', kind: 'event', event: r.returnEvent, aggregation: { op: 'unique' } },
    ],
    analysis: { kind: 'retention', born: 'A', returning: 'B', unit: r.unit, buckets: r.buckets },
  }),
});
