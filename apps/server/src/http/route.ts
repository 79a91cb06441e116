import type Koa from 'koa';
import type { Context } from 'koa';
import Router from '@koa/router';
import { z, type ZodType } from 'zod';
import './zod-openapi.js';
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { badRequest, notFound } from './errors.js';
import { jsonBody } from './body.js';
import { isRowId, nulPath } from './columns.js';


/**
 * One declaration per route: its method, path, schemas and handler. The same list mounts the Koa
 * router (with validation) and produces the OpenAPI 3.1 document, so the two cannot drift.
 */
export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface RouteSpec<B = any, Q = any, P = any> {
  method: Method;
  /** OpenAPI-style path, e.g. `/api/projects/{id}`. */
  path: string;
  tag: string;
  summary: string;
  /** Which credential the route wants; resolved before the handler runs (auth/authenticate.ts). */
  auth: AuthKind;
  /**
   * Error body shape: `status` is `{status: 0, error}` (the SDK-facing routes), `error` is
   * `{error, code?, message?, resolution?}`. Default: `status` for `projectToken` and `flagSecret`.
   */
  envelope?: Envelope;
  body?: ZodType<B>;
  query?: ZodType<Q>;
  params?: ZodType<P>;
  response?: ZodType;
  /** Success status (default 200). */
  status?: number;
  /** The handler reads `ctx.state.rawBody` itself (ingestion: form encoding, its own envelopes). */
  rawBody?: boolean;
  handler: (input: { ctx: Context; body: B; query: Q; params: P }) => Promise<unknown> | unknown;
}

/**
 * `none`: public. `api`: superadmin key, machine-access token, or ID token of a user with an
 * organisation. `account`: like `api` but also users without an organisation. `admin`: superadmin
 * key only. `projectToken`: the project token (header or per record); the handler gets a resolver
 * (`projectTokensOf(ctx)`), never the raw header. `flagSecret`: the flag secret as Bearer; the
 * handler gets the project (`flagSecretProjectOf(ctx)`).
 */
export type AuthKind = 'none' | 'api' | 'account' | 'admin' | 'projectToken' | 'flagSecret';
export type Envelope = 'status' | 'error';

export const envelopeOf = (r: Pick<RouteSpec, 'auth' | 'envelope'>): Envelope =>
  r.envelope ?? (r.auth === 'projectToken' || r.auth === 'flagSecret' ? 'status' : 'error');

export interface PathInfo {
  methods: Method[];
  auth: AuthKind[];
  envelopes: Envelope[];
}

/** Paths whose PathInfo `pathTable` remembers, at most (then it forgets them all and starts over). */
const PATH_TABLE_MEMO = 1000;

/**
 * What the declarations say about a request path, whatever its method: the methods served, the
 * auth kinds and envelopes of its routes (so a 405, a 413 or a preflight raised before routing
 * answers in the route's own terms). Unknown paths give undefined. Answers are remembered per path
 * (up to PATH_TABLE_MEMO paths): testing every route's pattern on each request cost about as much
 * CPU as the routing itself on the flags hot path. The answers are shared: read them, never change them.
 */
export function pathTable(routes: RouteSpec[]): (path: string) => PathInfo | undefined {
  const lookup = scanPathTable(routes);
  const memo = new Map<string, PathInfo | undefined>();
  return (path) => {
    let info = memo.get(path);
    if (info === undefined && !memo.has(path)) {
      info = lookup(path);
      if (memo.size >= PATH_TABLE_MEMO) memo.clear();
      memo.set(path, info);
    }
    return info;
  };
}

function scanPathTable(routes: RouteSpec[]): (path: string) => PathInfo | undefined {
  const byPath = new Map<string, { pattern: RegExp; routes: RouteSpec[] }>();
  for (const r of routes) {
    const entry = byPath.get(r.path) ?? { pattern: new RegExp('^' + r.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{(\w+)\}/g, '[^/]+') + '/?$'), routes: [] };
    entry.routes.push(r);
    byPath.set(r.path, entry);
  }
  const entries = [...byPath.values()];
  return (path) => {
    const matched = entries.filter((e) => e.pattern.test(path)).flatMap((e) => e.routes);
    if (!matched.length) return undefined;
    const distinct = <T>(xs: T[]) => [...new Set(xs)];
    return {
      methods: distinct(matched.map((r) => r.method)),
      auth: distinct(matched.map((r) => r.auth)),
      envelopes: distinct(matched.map(envelopeOf)),
    };
  };
}

/** The envelope for a request path: `status` when any of its routes declares it, else `error`. */
export function envelopeByPath(routes: RouteSpec[]): (path: string) => Envelope {
  const lookup = pathTable(routes);
  return (path) => (lookup(path)?.envelopes.includes('status') ? 'status' : 'error');
}

