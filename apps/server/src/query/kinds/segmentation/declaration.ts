import { checkBuckets } from '../../engine/guard.js';
import { runSegmentation } from './compile.js';
import { SegmentationQuerySchema, SegmentationResultSchema } from '../../schema.js';
import { defineAnalysis } from '../define.js';
import { TREND } from '../trend/declaration.js';

/** Event totals or unique identities per bucket; upgrades to an IR trend of one metric. */
export const segmentation = defineAnalysis({
  name: 'segmentation',
  summary: 'Event totals or unique identities per calendar bucket, optionally broken down by up to three properties',
  body: SegmentationQuerySchema,
  response: SegmentationResultSchema,
  estimate: (guard, body, range) => checkBuckets(guard, body.unit, range),
  run: (env, q, body, range) => runSegmentation(env.events, q, body, range, env.guard),
  annotate: 'always',
  report: { filterable: true },
  guess: { order: 5, when: (doc) => 'event' in doc || 'type' in doc },
  ir: TREND,
  toIr: (s) => ({
    ...(s.filters?.length ? { filters: s.filters } : {}),
    metrics: [{ id: 'A', kind: 'event', event: s.event, aggregation: { op: s.type === 'total' ? 'count' : 'unique' } }],
    ...(s.breakdown ? { breakdown: typeof s.breakdown === 'string' ? { property: s.breakdown } : { property: s.breakdown[0], ...(s.breakdown.length > 1 ? { thenBy: s.breakdown.slice(1) } : {}) } } : {}),
    analysis: { kind: 'trend', unit: s.unit },
  }),
});
