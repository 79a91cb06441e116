import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf } from '../auth/context.js';
import { resolveProject } from '../auth/project-scope.js';
import { IdParams } from '../projects/schema.js';
import { LIMITS } from '../limits.js';
import type { DefinitionRow } from '../definitions/store.js';
import type { DefinitionService } from '../definitions/service.js';
import { scopedLoader } from '../definitions/load.js';
import { definitionCrudRoutes, nameAndDescription } from '../definitions/crud.js';
import type { CohortMembership } from './membership.js';
import type { ProjectReads } from '../query/executor.js';
import {
  CohortMembersSchema, CohortPreviewSchema, CohortSchema, CreateCohortBody, PreviewBody, ProjectQuery, UpdateCohortBody,
  type CohortDefinition,
} from './schema.js';

/** What the cohort routes are built from (once, at start-up). */
export interface CohortDomain {
  /** Writes with their audit rows; reads through `service.store`. */
  service: DefinitionService<CohortDefinition>;
  membership: CohortMembership;
  /**
   * Where sizes, previews and member lists run: the query executor, so they take a slot of the
   * organisation like an analysis (they scan the project's events as much). Remote flag evaluation
   * asks `membership` directly: it must not wait behind the organisation's queries.
   */
  reads: ProjectReads;
}

export function cohortRoutes(deps: Pick<Deps, 'projects'>, domain: CohortDomain): RouteSpec[] {
  const { service, membership, reads } = domain;
  const { store } = service;
  const read = <T>(projectId: number, work: (m: CohortMembership) => Promise<T>) => reads.read(projectId, (events) => work(membership.on(events)));
  const withSize = async (c: DefinitionRow<CohortDefinition>) => ({ ...c, size: await read(c.project_id, (m) => m.size(c.project_id, c.definition)) });
  /** A cohort by id; another organisation's (or a missing one) is 404. */
  const load = scopedLoader(deps.projects, store, 'cohort');
  return [
    ...definitionCrudRoutes(deps.projects, {
      tag: 'Cohorts', base: '/api/cohorts', what: 'cohort', service, schema: CohortSchema, createBody: CreateCohortBody, updateBody: UpdateCohortBody,
      summaries: {
        list: "The project's cohorts with their current size", create: 'Creates a cohort (member)', get: 'One cohort with its current size',
        update: 'Updates a cohort (member)', delete: 'Deletes a cohort (member)',
      },
      split: (b) => ({ ...nameAndDescription(b), definition: b.definition as CohortDefinition | undefined }),
      present: withSize,
    }),
    route({
      method: 'post', path: '/api/cohorts/preview', tag: 'Cohorts', auth: 'api', body: PreviewBody, query: ProjectQuery, response: CohortPreviewSchema,
      summary: 'Size and a sample of the identities a definition selects now',
      handler: async ({ ctx, body, query }) => {
        const project = await resolveProject(deps.projects, authOf(ctx), body.projectId ?? query.projectId);
        const now = Date.now();
        const [count, sample] = await read(project.id, (m) => Promise.all([
          m.size(project.id, body.definition, now),
          m.members(project.id, body.definition, { limit: LIMITS.cohortPreviewSample, now }),
        ]));
        return { count, sample };
      },
    }),
    route({
      method: 'get', path: '/api/cohorts/{id}/members', tag: 'Cohorts', auth: 'api', params: IdParams, response: CohortMembersSchema,
      summary: "The cohort's members now (canonical ids, sorted)",
      handler: async ({ ctx, params }) => {
        const cohort = await load(ctx, params.id);
        return { members: await read(cohort.project_id, (m) => m.members(cohort.project_id, cohort.definition)) };
      },
    }),
  ];
}
