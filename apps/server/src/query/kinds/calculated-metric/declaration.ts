import { notFound } from '../../../http/errors.js';
import { checkBuckets } from '../../engine/guard.js';
import { runCalculatedMetric } from './compile.js';
import { MetricQuerySchema, SegmentationResultSchema } from '../../schema.js';
import { defineAnalysis } from '../define.js';
import { TREND } from '../trend/declaration.js';

/** A saved calculated metric per bucket (`/api/query/metric`); upgrades to an IR trend of a calculated metric. */
export const calculatedMetric = defineAnalysis({
  name: 'metric',
  summary: 'Runs a calculated metric over buckets (SegmentationResult shape)',
  body: MetricQuerySchema,
  response: SegmentationResultSchema,
  estimate: (guard, body, range) => checkBuckets(guard, body.unit, range),
  run: async (env, q, body, range) => {
    const metric = await env.metrics.get(body.definitionId);
    if (!metric || metric.project_id !== q.projectId) throw notFound('metric');
    return runCalculatedMetric(env.events, q, metric.name, metric.definition, body.unit, range);
  },
  // The v0 endpoint never listed annotations for calculated metrics; report runs always did.
  annotate: 'reports',
  report: { filterable: false },
  guess: { order: 4, when: (doc) => 'definitionId' in doc },
  ir: TREND,
  toIr: (m) => ({ metrics: [{ id: 'A', kind: 'calculated', definitionId: m.definitionId }], analysis: { kind: 'trend', unit: m.unit } }),
});
