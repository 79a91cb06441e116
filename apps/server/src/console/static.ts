import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import type Koa from 'koa';
import type { Config } from '../config.js';

/**
 * Serves the web console (apps/console, built into apps/console/dist by `npm install`'s
 * `prepare` script) at `/`. It runs after the router, so it only ever sees requests no API route
 * took, and it answers only the console's own addresses: its assets, `/console/config.json`,
 * and the bookmarkable pages (index.html, the single-page app routes the rest in the browser).
 * Everything else (an unknown `/api/...`, `/track/x`, ...) falls through to the JSON 404.
 */
export const CONSOLE_DIST = fileURLToPath(new URL('../../../console/dist/', import.meta.url));

/** Addresses the browser-side router draws; a reload or a bookmark of one answers index.html. */
const PAGE = /^\/(?:$|sign-in\/?$|auth\/callback\/?$|projects(?:\/[^/]+)*\/?$)/;
/** Built files: hashed names under /assets, and a few fixed names at the root. */
const ASSET = /^\/(?:assets\/[\w.-]+|favicon\.svg)$/;

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml', '.json': 'application/json; charset=utf-8', '.map': 'application/json; charset=utf-8',
  '.woff2': 'font/woff2', '.png': 'image/png',
};

interface Loaded { body: Buffer; gzip?: Buffer; type: string; mtimeMs: number }

const MISSING_BUILD = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Tally console not built</title></head>
<body><main><h1>The web console is not built</h1><p>The API is running; its console has not been built in this copy.
Run <code>npm run build:console</code> (or <code>npm install</code>, which builds it) and reload this page.</p></main></body></html>`;

export function consoleMiddleware(config: Pick<Config, 'oidc'>, dist = CONSOLE_DIST): Koa.Middleware {
  const cache = new Map<string, Loaded>();
  const publicConfig = JSON.stringify({
    oidcIssuer: config.oidc?.issuer ?? null,
    oidcClientId: config.oidc ? config.oidc.clientId : null,
  });

  /** Reads a built file once (gzip computed once too); a rebuild (new mtime) is picked up. */
  const load = async (rel: string): Promise<Loaded | undefined> => {
    const file = path.join(dist, rel);
    if (!file.startsWith(dist)) return undefined;
    let stat: fs.Stats;
    try {
      stat = await fs.promises.stat(file);
    } catch {
      return undefined;
    }
    if (!stat.isFile()) return undefined;
    const hit = cache.get(file);
    if (hit && hit.mtimeMs === stat.mtimeMs) return hit;
    const body = await fs.promises.readFile(file);
    const type = TYPES[path.extname(file)] ?? 'application/octet-stream';
    const loaded: Loaded = { body, type, mtimeMs: stat.mtimeMs, gzip: /text|json|svg/.test(type) && body.length > 1024 ? zlib.gzipSync(body, { level: 9 }) : undefined };
    cache.set(file, loaded);
    return loaded;
  };

  const send = (ctx: Koa.Context, f: Loaded, cacheControl: string) => {
    ctx.set('Cache-Control', cacheControl);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.type = f.type;
    ctx.vary('Accept-Encoding');
    if (f.gzip && ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
      ctx.set('Content-Encoding', 'gzip');
      ctx.body = f.gzip;
    } else {
      ctx.body = f.body;
    }
    ctx.status = 200;
  };

  return async (ctx, next) => {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || ctx.body !== undefined) return next();
    const p = ctx.path;
    if (p === '/console/config.json') {
      ctx.set('Cache-Control', 'no-store');
      ctx.type = 'application/json';
      ctx.body = publicConfig;
      return;
    }
    if (ASSET.test(p)) {
      const f = await load(p.slice(1));
      if (!f) return next();
      // Hashed names never change content: cache for a year; favicon for a day.
      return send(ctx, f, p.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'public, max-age=86400');
    }
    if (!PAGE.test(p)) return next();
    const index = await load('index.html');
    if (!index) {
      ctx.status = 200;
      ctx.type = 'text/html; charset=utf-8';
      ctx.set('Cache-Control', 'no-store');
      ctx.body = MISSING_BUILD;
      return;
    }
    // The page names the current hashed assets: always revalidated.
    send(ctx, index, 'no-cache');
    // No framing by other sites; scripts and styles from this origin only; API calls to this origin and the identity provider.
    // (a provider's token endpoint may live on another host than its issuer: any https origin, plus the issuer's).
    const idp = config.oidc ? ` https: ${new URL(config.oidc.issuer).origin}` : '';
    ctx.set('Content-Security-Policy', `default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'${idp}; frame-ancestors 'none'; base-uri 'self'`);
  };
}
