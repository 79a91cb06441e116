import type { ZodType } from 'zod';
import type { Deps } from '../deps.js';
import type { EventStore } from '../ports/events/index.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf } from '../auth/context.js';
import { resolveProject } from '../auth/project-scope.js';
import { notFound } from '../http/errors.js';
import { limitQueries } from './rate.js';
import type { DefinitionStore } from '../definitions/store.js';
import type { CalculatedMetricDefinition } from '../definitions/schema.js';
import type { QueryContext, QueryContexts } from './context.js';
import { dateRange, type DateRange } from './range.js';
import { boundedEvents, checkV0Estimate } from './guard.js';
import { runSegmentation } from './segmentation.js';
import { runFunnel } from './funnel.js';
import { runRetention } from './retention.js';
import { runFlows } from './flows.js';
import { runSessions } from './sessions.js';
import { runMetric } from './metric.js';
import type { AnnotationStore } from '../annotations/store.js';
import {
  FlowsQuerySchema, FlowsResultSchema, FunnelQuerySchema, FunnelResultSchema, MetricQuerySchema, RetentionQuerySchema,
  RetentionResultSchema, SegmentationQuerySchema, SegmentationResultSchema, SessionsQuerySchema, SessionsResultSchema,
} from './schema.js';

/** What the analysis routes are built from (once, at start-up). */
export interface QueryDomain {
  events: EventStore;
  contexts: QueryContexts;
  metrics: DefinitionStore<CalculatedMetricDefinition>;
  annotations: AnnotationStore;
}

/** One analysis: its path, schemas and how it runs once the range, project and context are known. */
interface Analysis<B> {
  path: string;
  body: ZodType<B>;
  response: ZodType;
  summary: string;
  run: (q: QueryContext, body: B, range: DateRange) => Promise<unknown>;
}

const analysis = <B>(a: Analysis<B>) => a as Analysis<unknown>;

/** The v0 analysis endpoints: every role may query; `projectId` in the body. */
export function queryRoutes(deps: Pick<Deps, 'projects' | 'config' | 'db' | 'rateLimits'>, domain: QueryDomain): RouteSpec[] {
  const { contexts, metrics, annotations } = domain;
  const guard = deps.config.queryGuard;
  const events = boundedEvents(domain.events, guard);
  // One line per analysis: path, request and response schemas, OpenAPI summary, how it runs.
  const analyses: Analysis<unknown>[] = [
    analysis({ path: 'segmentation', body: SegmentationQuerySchema, response: SegmentationResultSchema, summary: 'Event totals or unique identities per calendar bucket, optionally broken down by a property', run: async (q, body, range) => ({ ...(await runSegmentation(events, q, body, range, guard)), annotations: await annotations.inRange(q.projectId, range) }) }),
    analysis({ path: 'funnel', body: FunnelQuerySchema, response: FunnelResultSchema, summary: 'Ordered conversion through 2-10 steps within a window from step 0', run: (q, body, range) => runFunnel(events, q, body, range) }),
    analysis({ path: 'retention', body: RetentionQuerySchema, response: RetentionResultSchema, summary: 'Cohorts by birth bucket and how many return in each following bucket', run: (q, body, range) => runRetention(events, q, body, range) }),
    analysis({ path: 'flows', body: FlowsQuerySchema, response: FlowsResultSchema, summary: 'Most common paths after or before an anchor event', run: (q, body, range) => runFlows(events, q, body, range) }),
    analysis({ path: 'sessions', body: SessionsQuerySchema, response: SessionsResultSchema, summary: 'Sessions (30-minute inactivity) per bucket with their average duration', run: (q, body, range) => runSessions(events, q, body.unit, range) }),
    analysis({
      path: 'metric', body: MetricQuerySchema, response: SegmentationResultSchema,
      summary: 'Runs a calculated metric over buckets (SegmentationResult shape)',
      run: async (q, body, range) => {
        const metric = await metrics.get(body.definitionId);
        if (!metric || metric.project_id !== q.projectId) throw notFound('metric');
        return runMetric(events, q, metric.name, metric.definition, body.unit, range);
      },
    }),
  ];
  return analyses.map((a) => route({
    method: 'post', path: `/api/query/${a.path}`, tag: 'Query', auth: 'api', body: a.body, response: a.response, summary: a.summary,
    handler: async ({ ctx, body }) => {
      const { from, to, projectId } = body as { projectId?: unknown; from: unknown; to: unknown };
      const range = dateRange(from, to, deps.config.maxQueryRangeDays);
      const project = await resolveProject(deps.projects, authOf(ctx), projectId);
      await limitQueries(deps, ctx, project.id);
      checkV0Estimate(guard, a.path, body as Record<string, unknown>, range);
      return a.run(await contexts.forProject(project.id), body, range);
    },
  }));
}
