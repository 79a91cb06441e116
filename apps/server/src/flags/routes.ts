import type { Context } from 'koa';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { refuseNul, route, type RouteSpec } from '../http/route.js';
import { badRequest, notFound } from '../http/errors.js';
import { jsonBody } from '../http/body.js';
import { sendJsonText } from '../http/respond.js';
import { authOf, orgScope, requireRole } from '../auth/context.js';
import { basicCredentials, flagSecretProjectOf, projectTokensOf, type TokenProject } from '../auth/credentials.js';
import { resolveProject } from '../auth/project-scope.js';
import { etagMatches } from './live.js';
import { resourceOf } from '../auth/managed.js';
import { actorOf, type Actor } from '../audit/actor.js';
import { ingestionService } from '../ingestion/accept.js';
import { clientIp } from '../ingestion/geo.js';
import { randomUUID } from 'node:crypto';
import type { FlagsDomain } from './domain.js';
import {
  CreateFlagBody,
  EvaluateBody,
  EvaluateResponse,
  MixpanelFlagsQuery,
  MixpanelFlagsResponse,
  FeatureFlagSchema,
  FlagEventSchema,
  FlagEventsQuery,
  FlagIdParams,
  FlagResultSchema,
  ListFlagsQuery,
  LocalEvaluationResponse,
  PreviewBody,
  UpdateFlagBody,
  type FeatureFlag,
} from './schema.js';

