import type { Context } from 'koa';
import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { actorUserId, authOf, requireRole } from '../auth/context.js';
import { loadProjectInScope, resolveProject } from '../auth/project-scope.js';
import { notFound } from '../http/errors.js';
import { IdParams } from '../projects/schema.js';
import { LIMITS } from '../limits.js';
import { z } from 'zod';
import { CohortStore, type CohortRow } from './store.js';
import { cohortMembers, cohortSize } from './membership.js';
import {
  CohortMembersSchema, CohortPreviewSchema, CohortSchema, CreateCohortBody, PreviewBody, ProjectQuery, UpdateCohortBody,
} from './schema.js';

export function cohortRoutes(deps: Deps): RouteSpec[] {
  const store = new CohortStore(deps.db);
  const withSize = async (c: CohortRow) => ({ ...c, size: await cohortSize(deps, c.project_id, c.definition) });
  /** A cohort by id; another organisation's (or a missing one) is 404. */
  const load = async (ctx: Context, id: number) => {
    const cohort = await store.get(id);
    if (!cohort) throw notFound('cohort');
    await loadProjectInScope(deps.projects, authOf(ctx), cohort.project_id).catch(() => { throw notFound('cohort'); });
    return cohort;
  };
  return [
    route({
      method: 'get', path: '/api/cohorts', tag: 'Cohorts', auth: 'api', query: ProjectQuery, response: z.array(CohortSchema),
      summary: "The project's cohorts with their current size",
      handler: async ({ ctx, query }) => {
        const project = await resolveProject(deps.projects, authOf(ctx), query.projectId);
        return Promise.all((await store.list(project.id)).map(withSize));
      },
    }),
    route({
      method: 'post', path: '/api/cohorts', tag: 'Cohorts', auth: 'api', body: CreateCohortBody, query: ProjectQuery, response: CohortSchema, status: 201,
      summary: 'Creates a cohort (member)',
      handler: async ({ ctx, body, query }) => {
        const auth = requireRole(ctx, 'member');
        const project = await resolveProject(deps.projects, auth, body.projectId ?? query.projectId);
        const c = await store.create({ projectId: project.id, createdBy: actorUserId(auth), name: body.name, description: body.description ?? null, definition: body.definition });
        return withSize(c);
      },
    }),
    route({
      method: 'post', path: '/api/cohorts/preview', tag: 'Cohorts', auth: 'api', body: PreviewBody, query: ProjectQuery, response: CohortPreviewSchema,
      summary: 'Size and a sample of the identities a definition selects now',
      handler: async ({ ctx, body, query }) => {
        const project = await resolveProject(deps.projects, authOf(ctx), body.projectId ?? query.projectId);
        const now = Date.now();
        const [count, sample] = await Promise.all([
          cohortSize(deps, project.id, body.definition, now),
          cohortMembers(deps, project.id, body.definition, { limit: LIMITS.cohortPreviewSample, now }),
        ]);
        return { count, sample };
      },
    }),
    route({
      method: 'get', path: '/api/cohorts/{id}', tag: 'Cohorts', auth: 'api', params: IdParams, response: CohortSchema,
      summary: 'One cohort with its current size',
      handler: async ({ ctx, params }) => withSize(await load(ctx, params.id)),
    }),
    route({
      method: 'put', path: '/api/cohorts/{id}', tag: 'Cohorts', auth: 'api', params: IdParams, body: UpdateCohortBody, response: CohortSchema,
      summary: 'Updates a cohort (member)',
      handler: async ({ ctx, params, body }) => {
        const cohort = await load(ctx, params.id);
        requireRole(ctx, 'member');
        await store.update(cohort.id, body);
        return withSize((await store.get(cohort.id))!);
      },
    }),
    route({
      method: 'delete', path: '/api/cohorts/{id}', tag: 'Cohorts', auth: 'api', params: IdParams,
      summary: 'Deletes a cohort (member)',
      handler: async ({ ctx, params }) => {
        const cohort = await load(ctx, params.id);
        requireRole(ctx, 'member');
        await store.delete(cohort.id);
        return { ok: true };
      },
    }),
    route({
      method: 'get', path: '/api/cohorts/{id}/members', tag: 'Cohorts', auth: 'api', params: IdParams, response: CohortMembersSchema,
      summary: "The cohort's members now (canonical ids, sorted)",
      handler: async ({ ctx, params }) => {
        const cohort = await load(ctx, params.id);
        return { members: await cohortMembers(deps, cohort.project_id, cohort.definition) };
      },
    }),
  ];
}
