import type { Context } from 'koa';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf, requireRole } from '../auth/context.js';
import { actorOf } from '../audit/actor.js';
import { requireResource } from '../auth/managed.js';
import { resolveProject, rowInScope } from '../auth/project-scope.js';
import { IdParams } from '../projects/schema.js';
import type { Services } from '../services.js';
import type { Experiment } from './schema.js';
import {
  CreateExperimentBody, ExperimentAnalysisSchema, ExperimentListQuery, ExperimentResultsSchema, ExperimentSchema, ResultsQuery, UpdateExperimentBody,
} from './schema.js';
import { analysisOf, experimentResults, type ResultsOverrides } from './results.js';

/**
 * Experiments: every role reads and reads results, member and above write (as for flags);
 * another organisation's id is 404, its projectId 403.
 */
export function experimentRoutes(deps: Deps, services: Pick<Services, 'executor' | 'experiments' | 'analyses' | 'properties'>): RouteSpec[] {
  const { experiments, executor } = services;
  /**
   * The property a `sum` metric adds up is read for every event of the metric, spread over the
   * whole table: from the key/value lists that read is most of an experiment's results on DuckDB
   * (docs/performance.md#experiments). So the saved experiment's sum properties are materialised
   * in the background (query/property-materializer.ts), charged to its project's organisation:
   * the answer does not wait, and results computed before a column is filled read the lists.
   */
  const saved = (e: Experiment): Experiment => {
    const keys = e.metrics.flatMap((m) => (m.kind === 'sum' && m.property !== undefined ? [m.property] : []));
    if (keys.length > 0) {
      void deps.projects.get(e.projectId).then(
        (p) => services.properties.request(p?.org_id ?? null, keys, 'experiment'),
        (err) => deps.log.error('experiments: materialising sum properties failed', { err: String(err) }),
      );
    }
    return e;
  };
  const inScope = rowInScope(deps.projects, 'experiment', async (id) => {
    const e = await experiments.get(id);
    return e && { ...e, project_id: e.projectId };
  });
  const load = async (ctx: Context, id: number): Promise<Experiment> => {
    const { project_id: _p, ...e } = await inScope(authOf(ctx), id);
    return e;
  };
  /** Through the query executor: the caller's query rate limit, then a slot of the organisation, cached. */
  const results = async (ctx: Context, e: Experiment, overrides: ResultsOverrides) => {
    await executor.admit(authOf(ctx), e.projectId);
    const project = await executor.scopeOf(e.projectId);
    return experimentResults({ executor, contexts: services.analyses.contexts, guard: deps.config.queryGuard }, project, e, await experiments.flagOf(e), overrides);
  };
  return [
    route({
      method: 'get', path: '/api/experiments', tag: 'Experiments', auth: 'api', query: ExperimentListQuery, response: z.array(ExperimentSchema),
      summary: "The project's experiments",
      handler: async ({ ctx, query }) => experiments.list((await resolveProject(deps.projects, authOf(ctx), query.projectId)).id),
    }),
    route({
      method: 'post', path: '/api/experiments', tag: 'Experiments', auth: 'api', body: CreateExperimentBody, response: ExperimentSchema, status: 201,
      summary: "Creates an experiment on one of the project's flags with variants (member)",
      handler: async ({ ctx, body }) => {
        const auth = requireRole(ctx, 'member');
        const { projectId, ...rest } = body;
        const project = await resolveProject(deps.projects, auth, projectId);
        return saved(await experiments.create(actorOf(ctx), project.id, rest));
      },
    }),
    route({
      method: 'get', path: '/api/experiments/{id}', tag: 'Experiments', auth: 'api', params: IdParams, response: ExperimentSchema,
      summary: 'One experiment',
      handler: async ({ ctx, params }) => load(ctx, params.id),
    }),
    route({
      method: 'put', path: '/api/experiments/{id}', tag: 'Experiments', auth: 'api', params: IdParams, body: UpdateExperimentBody, response: ExperimentSchema,
      summary: 'Changes an experiment; the result is checked against its flag as a whole (member)',
      handler: async ({ ctx, params, body }) => {
        const e = await load(ctx, params.id);
        requireRole(ctx, 'member');
        return saved(await experiments.update(actorOf(ctx), e, body));
      },
    }),
    route({
      method: 'delete', path: '/api/experiments/{id}', tag: 'Experiments', auth: 'api', params: IdParams,
      summary: 'Deletes an experiment (member); its events stay',
      handler: async ({ ctx, params }) => {
        const e = await load(ctx, params.id);
        requireRole(ctx, 'member');
        await experiments.delete(actorOf(ctx), e.id);
        return { ok: true };
      },
    }),
    route({
      method: 'post', path: '/api/experiments/{id}/stop', tag: 'Experiments', auth: 'api', params: IdParams, response: ExperimentSchema,
      summary: 'Stops an experiment: its end becomes now unless earlier (member); stopping it again changes nothing',
      handler: async ({ ctx, params }) => {
        const e = await load(ctx, params.id);
        requireRole(ctx, 'member');
        return experiments.stop(actorOf(ctx), e.id);
      },
    }),
    route({
      method: 'post', path: '/api/experiments/{id}/release', tag: 'Experiments', auth: 'admin', params: IdParams, response: ExperimentSchema,
      summary: 'The managing resource lets go of its experiment (operator or superadmin key and its X-Tally-Resource): managedBy becomes null',
      handler: async ({ ctx, params }) => {
        const e = await load(ctx, params.id);
        requireResource(ctx);
        return experiments.release(actorOf(ctx), e.id);
      },
    }),
    route({
      method: 'get', path: '/api/experiments/{id}/results', tag: 'Experiments', auth: 'api', params: IdParams, query: ResultsQuery, response: ExperimentResultsSchema,
      summary: "Per-variant exposures, SRM and each metric's statistics; `engine`, `sequential`, `correction` recompute with other settings (any role)",
      handler: async ({ ctx, params, query }) => results(ctx, await load(ctx, params.id), query),
    }),
    route({
      method: 'get', path: '/api/experiments/{id}/analysis', tag: 'Experiments', auth: 'api', params: IdParams, response: ExperimentAnalysisSchema,
      summary: "The verdict for a canary gate (Argo Rollouts' web provider, `successCondition: result.ok`): ok unless the split is broken or a variant is significantly worse on the primary metric (any role)",
      handler: async ({ ctx, params }) => {
        const e = await load(ctx, params.id);
        return analysisOf(await results(ctx, e, {}), e.primaryMetricId);
      },
    }),
  ];
}
