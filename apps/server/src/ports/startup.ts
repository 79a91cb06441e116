/**
 * Start-up steps against servers that may not be ready yet (a NATS cluster electing its
 * leaders, PostgreSQL or ClickHouse still starting): retried with exponential backoff (250 ms
 * doubling to 5 s, jittered so processes started together spread out) until `timeoutMs` has
 * passed, then the last error is thrown and the process exits (its supervisor restarts it).
 * A dozen lines, so no retry library for it.
 */
export async function retryStartup<T>(
  what: string,
  step: () => Promise<T>,
  opts: { timeoutMs: number; log?: { info(msg: string, meta?: Record<string, unknown>): void } },
): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      const wait = Math.min(250 * 2 ** attempt, 5000) * (0.5 + Math.random() / 2);
      if (Date.now() + wait > deadline) throw err;
      opts.log?.info(`${what} not ready, retrying`, { attempt: attempt + 1, waitMs: Math.round(wait), err: err instanceof Error ? err.message : String(err) });
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
