import type { Deps } from '../deps.js';
import { pollingLoop, type BackgroundLoop } from '../background/loop.js';
import { int } from '../env.js';
import { IdentityStore } from '../identity/store.js';
import { PrivacyStore, type PrivacyRequest } from './store.js';
import { PrivacyService } from './service.js';

/**
 * Runs privacy requests in the background (a worker of the `worker` role). A request is claimed
 * in the metadata store, kept alive by a heartbeat, and taken over by any runner once its
 * heartbeat is older than PRIVACY_STALE_MS (its process died): every step is idempotent, so a
 * request is re-run from the start. After PRIVACY_MAX_ATTEMPTS attempts it fails with its error.
 */
export interface RunnerSettings { pollMs: number; staleMs: number; maxAttempts: number }

export function runnerSettings(env = process.env): RunnerSettings {
  return {
    pollMs: int(env, 'PRIVACY_POLL_MS', 500),
    staleMs: int(env, 'PRIVACY_STALE_MS', 60_000),
    maxAttempts: Math.max(1, int(env, 'PRIVACY_MAX_ATTEMPTS', 3)),
  };
}

/** Every id of the clusters the given ids belong to (links are flat: one canonical id per cluster). */
export async function clusterIds(deps: Deps, projectId: number, distinctIds: string[]): Promise<string[]> {
  const identity = new IdentityStore(deps.db);
  const out = new Set<string>();
  for (const id of distinctIds) {
    const canonical = await identity.canonicalOf(projectId, id);
    for (const member of await identity.clusterOf(projectId, canonical)) out.add(member);
    out.add(id);
  }
  return [...out];
}

/** One run of a request: resolves the clusters, then deletes (access/export have nothing more to do: downloads stream from the stores). */
export async function executeRequest(deps: Deps, store: PrivacyStore, r: PrivacyRequest): Promise<string[]> {
  // a re-run keeps the ids resolved before: their links may already be gone
  const ids = [...new Set([...(r.cluster_ids ?? []), ...(await clusterIds(deps, r.project_id, r.distinct_ids))])];
  await store.setClusterIds(r.id, ids);
  if (r.type !== 'delete') return ids;
  await deps.events.deleteIdentities(r.project_id, ids);
  for (let i = 0; i < ids.length; i += 200) {
    const chunk = ids.slice(i, i + 200);
    await deps.db('identity_links').where({ project_id: r.project_id })
      .andWhere((q) => q.whereIn('distinct_id', chunk).orWhereIn('canonical_id', chunk)).delete();
  }
  deps.links.forget(r.project_id);
  return ids;
}

export function privacyLoop(deps: Deps, settings = runnerSettings()): BackgroundLoop {
  // The worker role's own composition (it serves no routes): the outcome goes to the audit log through the service.
  const service = new PrivacyService(deps.db, new PrivacyStore(deps.db), deps.audit);
  const { store } = service;

  const runOne = async (): Promise<boolean> => {
    const r = await store.claim(settings.staleMs);
    if (!r) return false;
    const beat = setInterval(() => void store.heartbeat(r.id).catch(() => undefined), Math.max(50, Math.floor(settings.staleMs / 4)));
    try {
      await service.complete(r, await executeRequest(deps, store, r));
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      deps.log.error('privacy request failed', { err: message, request: r.id });
      if (r.attempts >= settings.maxAttempts) await service.fail(r, message);
      else await store.retry(r.id, message);
    } finally {
      clearInterval(beat);
    }
    return true;
  };

  return pollingLoop('privacy', { firstDelayMs: 0, intervalMs: settings.pollMs }, async (stopping) => {
    while (!stopping() && (await runOne()));
  }, (err) => deps.log.error('privacy runner', { err: err instanceof Error ? err.message : String(err) }));
}
