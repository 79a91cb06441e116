import type { Context, Next } from 'koa';
import { randomUUID } from 'node:crypto';
import { BatchTooLarge, BufferUnavailable } from '../ports/buffer/port.js';
import { QueryLimitExceeded } from '../ports/events/port.js';

/**
 * Typed errors. Domain code throws these; `errorHandler` turns them into the API's envelopes
 * in one place: `{status: 0, error}` where the route declares it (see `envelope` in route.ts) or
 * `statusEnvelope` is forced (e.g. query rate limits), `{error, code?, message?, resolution?}` elsewhere.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly extra: {
      code?: string;
      message?: string;
      resolution?: string;
      headers?: Record<string, string>;
      /** Extra members merged into the body (e.g. IR `errors`, engage `refused`). */
      body?: Record<string, unknown>;
      /** Force the `{status: 0, error}` envelope regardless of route. */
      statusEnvelope?: boolean;
    } = {},
  ) {
    super(extra.message ?? error);
  }
}

export const badRequest = (error: string, extra: AppError['extra'] = {}) => new AppError(400, error, extra);
export const unauthorized = () => new AppError(401, 'unauthorized');
/** `reason` (with its `message`): why a check refused, as a body member clients can act on (e.g. `NamespaceNotAllowed`). */
export const forbidden = (reason?: string, message?: string) =>
  new AppError(403, 'forbidden', reason ? { message, body: { reason } } : {});
export const noOrganization = () =>
  new AppError(403, 'no organization', {
    resolution: 'ask an administrator to invite your email, or create one with POST /api/account/organization',
  });
export const notFound = (what?: string) => new AppError(404, 'not found', what ? { message: `${what} not found` } : {});
export const conflict = (error: string, extra: AppError['extra'] = {}) => new AppError(409, error, extra);
export const invalidToken = () => new AppError(401, 'invalid token');
export const payloadTooLarge = () => new AppError(413, 'payload too large');
export const invalidJson = () => new AppError(400, 'invalid json');
export const serviceUnavailable = (error: string, retryAfterSeconds: number) =>
  new AppError(503, error, { headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) } });

/** A read the engine stopped at the query cost guard's timeout or memory cap: the 400 a query endpoint answers. */
export const queryLimitError = (err: QueryLimitExceeded) =>
  badRequest(`query too large: ${err.message}`, {
    message: 'narrow it: a shorter date range, a coarser unit, filters, or a breakdown on a property with fewer values',
  });

export interface Logger {
  info(msg: string, meta?: Record<string, unknown>): void;
  error(msg: string, meta?: Record<string, unknown>): void;
}

/** `envelopeFor`: the declared envelope of the route a path belongs to (route.ts `envelopeByPath`). */
export function errorHandler(log: Logger, envelopeFor: (path: string) => 'status' | 'error' = () => 'error') {
  return async function handleErrors(ctx: Context, next: Next) {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new AppError(404, 'not found', { code: 'route_not_found', message: `no route for ${ctx.method} ${ctx.path}` });
      }
    } catch (err) {
      const e = toAppError(err, log, ctx);
      ctx.status = e.status;
      for (const [k, v] of Object.entries(e.extra.headers ?? {})) ctx.set(k, v);
      if (e.extra.statusEnvelope || envelopeFor(ctx.path) === 'status') {
        ctx.body = { status: 0, error: e.error, ...(e.extra.body ?? {}) };
      } else {
        const body: Record<string, unknown> = { error: e.error };
        if (e.extra.code) body.code = e.extra.code;
        if (e.extra.message && e.extra.message !== e.error) body.message = e.extra.message;
        if (e.extra.resolution) body.resolution = e.extra.resolution;
        ctx.body = { ...body, ...(e.extra.body ?? {}) };
      }
    }
  };
}

function toAppError(err: unknown, log: Logger, ctx: Context): AppError {
  if (err instanceof AppError) return err;
  // Ports report in their own terms; the edge speaks HTTP.
  if (err instanceof BufferUnavailable) return serviceUnavailable(err.message, err.retryAfterSeconds);
  if (err instanceof BatchTooLarge) return payloadTooLarge();
  if (err instanceof QueryLimitExceeded) return queryLimitError(err);
  const status = (err as { status?: number; statusCode?: number })?.status ?? (err as { statusCode?: number })?.statusCode;
  const type = (err as { type?: string })?.type;
  // Errors raised by koa/raw-body/router with an HTTP status of their own.
  if (status === 413 || type === 'entity.too.large') return payloadTooLarge();
  if (status === 405) return new AppError(405, 'method not allowed', { code: 'method_not_allowed' });
  if (status === 400 && (type === 'request.aborted' || type === 'request.size.invalid')) return badRequest('bad request');
  if (status === 415) return new AppError(415, 'unsupported media type');
  const id = randomUUID();
  log.error('unhandled error', { id, method: ctx.method, path: ctx.path, err: err instanceof Error ? err.stack : String(err) });
  return new AppError(500, 'internal error', {
    code: 'internal_error',
    message: `unexpected server error; reference ${id}`,
    resolution: 'retry later; if it persists, report the reference to the operators',
  });
}
