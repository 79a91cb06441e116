import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { actorUserId, authOf, requireRole } from '../auth/context.js';
import { loadProjectInScope, resolveProject } from '../auth/project-scope.js';
import { notFound } from '../http/errors.js';
import { IdParams } from '../projects/schema.js';
import { LIMITS } from '../limits.js';
import { z } from 'zod';
import type { DefinitionRow, DefinitionStore } from '../definitions/store.js';
import { scopedLoader } from '../definitions/load.js';
import type { CohortMembership } from './membership.js';
import {
  CohortMembersSchema, CohortPreviewSchema, CohortSchema, CreateCohortBody, PreviewBody, ProjectQuery, UpdateCohortBody,
  type CohortDefinition,
} from './schema.js';

/** What the cohort routes are built from (once, at start-up). */
export interface CohortDomain {
  store: DefinitionStore<CohortDefinition>;
  membership: CohortMembership;
}

export function cohortRoutes(deps: Pick<Deps, 'projects'>, domain: CohortDomain): RouteSpec[] {
  const { store, membership } = domain;
  const withSize = async (c: DefinitionRow<CohortDefinition>) => ({ ...c, size: await membership.size(c.project_id, c.definition) });
  /** A cohort by id; another organisation's (or a missing one) is 404. */
  const load = scopedLoader(deps.projects, store, 'cohort');
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
          membership.size(project.id, body.definition, now),
          membership.members(project.id, body.definition, { limit: LIMITS.cohortPreviewSample, now }),
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
        return { members: await membership.members(cohort.project_id, cohort.definition) };
      },
    }),
  ];
}
