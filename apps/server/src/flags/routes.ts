import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { badRequest, notFound } from '../http/errors.js';
import { jsonBody } from '../http/body.js';
import { enforceRateLimits } from '../http/rate-limit.js';
import { actorUserId, authOf, orgScope, requireRole, type AuthContext } from '../auth/context.js';
import { flagSecretProjectOf, projectTokensOf, sha256Hex } from '../auth/credentials.js';
import { loadProjectInScope, resolveProject } from '../auth/project-scope.js';
import { IdParams } from '../projects/schema.js';
import type { Project } from '../projects/store.js';
import { FlagStore, type Actor } from './store.js';
import { RemoteEvaluator } from './evaluator.js';
import type { CohortChecker } from './cohorts.js';
import {
  CreateFlagBody,
  EvaluateBody,
  EvaluateResponse,
  FeatureFlagSchema,
  FlagEventSchema,
  FlagEventsQuery,
  FlagIdParams,
  FlagResultSchema,
  FlagSecretResponse,
  ListFlagsQuery,
  LocalEvaluationResponse,
  PreviewBody,
  UpdateFlagBody,
  flagConsistencyError,
  type FeatureFlag,
  type FlagRule,
} from './schema.js';

const actorOf = (auth: AuthContext): Actor => ({ userId: actorUserId(auth), mcpTokenId: null });

/** Every rule's cohort must be a cohort of the flag's project (else 400 naming the rule). */
async function checkCohorts(cohorts: CohortChecker, projectId: number, rules: FlagRule[] | undefined): Promise<void> {
  if (!rules) return;
  for (let i = 0; i < rules.length; i++) {
    const id = rules[i].cohortId;
    if (id === undefined) continue;
    if ((await cohorts.projectOf(id)) !== projectId) throw badRequest(`rules.${i}.cohortId: cohort ${id} is not a cohort of this project`);
  }
}

/** `If-None-Match` holds the given strong ETag (or `*`). */
function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((t) => {
    const v = t.trim();
    return v === '*' || v === etag || v === `W/${etag}`;
  });
}

