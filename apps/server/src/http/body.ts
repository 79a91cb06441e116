import type { Context, Next } from 'koa';
import getRawBody from 'raw-body';
import { LIMITS } from '../limits.js';
import { invalidJson, payloadTooLarge } from './errors.js';

declare module 'koa' {
  interface DefaultState {
    /** The request body as received (at most LIMITS.requestBodyBytes), or undefined for body-less methods. */
    rawBody?: Buffer;
  }
}

/**
 * Reads the body of every request that may carry one, refusing more than 1 MB with `413`
 * before buffering it whole (Content-Length is checked first; chunked bodies are cut off at the limit).
 */
export function readBody(limit: number = LIMITS.requestBodyBytes) {
  return async function bodyReader(ctx: Context, next: Next) {
    if (ctx.method === 'GET' || ctx.method === 'HEAD' || ctx.method === 'OPTIONS') return next();
    const declared = Number(ctx.get('content-length'));
    if (Number.isFinite(declared) && declared > limit) {
      ctx.req.resume(); // drain without keeping it, so the response can be sent
      throw payloadTooLarge();
    }
    try {
      ctx.state.rawBody = await getRawBody(ctx.req, { limit, length: ctx.get('content-length') || undefined });
    } catch (err) {
      if ((err as { type?: string }).type === 'entity.too.large') throw payloadTooLarge();
      throw err;
    }
    await next();
  };
}

/** The body parsed as JSON; an empty body is `undefined`. Malformed JSON throws `400 invalid json`. */
export function jsonBody(ctx: Context): unknown {
  const raw = ctx.state.rawBody;
  if (!raw || raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw invalidJson();
  }
}
