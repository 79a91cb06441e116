import type { Context } from 'koa';
import { createHash } from 'node:crypto';
import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { basicCredentials, projectTokensOf, type TokenProject } from '../auth/credentials.js';
import { roleAtLeast } from '../auth/roles.js';
import { AppError, forbidden, unauthorized } from '../http/errors.js';
import { ingestionService, type Arrival } from './accept.js';
import { decodeRequest } from './decode.js';
import { clientIp } from './geo.js';
import { AliasBody, AliasResponse, EngageBody, EngageResponse, TrackBody, TrackResponse } from './schema.js';

/**
 * The ingestion endpoints (`/track`, `/engage`, `/alias`, also under `/v/0.14`): each decodes the
 * request (JSON or Mixpanel's encodings), hands it to acceptance (accept.ts) and shapes the reply.
 */
export function ingestionRoutes(deps: Deps): RouteSpec[] {
  const service = ingestionService(deps);

  /**
   * Batch id derived from the request (path, query, project token header, body), so a client
   * retry of the same request gets the same buffer message id (and the same generated
   * `$insert_id`s) and JetStream stores it once within its duplicate window.
   */
  function requestId(ctx: Context): string {
    const h = createHash('sha256');
    for (const part of [ctx.path, ctx.querystring, ctx.get('x-service-token')]) h.update(part).update('\0');
    if (ctx.state.rawBody) h.update(ctx.state.rawBody);
    return h.digest('base64url').slice(0, 32);
  }

  /**
   * /import: Mixpanel's historical-events route. HTTP Basic whose user name is a machine-access
   * token of member role or more (or the superadmin key), empty password; each event's project
   * (from its token, as on /track) must belong to that token's organisation. /track already takes
   * events of any age, so the events themselves are accepted exactly as there.
   */
  async function importProjects(ctx: Context): Promise<(tokens: Array<string | undefined>) => Promise<TokenProject[]>> {
    const basic = basicCredentials(ctx);
    if (!basic || !basic.user || basic.password !== '') throw unauthorized();
    const auth = await deps.auth.resolve(basic.user).catch(() => undefined);
    if (!auth || auth.kind === 'user') throw unauthorized();
    if (auth.kind === 'operator') throw forbidden(); // the operator key imports no events
    if (auth.kind === 'token' && !roleAtLeast(auth.role, 'member')) throw forbidden();
    const resolver = deps.auth.credentials.forRequest(ctx);
    return async (tokens) => {
      const projects = await resolver.projects(tokens);
      if (auth.kind === 'token' && projects.some((p) => p.org_id !== auth.orgId)) {
        throw new AppError(403, 'forbidden', { message: "an event's project token belongs to another organisation than the credential" });
      }
      return projects;
    };
  }

  async function receive(ctx: Context, accept: (arrival: Arrival) => Promise<Record<string, unknown>>, projects?: Arrival['projects']) {
    const acceptedAt = Date.now();
    const req = decodeRequest(ctx);
    const body = await accept({
      payload: req.payload,
      acceptedAt,
      batchId: requestId(ctx),
      geoIp: req.useIp ? clientIp(ctx, deps.config.trustedProxies) : undefined,
      clientIp: () => clientIp(ctx, deps.config.trustedProxies),
      projects: projects ?? ((tokens) => projectTokensOf(ctx).projects(tokens)),
      ownerCheck: () => deps.auth.ownerCheck(ctx),
    });
    // Mixpanel-encoded requests without `verbose=1` get Mixpanel's `1` text answer.
    if (req.mixpanel && !req.verbose) return body.status === 1 ? '1' : '0';
    return req.mixpanel ? { error: null, ...body } : body;
  }

  const specs: RouteSpec[] = [];
  for (const prefix of ['', '/v/0.14']) {
    specs.push(
      route({
        method: 'post', path: `${prefix}/track`, tag: 'Ingestion', auth: 'projectToken', rawBody: true, body: TrackBody, response: TrackResponse,
        summary: 'Tracks one event or a batch of at most 500 (JSON, or Mixpanel form encoding with data=)',
        handler: ({ ctx }) => receive(ctx, service.track),
      }),
      route({
        method: 'get', path: `${prefix}/track`, tag: 'Ingestion', auth: 'projectToken', rawBody: true, response: TrackResponse,
        summary: 'Tracks events sent Mixpanel-style in the query string (data=base64 JSON)',
        handler: ({ ctx }) => receive(ctx, service.track),
      }),
      route({
        method: 'post', path: `${prefix}/engage`, tag: 'Ingestion', auth: 'projectToken', rawBody: true, body: EngageBody, response: EngageResponse,
        summary: 'Applies profile updates ($set, $set_once, $add; $unset and $delete with an owner or superadmin credential)',
        handler: ({ ctx }) => receive(ctx, service.engage),
      }),
      route({
        method: 'get', path: `${prefix}/engage`, tag: 'Ingestion', auth: 'projectToken', rawBody: true, response: EngageResponse,
        summary: 'Profile updates sent Mixpanel-style in the query string (data=base64 JSON)',
        handler: ({ ctx }) => receive(ctx, service.engage),
      }),
      route({
        method: 'post', path: `${prefix}/alias`, tag: 'Ingestion', auth: 'projectToken', rawBody: true, body: AliasBody, response: AliasResponse,
        summary: 'Links alias into the identity cluster of distinct_id (some links are silently refused)',
        handler: ({ ctx }) => receive(ctx, service.alias),
      }),
      route({
        method: 'post', path: `${prefix}/import`, tag: 'Ingestion', auth: 'none', envelope: 'status', rawBody: true, body: TrackBody, response: TrackResponse,
        summary: "Imports events of any age (/track's bodies); HTTP Basic `<machine-access token of member role or more, or the superadmin key>:`",
        handler: async ({ ctx }) => receive(ctx, service.track, await importProjects(ctx)),
      }),
      route({
        method: 'get', path: `${prefix}/import`, tag: 'Ingestion', auth: 'none', envelope: 'status', rawBody: true, response: TrackResponse,
        summary: 'Imports events sent Mixpanel-style in the query string (data=base64 JSON); HTTP Basic as on POST',
        handler: async ({ ctx }) => receive(ctx, service.track, await importProjects(ctx)),
      }),
    );
  }
  return specs;
}
