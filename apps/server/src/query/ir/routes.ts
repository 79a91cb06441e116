import { z } from 'zod';
import type { Context } from 'koa';
import type { Deps } from '../../deps.js';
import type { QueryExecutor } from '../executor.js';
import { authOf } from '../../auth/context.js';
import { resolveProject } from '../../auth/project-scope.js';
import { jsonBody } from '../../http/body.js';
import { badRequest } from '../../http/errors.js';
import { route, type RouteSpec } from '../../http/route.js';
import { nulPath } from '../../http/columns.js';
import { DrilldownPageRequestSchema, DrilldownPageSchema, DrilldownSelectionSchema } from './drilldown.js';
import { IrResultSchema } from './results.js';
import { notImplemented, unexecutedKind } from './run.js';
import type { IrIssue } from './schema.js';
import { QueryV2Schema } from './document.js';
import { upgradeQuery, zodIssues } from './upgrade.js';

const ProjectId = z.union([z.string(), z.number()]).optional();
/** What /openapi.json shows; the handlers validate the raw body themselves (one error per problem). */
const QueryBody = z.object({ projectId: ProjectId, query: QueryV2Schema }).openapi('IrQueryRequest');
const DrilldownBody = z
  .object({ projectId: ProjectId, query: QueryV2Schema, selection: DrilldownSelectionSchema, page: DrilldownPageRequestSchema.optional() })
  .openapi('DrilldownRequest');
const QueryEnvelope = z.object({ projectId: ProjectId, query: z.unknown() }).strict();
const DrilldownEnvelope = z.object({ projectId: ProjectId, query: z.unknown(), selection: DrilldownSelectionSchema, page: DrilldownPageRequestSchema.default({ limit: 50, offset: 0 }) }).strict();

const invalidQuery = (errors: IrIssue[]) => badRequest('invalid query', { body: { errors } });

/** POST /api/query and /api/query/drilldown: upgrade first, then run; every role may query. */
export function irQueryRoutes(deps: Pick<Deps, 'projects'>, executor: QueryExecutor): RouteSpec[] {
  const prepare = async <T extends { projectId?: unknown; query: unknown }>(ctx: Context, envelope: z.ZodType<T>) => {
    const raw = jsonBody(ctx);
    const env = envelope.safeParse(raw ?? {});
    const rawQuery = raw && typeof raw === 'object' ? (raw as { query?: unknown }).query : undefined;
    const unexecuted = unexecutedKind(rawQuery);
    if (unexecuted !== undefined && env.success) {
      // The API's 501 for retention and flows holds whatever the document's other members are;
      // the caller's project and rate limit are still checked first.
      const project = await resolveProject(deps.projects, authOf(ctx), env.data.projectId);
      await executor.admit(authOf(ctx), project.id);
      throw notImplemented(unexecuted);
    }
    const query = upgradeQuery(raw && typeof raw === 'object' && 'query' in raw ? (raw as { query: unknown }).query : undefined);
    const errors = [...(env.success ? [] : zodIssues(env.error).filter((e) => e.path !== 'query')), ...(query.ok ? [] : query.errors.map((e) => (raw && typeof raw === 'object' && 'query' in raw ? e : { ...e, path: 'query' })))];
    if (!env.success || !query.ok) throw invalidQuery(errors.length ? errors : [{ path: '', message: 'invalid request' }]);
    // Neither engine takes NUL in SQL (docs/hardening.md): checked on the upgraded document, so paths are v2's.
    const inSelection = nulPath((env.data as { selection?: unknown }).selection);
    const nul = nulPath(query.query) ?? (inSelection === undefined ? undefined : inSelection ? `selection.${inSelection}` : 'selection');
    if (nul !== undefined) throw invalidQuery([{ path: nul, message: 'must not contain NUL characters' }]);
    const project = await resolveProject(deps.projects, authOf(ctx), env.data.projectId);
    await executor.admit(authOf(ctx), project.id);
    return { body: env.data, query: query.query, warnings: query.warnings, project };
  };
  return [
    route({
      method: 'post', path: '/api/query', tag: 'Query', auth: 'api', body: QueryBody, rawBody: true, response: IrResultSchema,
      summary: 'Runs a Query IR document (any version, upgraded first): trend or funnel; retention and flows answer 501',
      handler: async ({ ctx }) => {
        const p = await prepare(ctx, QueryEnvelope);
        const result = await executor.ir(p.project, p.query);
        return p.warnings.length ? { ...result, warnings: p.warnings } : result;
      },
    }),
    route({
      method: 'post', path: '/api/query/drilldown', tag: 'Query', auth: 'api', body: DrilldownBody, rawBody: true, response: DrilldownPageSchema,
      summary: 'The canonical ids behind one number of a trend or funnel, paged',
      handler: async ({ ctx }) => {
        const p = await prepare(ctx, DrilldownEnvelope);
        return executor.drilldown(p.project, p.query, p.body.selection, p.body.page);
      },
    }),
  ];
}
