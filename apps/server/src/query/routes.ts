import type { Deps } from '../deps.js';
import type { QueryExecutor } from './executor.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf } from '../auth/context.js';
import { resolveProject } from '../auth/project-scope.js';
import { bodyRange } from './ir/range.js';
import { ANALYSES } from './registry.js';
import type { AnalysisDef } from './kinds/define.js';

/** The v0 analysis endpoints, one per declaration of the registry: every role may query; `projectId` in the body. */
export function queryRoutes(deps: Pick<Deps, 'projects' | 'config'>, executor: QueryExecutor): RouteSpec[] {
  return ANALYSES.map((declared) => {
    const a = declared as unknown as AnalysisDef;
    return route({
      method: 'post', path: `/api/query/${a.name}`, tag: 'Query', auth: 'api', body: a.body, response: a.response, summary: a.summary,
      handler: async ({ ctx, body }) => {
        const { projectId } = body as { projectId?: unknown };
        const range = bodyRange(body as { from?: unknown; to?: unknown }, deps.config.maxQueryRangeDays);
        const project = await resolveProject(deps.projects, authOf(ctx), projectId);
        await executor.admit(authOf(ctx), project.id);
        return executor.analysis(project, a, body, range, 'endpoint');
      },
    });
  });
}
