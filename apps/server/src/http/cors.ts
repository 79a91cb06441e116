import type { Context, Next } from 'koa';
import { AppError } from './errors.js';
import { pathTable, type AuthKind, type Method, type RouteSpec } from './route.js';

/**
 * The HTTP edge before routing: CORS (preflights and response headers) and methods no route
 * serves. Both are derived from the route declarations, so a new route gets them right by its
 * `auth` kind alone:
 * - `projectToken` routes (/track, /engage, /alias, /flags/evaluate, …) are called by browser SDKs
 *   on customers' sites: any origin, echoed with credentials allowed (mixpanel-browser sends
 *   credentials, so `*` would be refused by the browser);
 * - `/api/*` answers only the origins listed in CORS_ORIGINS;
 * - everything else (flag secrets, the superadmin routes, health) sends no CORS headers.
 */
export type CorsPolicy = 'any' | 'configured' | 'none';

/** Browsers cap the preflight cache (Chromium at 2 h); one preflight per origin and route per 2 h. */
export const PREFLIGHT_MAX_AGE_S = 7200;
/** Response headers an SDK may read across origins (429/503 back-off, flag-definition caching). */
const EXPOSED = 'Retry-After, ETag';
/** Methods the router knows; these and any method a path does not serve answer 405 with `Allow`. */
const SERVED = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export function corsPolicyOf(path: string, auth: AuthKind[]): CorsPolicy {
  if (auth.includes('projectToken')) return 'any';
  if (path.startsWith('/api/')) return 'configured';
  return 'none';
}

const allowHeader = (methods: Method[]) => [...methods.map((m) => m.toUpperCase()), ...(methods.includes('get') ? ['HEAD'] : []), 'OPTIONS'].join(', ');

/** Header names a preflight may ask for: tokens only (so nothing odd is echoed back). */
const requestedHeaders = (value: string) => value.split(',').map((h) => h.trim()).filter((h) => /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/.test(h)).slice(0, 50).join(', ');

export function edgeMiddleware(routes: RouteSpec[], allowedOrigins: string[]) {
  const lookup = pathTable(routes);
  const configured = new Set(allowedOrigins);
  return async (ctx: Context, next: Next) => {
    const match = lookup(ctx.path);
    const served = (m: string) => match!.methods.includes(m.toLowerCase() as Method) || m === 'OPTIONS' || (m === 'HEAD' && match!.methods.includes('get'));
    if (!SERVED.has(ctx.method) || (match && !served(ctx.method))) {
      if (!match) throw new AppError(404, 'not found', { code: 'route_not_found', message: `no route for ${ctx.method} ${ctx.path}` });
      ctx.set('Allow', allowHeader(match.methods));
      throw new AppError(405, 'method not allowed', { code: 'method_not_allowed', message: `${ctx.method} is not served here; allowed: ${allowHeader(match.methods)}` });
    }
    const origin = ctx.get('origin');
    const policy = match ? corsPolicyOf(ctx.path, match.auth) : 'none';
    const allowed = !!origin && (policy === 'any' || (policy === 'configured' && configured.has(origin)));
    if (origin && policy !== 'none') ctx.vary('Origin');
    if (!allowed || !match) return next();
    ctx.set('Access-Control-Allow-Origin', origin);
    ctx.set('Access-Control-Allow-Credentials', 'true');
    const preflightMethod = ctx.get('access-control-request-method');
    if (ctx.method === 'OPTIONS' && preflightMethod) {
      ctx.vary('Access-Control-Request-Headers');
      ctx.set('Access-Control-Allow-Methods', allowHeader(match.methods));
      const headers = requestedHeaders(ctx.get('access-control-request-headers'));
      if (headers) ctx.set('Access-Control-Allow-Headers', headers);
      ctx.set('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE_S));
      ctx.status = 204;
      return;
    }
    ctx.set('Access-Control-Expose-Headers', EXPOSED);
    return next();
  };
}