export function route<B = undefined, Q = undefined, P = undefined>(spec: RouteSpec<B, Q, P>): RouteSpec<B, Q, P> {
  return spec;
}

/** Formats a zod error as `path: message` (first issue), the form the API's flag messages use. */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message))
    .join('; ');
}

/** 400 naming the field when a string of validated input holds a NUL character (see `nulPath`). */
export function refuseNul(value: unknown): void {
  const at = nulPath(value);
  if (at !== undefined) throw badRequest(`${at || 'value'}: must not contain NUL characters`, { code: 'validation_failed' });
}

export function parseOr400<T>(schema: ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (!result.success) {
    const first = result.error.issues[0];
    const message = first.path.length ? `${first.path.join('.')}: ${first.message}` : first.message;
    throw badRequest(message, { code: 'validation_failed', message: describeZodError(result.error) });
  }
  refuseNul(result.data);
  return result.data;
}

const koaPath = (p: string) => p.replace(/\{(\w+)\}/g, ':$1');

/**
 * Mounts every route on the router and returns a middleware, to run before the router, that
 * answers the exact path of a route without parameters from a map: @koa/router tests every
 * route's pattern on each request (about 0.025 CPU ms of a remote flag evaluation, a sixth of it).
 * A path an earlier route with parameters also matches is left to the router, which would run
 * that route; anything else (HEAD, other spellings of a path) goes on to the router too.
 */
export function mountRoutes(
  router: Router,
  routes: RouteSpec[],
  authenticate: (ctx: Context, kind: AuthKind, route: { method: Method; path: string }) => Promise<void>,
): Koa.Middleware {
  const exact = new Map<string, (ctx: Context) => Promise<void>>();
  const patterns = routes.map((r) => pathPattern(r.path));
  routes.forEach((r, i) => {
    const handle = async (ctx: Context) => {
      await authenticate(ctx, r.auth, r);
      const params = r.params ? parseOr400(r.params, ctx.params) : undefined;
      // Integer path parameters are row ids: one past what an id column holds names no row.
      if (params && Object.values(params).some((v) => typeof v === 'number' && !isRowId(v))) throw notFound();
      const query = r.query ? parseOr400(r.query, ctx.query) : undefined;
      let body: unknown;
      if (!r.rawBody && r.body) body = parseOr400(r.body, jsonBody(ctx) ?? {});
      const result = await r.handler({ ctx, body, query, params });
      if (result !== undefined) {
        ctx.status = r.status ?? 200;
        ctx.body = result;
      }
    };
    router[r.method](koaPath(r.path), handle);
    const key = `${r.method.toUpperCase()} ${r.path}`;
    const shadowed = routes.slice(0, i).some((e, j) => e.method === r.method && patterns[j].test(r.path));
    if (!r.path.includes('{') && !shadowed) exact.set(key, handle);
  });
  return async (ctx, next) => {
    const handle = exact.get(`${ctx.method} ${ctx.path}`);
    if (!handle) return next();
    ctx.params = {};
    return handle(ctx);
  };
}

/** A declared path as the router matches it (a parameter is one non-empty segment). */
const pathPattern = (p: string) => new RegExp(`^${p.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}/?$`, 'i');

/** OpenAPI security requirement per kind (`bearer`: superadmin key, machine-access token or ID token). */
const SECURITY: Record<AuthKind, Array<Record<string, string[]>>> = {
  none: [],
  api: [{ bearer: [] }],
  account: [{ bearer: [] }],
  admin: [{ bearer: [] }],
  projectToken: [{ projectToken: [] }],
  flagSecret: [{ flagSecret: [] }],
};

export function openApiDocument(routes: RouteSpec[], version: string) {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });
  registry.registerComponent('securitySchemes', 'projectToken', { type: 'apiKey', in: 'header', name: 'X-Service-Token' });
  registry.registerComponent('securitySchemes', 'flagSecret', { type: 'http', scheme: 'bearer', description: 'the project flag secret' });
  for (const r of routes) {
    const responses: Record<string, any> = {
      [String(r.status ?? 200)]: {
        description: 'success',
        ...(r.response ? { content: { 'application/json': { schema: r.response } } } : {}),
      },
    };
    registry.registerPath({
      method: r.method,
      path: r.path,
      tags: [r.tag],
      summary: r.summary,
      security: SECURITY[r.auth],
      request: {
        ...(r.params ? { params: r.params as any } : {}),
        ...(r.query ? { query: r.query as any } : {}),
        ...(r.body ? { body: { content: { 'application/json': { schema: r.body } } } } : {}),
      },
      responses,
    });
  }
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: { title: 'Product-analytics service API', version },
  });
}
