/** HTTP to the service with retries: network errors, 429 and 5xx are retried with exponential
 * backoff and jitter; a `Retry-After` header (seconds) is honoured instead of the backoff. */

export interface RetryOptions {
  /** Retries after the first attempt (default 5). */
  maxRetries?: number;
  /** First backoff delay (default 500 ms), doubled per attempt. */
  baseDelayMs?: number;
  /** Largest backoff delay (default 30 s). `Retry-After` may ask for longer and is obeyed. */
  maxDelayMs?: number;
}

export class TallyHttpError extends Error {
  constructor(readonly status: number, readonly body: unknown, readonly headers?: Headers) {
    super(`HTTP ${status}: ${typeof body === 'object' && body && 'error' in body ? String((body as { error: unknown }).error) : String(body)}`);
    this.name = 'TallyHttpError';
  }
}

export interface HttpReply {
  status: number;
  body: any;
  headers: Headers;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class Transport {
  readonly retry: Required<RetryOptions>;

  constructor(
    readonly host: string,
    retry: RetryOptions = {},
    private timeoutMs = 10_000,
    private fetchImpl: typeof fetch = fetch,
  ) {
    this.host = host.replace(/\/+$/, '');
    this.retry = { maxRetries: retry.maxRetries ?? 5, baseDelayMs: retry.baseDelayMs ?? 500, maxDelayMs: retry.maxDelayMs ?? 30_000 };
  }

  /** One request, no retry. Resolves for every HTTP status; rejects on network errors. */
  async once(method: string, path: string, opts: { body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<HttpReply> {
    const headers: Record<string, string> = { ...opts.headers };
    let payload: string | undefined;
    if (opts.body !== undefined) {
      payload = JSON.stringify(opts.body);
      headers['content-type'] = 'application/json';
    }
    const res = await this.fetchImpl(this.host + path, {
      method,
      headers,
      body: payload,
      signal: AbortSignal.timeout(opts.timeoutMs ?? this.timeoutMs),
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: res.status, body, headers: res.headers };
  }

  /** Delay before retry number `attempt` (0-based): Retry-After when given, else backoff with jitter. */
  delayFor(attempt: number, retryAfter: string | null | undefined): number {
    const seconds = retryAfter ? Number(retryAfter) : NaN;
    if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
    const backoff = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** attempt);
    return backoff / 2 + Math.random() * (backoff / 2);
  }

  /**
   * A request retried on network errors, 429 and 5xx. Other statuses resolve (2xx) or throw
   * TallyHttpError at once (4xx: retrying the same body cannot help).
   */
  async send(method: string, path: string, opts: { body?: unknown; headers?: Record<string, string> } = {}): Promise<HttpReply> {
    for (let attempt = 0; ; attempt++) {
      let reply: HttpReply | undefined;
      let failure: unknown;
      try {
        reply = await this.once(method, path, opts);
      } catch (err) {
        failure = err;
      }
      if (reply && reply.status < 400) return reply;
      const retryable = !reply || reply.status === 429 || reply.status >= 500;
      if (!retryable || attempt >= this.retry.maxRetries) {
        if (reply) throw new TallyHttpError(reply.status, reply.body, reply.headers);
        throw failure;
      }
      await sleep(this.delayFor(attempt, reply?.headers.get('retry-after')));
    }
  }
}
