/** The ClickHouse client's side of the query bounds: its errors for a stopped read, and its logger. */
import type { ErrorLogParams, Logger, WarnLogParams } from '@clickhouse/client';
import { DEFAULT_QUERY_LIMITS, QueryLimitExceeded, type QueryLimits } from './port.js';

/**
 * The client's warnings and errors (its default level), without the reads the cost guard stopped:
 * those are thrown to the caller, which answers 400, and the client logged each one again.
 */
export class GuardQuietLogger implements Logger {
  trace(): void {}
  debug(): void {}
  info(): void {}
  warn({ module, message, args, err }: WarnLogParams): void {
    console.warn(`[@clickhouse/client][${module}] ${message}`, ...(args ? [args] : []), ...(err ? [err] : []));
  }
  error({ module, message, args, err }: ErrorLogParams): void {
    if (limitError(err, false, DEFAULT_QUERY_LIMITS) instanceof QueryLimitExceeded) return;
    if (err?.name === 'AbortError' || /user aborted/i.test(err?.message ?? '')) return;
    console.error(`[@clickhouse/client][${module}] ${message}`, ...(args ? [args] : []), err);
  }
}

/**
 * The engine's own words for a stopped read: TIMEOUT_EXCEEDED (159), MEMORY_LIMIT_EXCEEDED (241).
 * With progress headers the status line is already sent, so the exception can arrive in the body:
 * its text is matched as well as the code.
 */
export function limitError(err: unknown, aborted: boolean, limits: QueryLimits): unknown {
  if (aborted) return new QueryLimitExceeded('timeout', limits);
  const code = String((err as { code?: unknown })?.code ?? '');
  const text = err instanceof Error ? err.message : String(err);
  if (code === '159' || /Code: 159\b|Timeout exceeded: elapsed/.test(text)) return new QueryLimitExceeded('timeout', limits);
  if (code === '241' || /Code: 241\b|Memory limit \(for query\) exceeded/.test(text)) return new QueryLimitExceeded('memory', limits);
  return err;
}
