import type { Deps } from '../deps.js';
import type { EventStore } from '../ports/events/index.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf } from '../auth/context.js';
import { resolveProject } from '../auth/project-scope.js';
import { limitQueries } from './rate.js';
import type { DefinitionStore } from '../definitions/store.js';
import type { CalculatedMetricDefinition } from '../definitions/schema.js';
import type { QueryContexts } from './context.js';
import { dateRange } from './range.js';
import { boundedEvents } from './guard.js';
import { ANALYSES, runAnalysis, type AnalysisDef, type RunEnv } from './registry.js';
import type { AnnotationStore } from '../annotations/store.js';

/** What the analysis routes are built from (once, at start-up). */
export interface QueryDomain {
  events: EventStore;
  contexts: QueryContexts;
  metrics: DefinitionStore<CalculatedMetricDefinition>;
  annotations: AnnotationStore;
}

/** The v0 analysis endpoints, one per declaration of the registry: every role may query; `projectId` in the body. */
export function queryRoutes(deps: Pick<Deps, 'projects' | 'config' | 'db' | 'rateLimits'>, domain: QueryDomain): RouteSpec[] {
  const guard = deps.config.queryGuard;
  const env: RunEnv = { events: boundedEvents(domain.events, guard), guard, annotations: domain.annotations, metrics: domain.metrics };
  return ANALYSES.map((declared) => {
    const a = declared as unknown as AnalysisDef;
    return route({
      method: 'post', path: `/api/query/${a.name}`, tag: 'Query', auth: 'api', body: a.body, response: a.response, summary: a.summary,
      handler: async ({ ctx, body }) => {
        const { from, to, projectId } = body as { projectId?: unknown; from: unknown; to: unknown };
        const range = dateRange(from, to, deps.config.maxQueryRangeDays);
        const project = await resolveProject(deps.projects, authOf(ctx), projectId);
        await limitQueries(deps, ctx, project.id);
        a.estimate(guard, body, range);
        return runAnalysis(a, env, await domain.contexts.forProject(project.id), body, range, 'endpoint');
      },
    });
  });
}
