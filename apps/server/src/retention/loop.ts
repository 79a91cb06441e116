import type { Deps } from '../deps.js';
import { pollingLoop, type BackgroundLoop } from '../background/loop.js';
import { runExclusively } from '../ports/metadata/knex.js';

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

/** Key of the PostgreSQL advisory lock one retention pass holds (any constant shared by all processes). */
export const RETENTION_LOCK = 0x7265_746e; // 'retn'

/**
 * One retention pass unless another process sharing the metadata store is running one: every
 * worker replica runs the loop, and two passes would wait on the same deletes (a ClickHouse
 * mutation each) (runExclusively). Answers null when another process had the lock.
 */
export async function applyRetentionExclusively(
  deps: Pick<Deps, 'projects' | 'events' | 'log' | 'db'>, now = Date.now(), stopping: () => boolean = () => false,
): Promise<number | null> {
  return runExclusively(deps.db, RETENTION_LOCK, () => applyRetention(deps, now, stopping));
}

/** Deletes audit log rows older than AUDIT_RETENTION_DAYS; answers how many went. */
export function pruneAuditLog(deps: Pick<Deps, 'audit' | 'config'>, now = Date.now()): Promise<number> {
  return deps.audit.deleteOlderThan(now - deps.config.auditRetentionDays * DAY_MS);
}

export function retentionLoop(deps: Deps): BackgroundLoop[] {
  const intervalMs = deps.config.retentionIntervalMs;
  if (!intervalMs) return [];
  return [pollingLoop('retention', { firstDelayMs: Math.min(intervalMs, 60_000), intervalMs }, async (stopping) => {
    if (await applyRetentionExclusively(deps, Date.now(), stopping) === null) deps.log.info('retention: another process is running a pass; this one skips it');
    const pruned = await pruneAuditLog(deps);
    if (pruned > 0) deps.log.info('retention: audit log rows deleted', { rows: pruned, olderThanDays: deps.config.auditRetentionDays });
  }, (err) => deps.log.error('retention: run failed', { err: String(err) }))];
}