/** Flag management (`/api/flags`) and the runtime endpoints (`/flags/*`); flag secrets are the project's (projects/flag-secret.ts). */
export function flagRoutes(deps: Deps, flags: FlagsDomain): RouteSpec[] {
  const { service } = flags;
  const ingestion = ingestionService(deps);

  /**
   * `/flags/evaluate {exposure: true}`: one `$experiment_started` (`Experiment name` = flag key,
   * `Variant name`) per flag served with a variant, accepted as /track accepts events (limits,
   * quota, buffer), so experiments on those flags count the exposure. The answer does not wait on
   * it failing: the flags are answered and the refusal is logged.
   */
  async function recordExposures(ctx: Context, project: TokenProject, distinctId: string, json: string): Promise<void> {
    const served = Object.entries((JSON.parse(json) as { flags: Record<string, { enabled: boolean; variant: string | null }> }).flags)
      .filter(([, r]) => r.enabled && typeof r.variant === 'string');
    if (served.length === 0) return;
    const payload = served.map(([key, r]) => ({ event: '$experiment_started', properties: { distinct_id: distinctId, 'Experiment name': key, 'Variant name': r.variant } }));
    const ip = clientIp(ctx, deps.config.trustedProxies);
    await ingestion.track({
      payload, acceptedAt: Date.now(), batchId: randomUUID(), geoIp: undefined, clientIp: () => ip,
      projects: async (tokens) => tokens.map(() => project), ownerCheck: async () => async () => false,
    }).catch((err) => deps.log.error('flags: exposure not recorded', { projectId: project.id, err: String(err) }));
  }

  /** A flag by id, reachable by the caller (another organisation's flag is 404). */
  async function loadFlag(ctx: Context, id: number): Promise<FeatureFlag> {
    const orgId = orgScope(authOf(ctx));
    const flag = await service.get(id);
    if (!flag) throw notFound('flag');
    const project = await deps.projects.get(flag.project_id);
    if (!project || (orgId !== null && project.org_id !== orgId)) throw notFound('flag');
    return flag;
  }

  /** A flag the caller may change (member), and who changes it. */
  async function writable(ctx: Context, id: number): Promise<{ flag: FeatureFlag; actor: Actor }> {
    const flag = await loadFlag(ctx, id);
    requireRole(ctx, 'member');
    return { flag, actor: actorOf(ctx) };
  }

  // docs/decisions.md, "Limits": remote evaluation per project token (one per project), definitions per flag secret (one per project).
  const evaluateLimit = (projectId: number) => deps.rateLimits.flagsEvaluate(projectId);
  const localEvaluationLimit = (projectId: number) => deps.rateLimits.flagsLocal(projectId);
  const writeSummary = (what: string) => `${what} (member); 409 managed by resource unless the owning resource asks`;

  return [
    route({
      method: 'get', path: '/api/flags', tag: 'Flags', auth: 'api', query: ListFlagsQuery, response: z.array(FeatureFlagSchema),
      summary: "A project's flags (archived ones only with archived=1; managedBy filters by owning resource)",
      handler: async ({ ctx, query }) =>
        service.list((await resolveProject(deps.projects, authOf(ctx), query.projectId)).id, { includeArchived: query.archived === '1', managedBy: query.managedBy }),
    }),
    route({
      method: 'post', path: '/api/flags', tag: 'Flags', auth: 'api', body: CreateFlagBody, response: FeatureFlagSchema, status: 201,
      summary: 'Creates a flag (member); projectId in the body or the query; X-Tally-Resource (superadmin) makes it managed',
      handler: async ({ ctx, body }) => {
        const auth = requireRole(ctx, 'member');
        const project = await resolveProject(deps.projects, auth, body.projectId ?? ctx.query.projectId);
        return service.create(project.id, body, actorOf(ctx));
      },
    }),
    route({
      method: 'get', path: '/api/flags/{id}', tag: 'Flags', auth: 'api', params: FlagIdParams, response: FeatureFlagSchema,
      summary: 'One flag (archived included)',
      handler: async ({ ctx, params }) => loadFlag(ctx, params.id),
    }),
    route({
      method: 'put', path: '/api/flags/{id}', tag: 'Flags', auth: 'api', params: FlagIdParams, body: UpdateFlagBody, response: FeatureFlagSchema,
      summary: writeSummary('Partial update; key is immutable; new variants re-check the rules'),
      handler: async ({ ctx, params, body }) => {
        const { flag, actor } = await writable(ctx, params.id);
        return service.update(flag, body, actor);
      },
    }),
    route({
      method: 'delete', path: '/api/flags/{id}', tag: 'Flags', auth: 'api', params: FlagIdParams,
      summary: writeSummary('Deletes an archived flag and its audit trail; 409 not archived otherwise'),
      handler: async ({ ctx, params }) => {
        const { flag, actor } = await writable(ctx, params.id);
        await service.delete(flag.id, actor);
        return { ok: true };
      },
    }),
    ...([['archive', true, 'Archives a flag; idempotent, no event when already archived'], ['revive', false, 'Revives an archived flag; idempotent, no event when not archived']] as const).map(([verb, archived, what]) => route({
      method: 'post', path: `/api/flags/{id}/${verb}`, tag: 'Flags', auth: 'api', params: FlagIdParams, response: FeatureFlagSchema, summary: writeSummary(what),
      handler: async ({ ctx, params }) => {
        const { flag, actor } = await writable(ctx, params.id);
        return service.setArchived(flag.id, archived, actor);
      },
    })),
    route({
      method: 'post', path: '/api/flags/{id}/release', tag: 'Flags', auth: 'admin', params: FlagIdParams, response: FeatureFlagSchema,
      summary: 'The owning resource lets go of its flag (superadmin key and its X-Tally-Resource): managed_by becomes null',
      handler: async ({ ctx, params }) => {
        const flag = await loadFlag(ctx, params.id);
        return service.release(flag.id, actorOf(ctx));
      },
    }),
    route({
      method: 'post', path: '/api/flags/{id}/preview', tag: 'Flags', auth: 'api', params: FlagIdParams, body: PreviewBody, rawBody: true, response: FlagResultSchema,
      summary: 'Evaluates one flag for a distinctId with the remote evaluator',
      handler: async ({ ctx, params }) => {
        const flag = await loadFlag(ctx, params.id);
        const raw = jsonBody(ctx) as { distinctId?: unknown } | undefined;
        const distinctId = raw && typeof raw === 'object' ? raw.distinctId : undefined;
        if (typeof distinctId !== 'string' || distinctId === '') throw badRequest('distinctId required');
        const unknown = Object.keys(raw as object).find((k) => k !== 'distinctId');
        if (unknown !== undefined) throw badRequest(`${unknown}: unknown member`, { code: 'validation_failed' });
        refuseNul({ distinctId });
        const live = flag.archived_at === null ? new Map([[flag.key, flag]]) : new Map<string, FeatureFlag>();
        const result = await flags.evaluator.evaluate(flag.project_id, live, distinctId, [flag.key]);
        return result[flag.key];
      },
    }),
    route({
      method: 'get', path: '/api/flags/{id}/events', tag: 'Flags', auth: 'api', params: FlagIdParams, query: FlagEventsQuery, response: z.array(FlagEventSchema),
      summary: "A flag's audit trail, newest first",
      handler: async ({ ctx, params, query }) => service.events((await loadFlag(ctx, params.id)).id, query.limit),
    }),
    route({
      method: 'post', path: '/flags/evaluate', tag: 'Flags', auth: 'projectToken', body: EvaluateBody, rawBody: true, response: EvaluateResponse,
      summary: 'Remote evaluation with the project token (X-Service-Token or body token)',
      handler: async ({ ctx }) => {
        const raw = jsonBody(ctx);
        const body = (raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
        const project = await projectTokensOf(ctx).project(typeof body.token === 'string' ? body.token : undefined);
        evaluateLimit(project.id);
        if (typeof body.distinct_id !== 'string' || body.distinct_id === '') throw badRequest('distinct_id required');
        let keys: string[] | undefined;
        if (body.flag_keys !== undefined && body.flag_keys !== null) {
          if (!Array.isArray(body.flag_keys) || body.flag_keys.some((k) => typeof k !== 'string')) throw badRequest('flag_keys: must be an array of strings');
          keys = body.flag_keys as string[];
        }
        if (body.exposure !== undefined && typeof body.exposure !== 'boolean') throw badRequest('exposure: must be a boolean');
        refuseNul({ distinct_id: body.distinct_id, flag_keys: keys });
        const cached = flags.live.get(project.id);
        const live = cached instanceof Promise ? await cached : cached;
        // JSON text from the compiled flags (plan.ts): the bytes JSON.stringify gives for
        // {flags: evaluator.evaluate(...)}, without building that object graph
        const json = flags.evaluator.evaluateJson(project.id, live.plan, body.distinct_id, keys);
        const text = typeof json === 'string' ? json : await json;
        if (body.exposure === true) await recordExposures(ctx, project, body.distinct_id, text);
        sendJsonText(ctx, text);
        return undefined;
      },
    }),
    route({
      method: 'get', path: '/flags', tag: 'Flags', auth: 'projectToken', query: MixpanelFlagsQuery, response: MixpanelFlagsResponse,
      summary: "Mixpanel's flags protocol (mixpanel-browser's `mixpanel.flags`): the flags enabled for context.distinct_id, token in the query or as the Basic user name",
      handler: async ({ ctx, query }) => {
        const project = await projectTokensOf(ctx).project(query.token ?? basicCredentials(ctx)?.user);
        evaluateLimit(project.id);
        const live = await flags.live.get(project.id);
        const results = await flags.evaluator.evaluate(project.id, live.byKey, query.context.distinct_id);
        // Mixpanel lists only the flags served to this identity; the SDK falls back for the others.
        const out: Record<string, { variant_key: string; variant_value: unknown }> = {};
        for (const [key, r] of Object.entries(results)) {
          if (!r.enabled) continue;
          out[key] = r.variant === null
            ? { variant_key: 'on', variant_value: r.payload ?? true }
            : { variant_key: r.variant, variant_value: r.payload ?? r.variant };
        }
        return { flags: out };
      },
    }),
    route({
      method: 'get', path: '/flags/local-evaluation', tag: 'Flags', auth: 'flagSecret', response: LocalEvaluationResponse,
      summary: 'Non-archived flag definitions for in-process evaluation (flag secret as Bearer); ETag / 304',
      handler: async ({ ctx }) => {
        const project = flagSecretProjectOf(ctx);
        await localEvaluationLimit(project.id);
        const live = await flags.live.get(project.id);
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
