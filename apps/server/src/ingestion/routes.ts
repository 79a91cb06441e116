import type { Context } from 'koa';
import { createHash } from 'node:crypto';
import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { projectTokensOf } from '../auth/credentials.js';
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

  async function receive(ctx: Context, accept: (arrival: Arrival) => Promise<Record<string, unknown>>) {
    const acceptedAt = Date.now();
    const req = decodeRequest(ctx);
    const body = await accept({
      payload: req.payload,
      acceptedAt,
      batchId: requestId(ctx),
      geoIp: req.useIp ? clientIp(ctx, deps.config.trustedProxies) : undefined,
      clientIp: () => clientIp(ctx, deps.config.trustedProxies),
      projects: (tokens) => projectTokensOf(ctx).projects(tokens),
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
    );
  }
  return specs;
}