export function flagRoutes(deps: Deps, cohorts: CohortChecker): RouteSpec[] {
  const store = new FlagStore(deps.db);
  const evaluator = new RemoteEvaluator(deps.db, cohorts);

  /** A flag by id, reachable by the caller (another organisation's flag is 404), with its project. */
  async function loadFlag(ctx: Context, id: number): Promise<{ flag: FeatureFlag; project: Project; auth: AuthContext }> {
    const auth = authOf(ctx);
    const orgId = orgScope(auth);
    const flag = await store.get(id);
    if (!flag) throw notFound('flag');
    const project = await deps.projects.get(flag.project_id);
    if (!project || (orgId !== null && project.org_id !== orgId)) throw notFound('flag');
    return { flag, project, auth };
  }

  const perProjectLimit = (projectId: number) => enforceRateLimits([[deps.rateLimits.perProject, 'p:' + projectId]]);

  return [
    route({
      method: 'get', path: '/api/flags', tag: 'Flags', auth: 'api', query: ListFlagsQuery, response: z.array(FeatureFlagSchema),
      summary: "A project's flags (archived ones only with archived=1)",
      handler: async ({ ctx, query }) => {
        const project = await resolveProject(deps.projects, authOf(ctx), query.projectId);
        return store.list(project.id, query.archived === '1');
      },
    }),
    route({
      method: 'post', path: '/api/flags', tag: 'Flags', auth: 'api', body: CreateFlagBody, response: FeatureFlagSchema, status: 201,
      summary: 'Creates a flag (member); projectId in the body or the query',
      handler: async ({ ctx, body }) => {
        const auth = requireRole(ctx, 'member');
        const project = await resolveProject(deps.projects, auth, body.projectId ?? ctx.query.projectId);
        const input = {
          key: body.key,
          name: body.name,
          description: body.description ?? null,
          active: body.active ?? true,
          type: body.type ?? 'release',
          variants: body.variants ?? [],
          rules: body.rules ?? [],
        };
        const problem = flagConsistencyError(input);
        if (problem) throw badRequest(problem);
        await checkCohorts(cohorts, project.id, input.rules);
        return store.create(project.id, input, actorOf(auth));
      },
    }),
    route({
      method: 'get', path: '/api/flags/{id}', tag: 'Flags', auth: 'api', params: FlagIdParams, response: FeatureFlagSchema,
      summary: 'One flag (archived included)',
      handler: async ({ ctx, params }) => (await loadFlag(ctx, params.id)).flag,
    }),
    route({
      method: 'put', path: '/api/flags/{id}', tag: 'Flags', auth: 'api', params: FlagIdParams, body: UpdateFlagBody, response: FeatureFlagSchema,
      summary: 'Partial update (member); key is immutable; new variants re-check the rules',
      handler: async ({ ctx, params, body }) => {
        const { flag, auth } = await loadFlag(ctx, params.id);
        requireRole(ctx, 'member');
        if (body.key !== undefined && body.key !== flag.key) throw badRequest(`key: is immutable (cannot change "${flag.key}" to "${body.key}")`);
        await checkCohorts(cohorts, flag.project_id, body.rules);
        return store.update(flag.id, {
          name: body.name,
          description: body.description,
          active: body.active,
          type: body.type,
          variants: body.variants,
          rules: body.rules,
        }, actorOf(auth));
      },
    }),
    route({
      method: 'delete', path: '/api/flags/{id}', tag: 'Flags', auth: 'api', params: FlagIdParams,
      summary: 'Deletes an archived flag and its audit trail (member); 409 not archived otherwise',
      handler: async ({ ctx, params }) => {
        const { flag } = await loadFlag(ctx, params.id);
        requireRole(ctx, 'member');
        await store.delete(flag.id);
        return { ok: true };
      },
    }),
    route({
      method: 'post', path: '/api/flags/{id}/archive', tag: 'Flags', auth: 'api', params: FlagIdParams, response: FeatureFlagSchema,
      summary: 'Archives a flag (member); idempotent, no event when already archived',
      handler: async ({ ctx, params }) => {
        const { flag, auth } = await loadFlag(ctx, params.id);
        requireRole(ctx, 'member');
        return store.setArchived(flag.id, true, actorOf(auth));
      },
    }),
    route({
      method: 'post', path: '/api/flags/{id}/revive', tag: 'Flags', auth: 'api', params: FlagIdParams, response: FeatureFlagSchema,
      summary: 'Revives an archived flag (member); idempotent, no event when not archived',
      handler: async ({ ctx, params }) => {
        const { flag, auth } = await loadFlag(ctx, params.id);
        requireRole(ctx, 'member');
        return store.setArchived(flag.id, false, actorOf(auth));
      },
    }),
    route({
      method: 'post', path: '/api/flags/{id}/preview', tag: 'Flags', auth: 'api', params: FlagIdParams, body: PreviewBody, rawBody: true, response: FlagResultSchema,
      summary: 'Evaluates one flag for a distinctId with the remote evaluator',
      handler: async ({ ctx, params }) => {
        const { flag } = await loadFlag(ctx, params.id);
        const raw = jsonBody(ctx) as { distinctId?: unknown } | undefined;
        const distinctId = raw && typeof raw === 'object' ? raw.distinctId : undefined;
        if (typeof distinctId !== 'string' || distinctId === '') throw badRequest('distinctId required');
        const live = flag.archived_at === null ? new Map([[flag.key, flag]]) : new Map<string, FeatureFlag>();
        const result = await evaluator.evaluate(flag.project_id, live, distinctId, [flag.key]);
        return result[flag.key];
      },
    }),
    route({
      method: 'get', path: '/api/flags/{id}/events', tag: 'Flags', auth: 'api', params: FlagIdParams, query: FlagEventsQuery, response: z.array(FlagEventSchema),
      summary: "A flag's audit trail, newest first",
      handler: async ({ ctx, params, query }) => {
        const { flag } = await loadFlag(ctx, params.id);
        return store.events(flag.id, query.limit);
      },
    }),
    route({
      method: 'post', path: '/api/projects/{id}/flag-secret', tag: 'Flags', auth: 'api', params: IdParams, response: FlagSecretResponse,
      summary: 'Mints or rotates the project flag secret (owner); returned once, stored as a SHA-256 hash',
      handler: async ({ ctx, params }) => {
        const project = await loadProjectInScope(deps.projects, authOf(ctx), params.id);
        requireRole(ctx, 'owner');
        const secret = randomUUID();
        await deps.projects.setFlagSecretHash(project.id, sha256Hex(secret));
        return { secret };
      },
    }),
    route({
      method: 'delete', path: '/api/projects/{id}/flag-secret', tag: 'Flags', auth: 'api', params: IdParams,
      summary: 'Revokes the project flag secret (owner); idempotent',
      handler: async ({ ctx, params }) => {
        const project = await loadProjectInScope(deps.projects, authOf(ctx), params.id);
        requireRole(ctx, 'owner');
        await deps.projects.setFlagSecretHash(project.id, null);
        return { ok: true };
      },
    }),
    route({
      method: 'post', path: '/flags/evaluate', tag: 'Flags', auth: 'projectToken', body: EvaluateBody, rawBody: true, response: EvaluateResponse,
      summary: 'Remote evaluation with the project token (X-Service-Token or body token)',
      handler: async ({ ctx }) => {
        const raw = jsonBody(ctx);
        const body = (raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
        const project = await projectTokensOf(ctx).project(typeof body.token === 'string' ? body.token : undefined);
        perProjectLimit(project.id);
        if (typeof body.distinct_id !== 'string' || body.distinct_id === '') throw badRequest('distinct_id required');
        let keys: string[] | undefined;
        if (body.flag_keys !== undefined && body.flag_keys !== null) {
          if (!Array.isArray(body.flag_keys) || body.flag_keys.some((k) => typeof k !== 'string')) throw badRequest('flag_keys: must be an array of strings');
          keys = body.flag_keys as string[];
        }
        const live = await store.liveFlags(project.id);
        return { flags: await evaluator.evaluate(project.id, live.byKey, body.distinct_id, keys) };
      },
    }),
    route({
      method: 'get', path: '/flags/local-evaluation', tag: 'Flags', auth: 'flagSecret', response: LocalEvaluationResponse,
      summary: 'Non-archived flag definitions for in-process evaluation (flag secret as Bearer); ETag / 304',
      handler: async ({ ctx }) => {
        const project = flagSecretProjectOf(ctx);
        perProjectLimit(project.id);
        const live = await store.liveFlags(project.id);
        ctx.set('ETag', live.etag);
        ctx.set('Cache-Control', 'private, no-cache');
        if (etagMatches(ctx.get('if-none-match') || undefined, live.etag)) {
          ctx.status = 304;
          return undefined;
        }
        ctx.status = 200;
        ctx.type = 'application/json';
        ctx.body = live.definitionsJson;
        return undefined;
      },
    }),
  ];
}
