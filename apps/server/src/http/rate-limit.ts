import { AppError } from './errors.js';
import { LIMITS } from '../limits.js';

/**
 * Fixed-window request counters per key (an IP, a project). In-process: each API pod counts its
 * own traffic, which is what a per-pod limit behind a load balancer gives (documented in README).
 */
export class RateLimiter {
  private windows = new Map<string, { count: number; resetAt: number }>();
  private lastSweep = 0;

  constructor(readonly limit: { requests: number; windowMs: number }, private now: () => number = Date.now) {}

  /** Seconds until `key` may send again, or 0 when a request is allowed now (without taking it). */
  wait(key: string): number {
    const w = this.windows.get(key);
    const now = this.now();
    if (!w || w.resetAt <= now || w.count < this.limit.requests) return 0;
    return Math.max(LIMITS.retryAfterMinSeconds, Math.ceil((w.resetAt - now) / 1000));
  }

  take(key: string): void {
    const now = this.now();
    this.sweep(now);
    const w = this.windows.get(key);
    if (!w || w.resetAt <= now) this.windows.set(key, { count: 1, resetAt: now + this.limit.windowMs });
    else w.count++;
  }

  private sweep(now: number) {
    if (now - this.lastSweep < this.limit.windowMs) return;
    this.lastSweep = now;
    for (const [k, w] of this.windows) if (w.resetAt <= now) this.windows.delete(k);
  }
}

/**
 * Checks every (limiter, key) pair first and only then counts the request in each, so a
 * rejected request uses up nothing. Throws `429 rate limited` with `Retry-After`.
 */
export function enforceRateLimits(checks: Array<[RateLimiter, string]>, opts: { statusEnvelope?: boolean } = {}): void {
  const wait = Math.max(0, ...checks.map(([limiter, key]) => limiter.wait(key)));
  if (wait > 0) {
    throw new AppError(429, 'rate limited', { headers: { 'Retry-After': String(wait) }, statusEnvelope: opts.statusEnvelope });
  }
  for (const [limiter, key] of checks) limiter.take(key);
}

/**
 * Token buckets per key (a credential and project, a project token, a flag secret): `perSecond`
 * tokens refill each second up to `burst`. In-process like RateLimiter: each API process holds
 * its own buckets (docs/hardening.md has the arithmetic across replicas).
 */
export class TokenBuckets {
  private buckets = new Map<string, { tokens: number; at: number }>();
  private lastSweep = 0;

  constructor(readonly bound: { perSecond: number; burst: number }, private now: () => number = Date.now) {}

  /** Takes a token for `key` and answers 0, or answers the seconds until one is there (nothing taken). */
  take(key: string): number {
    const now = this.now();
    this.sweep(now);
    const { perSecond, burst } = this.bound;
    const b = this.buckets.get(key);
    const tokens = b ? Math.min(burst, b.tokens + ((now - b.at) / 1000) * perSecond) : burst;
    if (tokens < 1) {
      this.buckets.set(key, { tokens, at: now });
      return Math.max(LIMITS.retryAfterMinSeconds, Math.ceil((1 - tokens) / perSecond));
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

/** `429 rate limited` with `Retry-After` in the `{status: 0, error}` envelope unless `key` has a token. */
export function takeToken(buckets: TokenBuckets, key: string): void {
  const wait = buckets.take(key);
  if (wait > 0) throw new AppError(429, 'rate limited', { headers: { 'Retry-After': String(wait) }, statusEnvelope: true });
}
