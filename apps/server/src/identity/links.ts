import type { Deps } from '../deps.js';
import { isPostgres, nowMs } from '../ports/metadata/knex.js';

/**
 * Writing identity links (the ingestion worker's job; readers use identity/store.ts and the SQL
 * in identity/sql.ts). The metadata store's `identity_links` is authoritative; every link is
 * mirrored into the event store's `identity_links` so analyses resolve identities in the engine.
 *
 * Clusters are flat: every link points at the cluster's canonical id, which is never itself
 * linked, so canonical ids never change and a link is never rewritten or removed.
 */

export interface IdentityLink {
  project_id: number;
  distinct_id: string;
  canonical_id: string;
  from_time: number;
  created_at: number;
}

/** Anonymous device-minted ids: `$device:` prefix or a bare UUID (product.md, Identity). */
export function isAnonymousId(id: string): boolean {
  return id.startsWith('$device:') || /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id);
}

export type LinkOutcome =
  | { linked: true; link: IdentityLink }
  | { linked: false; reason: 'same-cluster' | 'alias-in-other-cluster' | 'would-merge-clusters' | 'invalid' };

export interface LinkRequest {
  projectId: number;
  /** The id joining the cluster. */
  alias: string;
  /** Any id of the cluster it joins. */
  distinctId: string;
  /**
   * `always`: the device's history moves too (the $device_id/$user_id rule).
   * `auto`: retroactive when the alias looks anonymous or has nothing stored; otherwise from `at`.
   */
  retroactive: 'always' | 'auto';
  /** When the link was accepted (Unix ms): `from_time` of a non-retroactive link. */
  at: number;
  /** Whether events under `alias` exist that the event store may not hold yet (same batch). */
  aliasHasPendingEvents?: boolean;
}

/**
 * Links `alias` into the cluster of `distinctId`, or refuses silently. Idempotent: re-running a
 * request whose link already exists (redelivery) re-mirrors it and reports it as linked.
 */
export async function linkIdentity(deps: Deps, req: LinkRequest): Promise<LinkOutcome> {
  const { projectId, alias, distinctId } = req;
  if (!alias || !distinctId) return { linked: false, reason: 'invalid' };
  // Decided before the transaction: the event store is not part of it, and the worker applies one
  // project's batches in order, so nothing under `alias` appears meanwhile.
  let retro = req.retroactive === 'always' || isAnonymousId(alias);
  if (!retro && !req.aliasHasPendingEvents) retro = !(await deps.events.hasEvents(projectId, alias));
  const outcome = await deps.db.transaction(async (trx) => {
    const lock = (q: any) => (isPostgres(deps.db) ? q.forUpdate() : q);
    const rows: IdentityLink[] = await lock(
      trx('identity_links').where({ project_id: projectId }).whereIn('distinct_id', [alias, distinctId]).select('*'),
    );
    const aliasLink = rows.find((r) => r.distinct_id === alias);
    const targetLink = rows.find((r) => r.distinct_id === distinctId);
    const canonical = targetLink?.canonical_id ?? distinctId;
    if (aliasLink) {
      if (aliasLink.canonical_id === canonical) return { linked: true, link: aliasLink, existed: true } as const;
      return { linked: false, reason: 'alias-in-other-cluster' } as const;
    }
    if (alias === canonical) return { linked: false, reason: 'same-cluster' } as const;
    // `alias` is the canonical id of a cluster of its own: linking it would merge two users.
    const members = await trx('identity_links').where({ project_id: projectId, canonical_id: alias }).first('distinct_id');
    if (members) return { linked: false, reason: 'would-merge-clusters' } as const;
    const link: IdentityLink = {
      project_id: projectId, distinct_id: alias, canonical_id: canonical, from_time: retro ? 0 : req.at, created_at: nowMs(),
    };
    const inserted = await trx('identity_links').insert(link).onConflict(['project_id', 'distinct_id']).ignore().returning('distinct_id');
    if (inserted.length === 0) return { linked: false, reason: 'alias-in-other-cluster' } as const;
    return { linked: true, link, existed: false } as const;
  });
  if (outcome.linked) {
    await mirrorLinks(deps, [outcome.link]);
    return { linked: true, link: outcome.link };
  }
  return outcome;
}

/** Copies links into the event store (idempotent). */
export async function mirrorLinks(deps: Deps, links: IdentityLink[]): Promise<void> {
  if (links.length === 0) return;
  await deps.events.writeLinks(links.map((l) => ({
    project_id: Number(l.project_id), distinct_id: l.distinct_id, canonical_id: l.canonical_id,
    from_time: Number(l.from_time), created_at: Number(l.created_at),
  })));
}
