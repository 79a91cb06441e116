import type { Context, Next } from 'koa';
import getRawBody from 'raw-body';
import { LIMITS } from '../limits.js';
import { AppError, invalidJson, payloadTooLarge } from './errors.js';

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

/**
 * The body parsed as JSON; an empty body is `undefined`. Malformed JSON throws `400 invalid json`,
 * and so does nesting past LIMITS.jsonNestingDepth, found by a scan of the text before parsing:
 * JSON.parse itself takes any depth, but what walks the value afterwards (validation, serialising
 * it back, the stores) recurses and would overflow the stack on a few thousand levels.
 */
export function jsonBody(ctx: Context): unknown {
  const raw = ctx.state.rawBody;
  if (!raw || raw.length === 0) return undefined;
  const text = raw.toString('utf8');
  if (nestingDepth(text, LIMITS.jsonNestingDepth) > LIMITS.jsonNestingDepth) {
    throw new AppError(400, 'invalid json', { message: `nested deeper than ${LIMITS.jsonNestingDepth} levels` });
  }
  try {
    return JSON.parse(text);
  } catch {
    throw invalidJson();
  }
}

/** The deepest `[`/`{` nesting of JSON text, strings skipped; stops counting once past `cap`. */
export function nestingDepth(text: string, cap: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > deepest && (deepest = depth) > cap) return deepest;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}
