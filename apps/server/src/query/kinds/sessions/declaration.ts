import { checkBuckets } from '../../engine/guard.js';
import { runSessions } from './compile.js';
import { SessionsQuerySchema, SessionsResultSchema } from '../../schema.js';
import { SessionsAnalysisSchema } from '../../ir/schema.js';
import { defineAnalysis, type IrKindDef } from '../define.js';

/** No metrics; answers 501 on POST /api/query (no `run`). */
const SESSIONS: IrKindDef<typeof SessionsAnalysisSchema> = {
  kind: 'sessions',
  analysis: SessionsAnalysisSchema,
  fromV1: (a) => ({ kind: 'sessions', ...(a.unit ? { unit: a.unit } : {}) }),
  resolve: () => {},
};

/** Sessions per bucket; not a saved-report type. Any body matches its guess: it is tried last. */
export const sessions = defineAnalysis({
  name: 'sessions',
  summary: 'Sessions (30-minute inactivity) per bucket with their average duration',
  body: SessionsQuerySchema,
  response: SessionsResultSchema,
  estimate: (guard, body, range) => checkBuckets(guard, body.unit, range),
  run: (env, q, body, range) => runSessions(env.events, q, body.unit, range),
  guess: { order: 9, when: () => true },
  ir: SESSIONS,
  toIr: (s) => ({ metrics: [], analysis: { kind: 'sessions', unit: s.unit } }),
});
