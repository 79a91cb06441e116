import type { Deps } from '../deps.js';
import { pollingLoop, type BackgroundLoop } from '../background/loop.js';

const DAY_MS = 86_400_000;

/**
 * Deletes, per project with `retention_days`, the events whose event time is older than that,
 * on either engine (EventStore.deleteEventsBefore: a DuckDB DELETE plus a vacuuming checkpoint, a
 * ClickHouse mutation waited for). Runs every RETENTION_INTERVAL_MS (0: off), the first run soon
 * after start so a process restarted more often than the interval still runs it. Projects go one
 * at a time: a mutation rewrites the parts it touches, and two at once would only compete.
 */
/** Runs one round; answers how many projects had events to delete. */
export async function applyRetention(deps: Pick<Deps, 'projects' | 'events' | 'log'>, now = Date.now(), stopping: () => boolean = () => false): Promise<number> {
  let done = 0;
  for (const { id, retentionDays } of await deps.projects.withRetention()) {
    if (stopping()) break;
    const before = now - retentionDays * DAY_MS;
    try {
      if (await deps.events.deleteEventsBefore(id, before)) done++;
    } catch (err) {
      // One project's failure (a stuck mutation) leaves the others to run; the next round retries it.
      deps.log.error('retention: delete failed', { projectId: id, before, err: String(err) });
    }
  }
  return done;
}

export function retentionLoop(deps: Deps): BackgroundLoop[] {
  const intervalMs = deps.config.retentionIntervalMs;
  if (!intervalMs) return [];
  return [pollingLoop('retention', { firstDelayMs: Math.min(intervalMs, 60_000), intervalMs }, async (stopping) => {
    await applyRetention(deps, Date.now(), stopping);
  }, (err) => deps.log.error('retention: run failed', { err: String(err) }))];
}
