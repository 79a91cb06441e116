import type { Context } from 'koa';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf, requireRole } from '../auth/context.js';
import { actorOf } from '../audit/actor.js';
import { resolveProject, rowInScope } from '../auth/project-scope.js';
import { IdParams } from '../projects/schema.js';
import type { Services } from '../services.js';
import type { SavedReport } from './store.js';
import { withQueryV1 } from './ir.js';
import { runReport } from './run.js';
import { resultToCsv } from './csv.js';
import { sendCsv } from '../http/download.js';
import { CreateReportBody, ProjectQuery, ReportRunSchema, RunFormatQuery, SavedReportSchema, UpdateReportBody } from './schema.js';

/** Saved reports: every role reads and runs, member and above write; another organisation's id is 404. */
export function reportRoutes(deps: Deps, services: Pick<Services, 'executor' | 'reports'>): RouteSpec[] {
  const { reports } = services;
  const inScope = rowInScope(deps.projects, 'report', (id) => reports.get(id));
  const load = (ctx: Context, id: number) => inScope(authOf(ctx), id);
  /** Through the query executor, after the caller's query rate limit (the bucket of /api/query/*). */
  const run = async (ctx: Context, report: SavedReport) => {
    const { executor } = services;
    await executor.admit(authOf(ctx), report.project_id);
    const { result, warnings, cached_at } = await runReport({ executor, config: deps.config }, await executor.scopeOf(report.project_id), report);
    return { report_id: report.id, type: report.type, result, warnings, ran_at: Date.now(), ...(cached_at !== undefined ? { cached_at } : {}) };
  };
  return [
    route({
      method: 'get', path: '/api/reports', tag: 'Reports', auth: 'api', query: ProjectQuery, response: z.array(SavedReportSchema),
      summary: "The project's saved reports",
      handler: async ({ ctx, query }) => {
        const project = await resolveProject(deps.projects, authOf(ctx), query.projectId);
        return (await reports.list(project.id)).map(withQueryV1);
      },
    }),
    route({
      method: 'post', path: '/api/reports', tag: 'Reports', auth: 'api', query: ProjectQuery, body: CreateReportBody, response: SavedReportSchema, status: 201,
      summary: 'Saves a report: a v0 query body or an IR document of the kind `type` names (member)',
      handler: async ({ ctx, body, query }) => {
        const auth = requireRole(ctx, 'member');
        const project = await resolveProject(deps.projects, auth, body.projectId ?? query.projectId);
        return reports.create(actorOf(ctx), { projectId: project.id, name: body.name, description: body.description ?? null, type: body.type, query: body.query });
      },
    }),
    route({
      method: 'get', path: '/api/reports/{id}', tag: 'Reports', auth: 'api', params: IdParams, response: SavedReportSchema,
      summary: 'One saved report',
      handler: async ({ ctx, params }) => withQueryV1(await load(ctx, params.id)),
    }),
    route({
      method: 'put', path: '/api/reports/{id}', tag: 'Reports', auth: 'api', params: IdParams, body: UpdateReportBody, response: SavedReportSchema,
      summary: 'Changes a report; a new type or query is checked against the other (member)',
      handler: async ({ ctx, params, body }) => {
        const report = await load(ctx, params.id);
        requireRole(ctx, 'member');
        return reports.update(actorOf(ctx), report, body);
      },
    }),
    route({
      method: 'delete', path: '/api/reports/{id}', tag: 'Reports', auth: 'api', params: IdParams,
      summary: 'Deletes a report and the board cards that show it (member)',
      handler: async ({ ctx, params }) => {
        const report = await load(ctx, params.id);
        requireRole(ctx, 'member');
        await reports.delete(actorOf(ctx), report.id);
        return { ok: true };
      },
    }),
    route({
      method: 'post', path: '/api/reports/{id}/run', tag: 'Reports', auth: 'api', params: IdParams, response: ReportRunSchema,
      summary: "Runs the report's query (any role)",
      handler: async ({ ctx, params }) => run(ctx, await load(ctx, params.id)),
    }),
    route({
      method: 'get', path: '/api/reports/{id}/run', tag: 'Reports', auth: 'api', params: IdParams, query: RunFormatQuery,
      summary: "Runs the report's query; `format=csv` answers the result as a CSV download (any role)",
      handler: async ({ ctx, params, query }) => {
        const report = await load(ctx, params.id);
        const out = await run(ctx, report);
        return query.format === 'csv' ? sendCsv(ctx, `report-${report.id}`, resultToCsv(out.result)) : out;
      },
    }),
  ];
}
