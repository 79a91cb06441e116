import type { Context } from 'koa';
import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf } from '../auth/context.js';
import { resolveProject } from '../auth/project-scope.js';
import { notFound } from '../http/errors.js';
import { DefinitionStore } from '../definitions/store.js';
import type { CalculatedMetricDefinition } from '../definitions/schema.js';
import { queryContext } from './context.js';
import { dateRange } from './range.js';
import { runSegmentation } from './segmentation.js';
import { runFunnel } from './funnel.js';
import { runRetention } from './retention.js';
import { runFlows } from './flows.js';
import { runSessions } from './sessions.js';
import { runMetric } from './metric.js';
import { annotationsInRange } from '../annotations/store.js';
import {
  FlowsQuerySchema, FlowsResultSchema, FunnelQuerySchema, FunnelResultSchema, MetricQuerySchema, RetentionQuerySchema,
  RetentionResultSchema, SegmentationQuerySchema, SegmentationResultSchema, SessionsQuerySchema, SessionsResultSchema,
} from './schema.js';

/** The v0 analysis endpoints: every role may query; `projectId` in the body. */
export function queryRoutes(deps: Deps): RouteSpec[] {
  const prepare = async (ctx: Context, body: { projectId?: unknown; from: unknown; to: unknown }) => {
    const range = dateRange(body.from, body.to, deps.config.maxQueryRangeDays);
    const project = await resolveProject(deps.projects, authOf(ctx), body.projectId);
    return { range, q: await queryContext(deps, project.id), project };
  };
  return [
    route({
      method: 'post', path: '/api/query/segmentation', tag: 'Query', auth: 'api', body: SegmentationQuerySchema, response: SegmentationResultSchema,
      summary: 'Event totals or unique identities per calendar bucket, optionally broken down by a property',
      handler: async ({ ctx, body }) => {
        const { range, q, project } = await prepare(ctx, body);
        return { ...(await runSegmentation(deps.events, q, body, range)), annotations: await annotationsInRange(deps.db, project.id, range) };
      },
    }),
    route({
      method: 'post', path: '/api/query/funnel', tag: 'Query', auth: 'api', body: FunnelQuerySchema, response: FunnelResultSchema,
      summary: 'Ordered conversion through 2-10 steps within a window from step 0',
      handler: async ({ ctx, body }) => {
        const { range, q } = await prepare(ctx, body);
        return runFunnel(deps.events, q, body, range);
      },
    }),
    route({
      method: 'post', path: '/api/query/retention', tag: 'Query', auth: 'api', body: RetentionQuerySchema, response: RetentionResultSchema,
      summary: 'Cohorts by birth bucket and how many return in each following bucket',
      handler: async ({ ctx, body }) => {
        const { range, q } = await prepare(ctx, body);
        return runRetention(deps.events, q, body, range);
      },
    }),
    route({
      method: 'post', path: '/api/query/flows', tag: 'Query', auth: 'api', body: FlowsQuerySchema, response: FlowsResultSchema,
      summary: 'Most common paths after or before an anchor event',
      handler: async ({ ctx, body }) => {
        const { range, q } = await prepare(ctx, body);
        return runFlows(deps.events, q, body, range);
      },
    }),
    route({
      method: 'post', path: '/api/query/sessions', tag: 'Query', auth: 'api', body: SessionsQuerySchema, response: SessionsResultSchema,
      summary: 'Sessions (30-minute inactivity) per bucket with their average duration',
      handler: async ({ ctx, body }) => {
        const { range, q } = await prepare(ctx, body);
        return runSessions(deps.events, q, body.unit, range);
      },
    }),
    route({
      method: 'post', path: '/api/query/metric', tag: 'Query', auth: 'api', body: MetricQuerySchema, response: SegmentationResultSchema,
      summary: 'Runs a calculated metric over buckets (SegmentationResult shape)',
      handler: async ({ ctx, body }) => {
        const { range, q, project } = await prepare(ctx, body);
        const metric = await new DefinitionStore<CalculatedMetricDefinition>(deps.db, 'calculated_metrics').get(body.definitionId);
        if (!metric || metric.project_id !== project.id) throw notFound('metric');
        return runMetric(deps.events, q, metric.name, metric.definition, body.unit, range);
      },
    }),
  ];
}
