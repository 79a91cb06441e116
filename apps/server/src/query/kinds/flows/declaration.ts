import { runFlows } from './compile.js';
import { FlowsQuerySchema, FlowsResultSchema } from '../../schema.js';
import { FlowsAnalysisSchema } from '../../ir/schema.js';
import { defineAnalysis, type IrKindDef } from '../define.js';

/** A valid IR document of this kind answers 501 on POST /api/query (no `run`): the v0 endpoint serves it. */
const FLOWS: IrKindDef<typeof FlowsAnalysisSchema> = {
  kind: 'flows',
  analysis: FlowsAnalysisSchema,
  fromV1: (a, { ids }) => ({ kind: 'flows', anchor: ids[0], direction: a.direction ?? 'after', ...(a.depth ? { steps: a.depth } : {}) }),
  resolve(query, ref, out) {
    const anchor = query.analysis.anchor;
    ref(anchor, 'analysis.anchor', true);
    const m = query.metrics.find((x) => x.id === anchor);
    if (m?.kind === 'event' && m.event === '$all_events') out.push({ path: 'analysis.anchor', message: '$all_events cannot anchor flows', code: 'illegal_position' });
  },
};

/** The most common paths after or before an anchor; no buckets, so no estimate (rows bounded by `maxRows`). */
export const flows = defineAnalysis({
  name: 'flows',
  summary: 'Most common paths after or before an anchor event',
  body: FlowsQuerySchema,
  response: FlowsResultSchema,
  estimate: () => {},
  run: (env, q, body, range) => runFlows(env.events, q, body, range),
  report: { filterable: false },
  guess: { order: 2, when: (doc) => 'direction' in doc },
  ir: FLOWS,
  toIr: (f) => ({
    metrics: [{ id: 'A', kind: 'event', event: f.event, aggregation: { op: 'unique' } }],
    analysis: { kind: 'flows', anchor: 'A', direction: f.direction, steps: f.steps, limit: f.limit },
  }),
});
