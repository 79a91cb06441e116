import { AppError } from './errors.js';
import { LIMITS } from '../limits.js';
import { httpMetrics } from '../metrics/http.js';
import type { Config } from '../config.js';

export interface Window { requests: number; windowMs: number }

/** A project's own limit (`rateLimit.requestsPer10Seconds`) counts in windows of 10 s. */
export const PROJECT_LIMIT_WINDOW_MS = 10_000;
export interface Bound { perSecond: number; burst: number }

/**
 * Where request counts live. Both answer 0 when the request is counted, else the milliseconds
 * until it would fit, counting nothing. `MemoryCounter` is this process's memory (SQLite, one
 * process); `SharedCounter` (rate-limit-shared.ts) is PostgreSQL, one count for every API process.
 */
export interface RateCounter {
  /** Fixed windows: one request in each key's window when every one has room (a refusal counts in none). */
  windows(checks: Array<{ key: string; limit: Window }>): Promise<number>;
  /** A token bucket: one token of `key`'s. */
  bucket(key: string, bound: Bound): Promise<number>;
}

/** Fixed windows and token buckets in this process's memory. */
export class MemoryCounter implements RateCounter {
  private fixed = new Map<string, { count: number; resetAt: number }>();
  private buckets: TokenBuckets[] = [];
  private lastSweep = 0;

  constructor(private now: () => number = Date.now) {}

  async windows(checks: Array<{ key: string; limit: Window }>): Promise<number> {
    const now = this.now();
    this.sweep(now);
    let wait = 0;
    for (const { key, limit } of checks) {
      const w = this.fixed.get(key);
      if (w && w.resetAt > now && w.count >= limit.requests) wait = Math.max(wait, w.resetAt - now);
    }
    if (wait > 0) return wait;
    for (const { key, limit } of checks) {
      const w = this.fixed.get(key);
      if (!w || w.resetAt <= now) this.fixed.set(key, { count: 1, resetAt: now + limit.windowMs });
      else w.count++;
    }
    return 0;
  }

  async bucket(key: string, bound: Bound): Promise<number> {
    let b = this.buckets.find((x) => x.bound.perSecond === bound.perSecond && x.bound.burst === bound.burst);
    if (!b) this.buckets.push((b = new TokenBuckets(bound, this.now)));
    return b.takeMs(key);
  }

  private sweep(now: number) {
    if (now - this.lastSweep < 10_000) return;
    this.lastSweep = now;
    for (const [k, w] of this.fixed) if (w.resetAt <= now) this.fixed.delete(k);
  }
}

/** `429 rate limited` with `Retry-After` (whole seconds, at least 1) when `waitMs` > 0. */
export function refuseIfWaiting(waitMs: number, statusEnvelope?: boolean): void {
  if (waitMs <= 0) return;
  const seconds = Math.max(LIMITS.retryAfterMinSeconds, Math.ceil(waitMs / 1000));
  httpMetrics.rateLimited.inc();
  throw new AppError(429, 'rate limited', { headers: { 'Retry-After': String(seconds) }, statusEnvelope });
}

/**
 * Every request limit of the service (docs/hardening.md has which is shared across API processes
 * and why): ingestion's fixed windows per IP and per project and the buckets of `/api/query/*` and
 * `/flags/local-evaluation` go through `counter` (PostgreSQL when the service runs on it); the
 * `/flags/evaluate` bucket stays in this process, off the database, on the flags hot path.
 */
export class RateLimits {
  private flagsEvaluateBuckets: TokenBuckets;

  constructor(private config: Config['rateLimits'], readonly counter: RateCounter) {
    this.flagsEvaluateBuckets = new TokenBuckets(config.flagsEvaluate);
  }

  /**
   * Ingestion (`/track`, `/engage`, `/alias`, `/import`): per client IP (when given) and per project.
   * A project with its own `rate_limit` (requests per 10 s, from the tenant config or the database
   * through the token cache: no read here) has that window instead of RATE_LIMIT_PER_PROJECT; the
   * key names the limit, so a changed limit starts a fresh window rather than inheriting a count.
   */
  async ingestion(ip: string | undefined, projects: Iterable<number | { id: number; rate_limit?: number | null }>): Promise<void> {
    const checks: Array<{ key: string; limit: Window }> = [];
    if (ip !== undefined) checks.push({ key: 'ip:' + ip, limit: this.config.perIp });
    const seen = new Set<number>();
    for (const p of projects) {
      const { id, rate_limit: own } = typeof p === 'number' ? { id: p, rate_limit: null } : p;
      if (seen.has(id)) continue;
      seen.add(id);
      if (own) checks.push({ key: `project:${id}:${own}`, limit: { requests: own, windowMs: PROJECT_LIMIT_WINDOW_MS } });
      else checks.push({ key: 'project:' + id, limit: this.config.perProject });
    }
    refuseIfWaiting(await this.counter.windows(checks));
  }

  /** `/api/query/*`, per credential and project. */
  async query(credential: string, projectId: number): Promise<void> {
    refuseIfWaiting(await this.counter.bucket(`query:${credential}:${projectId}`, this.config.query), true);
  }

  /** `/flags/local-evaluation`, per flag secret (one per project). */
  async flagsLocal(projectId: number): Promise<void> {
    refuseIfWaiting(await this.counter.bucket('flags-local:' + projectId, this.config.flagsLocal), true);
  }

  /** `/flags/evaluate` and `GET /flags`, per project token: in this process (synchronous, no I/O). */
  flagsEvaluate(projectId: number): void {
    refuseIfWaiting(this.flagsEvaluateBuckets.takeMs('p:' + projectId), true);
  }
}

/**
 * Token buckets per key in this process's memory: `perSecond` tokens refill each second up to
 * `burst`. The same arithmetic as SharedCounter's `rate_limit_bucket` in PostgreSQL.
 */
export class TokenBuckets {
  private buckets = new Map<string, { tokens: number; at: number }>();
  private lastSweep = 0;

  constructor(readonly bound: { perSecond: number; burst: number }, private now: () => number = Date.now) {}

  /** Takes a token for `key` and answers 0, or answers the seconds until one is there (nothing taken). */
  take(key: string): number {
    const ms = this.takeMs(key);
    return ms > 0 ? Math.max(LIMITS.retryAfterMinSeconds, Math.ceil(ms / 1000)) : 0;
  }

  /** As `take`, in milliseconds. */
  takeMs(key: string): number {
    const now = this.now();
    this.sweep(now);
    const { perSecond, burst } = this.bound;
    const b = this.buckets.get(key);
    const tokens = b ? Math.min(burst, b.tokens + ((now - b.at) / 1000) * perSecond) : burst;
    if (tokens < 1) {
      this.buckets.set(key, { tokens, at: now });
      return Math.ceil(((1 - tokens) / perSecond) * 1000);
    }
    this.buckets.set(key, { tokens: tokens - 1, at: now });
    return 0;
  }

  /** Full buckets hold nothing worth keeping. */
  private sweep(now: number) {
    const refillMs = (this.bound.burst / this.bound.perSecond) * 1000;
    if (now - this.lastSweep < Math.max(refillMs, 10_000)) return;
    this.lastSweep = now;
    for (const [k, b] of this.buckets) if (now - b.at >= refillMs) this.buckets.delete(k);
  }
}
