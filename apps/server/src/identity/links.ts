import type { Knex } from 'knex';
import type { Deps } from '../deps.js';
import { isPostgres, lockForUpdate, nowMs, type Db } from '../ports/metadata/knex.js';

/**
 * Writing identity links (the ingestion worker's job; readers use identity/store.ts and the SQL
 * in the dialects: `canonicalEvents`, and `data.resolvedEvents` for browsing). The metadata store's `identity_links` is authoritative; every link is
 * mirrored into the event store's `identity_links` so analyses resolve identities in the engine.
 *
 * Clusters are flat: every link points at the cluster's canonical id, which is never itself
 * linked, so canonical ids never change and a link is never rewritten (privacy deletion removes
 * links). Every insert, re-point and delete is numbered by the store's triggers (migration 0012)
 * for the readers that follow links incrementally (identity/link-index.ts); links made here are
 * also handed to this process's index when their transaction commits.
 */

export interface IdentityLink {
  project_id: number;
  distinct_id: string;
  canonical_id: string;
  from_time: number;
  created_at: number;
}

/** Anonymous device-minted ids: `$device:` prefix or a bare UUID (docs/decisions.md, "Identity"). */
export function isAnonymousId(id: string): boolean {
  return id.startsWith('$device:') || /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id);
}

export interface LinkRequest {
  /** The id joining the cluster. */
  alias: string;
  /** Any id of the cluster it joins. */
  distinctId: string;
  /**
   * `always`: the device's history moves too (the $device_id/$user_id rule).
   * `auto`: retroactive when the alias looks anonymous or has nothing stored; otherwise from `at`.
   */
  retroactive: 'always' | 'auto';
  /** When the link starts if it is not retroactive (Unix ms). */
  at: number;
  /** Whether events under `alias` exist that the event store does not hold yet (earlier in the same batch). */
  aliasHasPendingEvents?: boolean;
}

export interface LinksApplied {
  /** Links made by these requests, in request order. */
  made: IdentityLink[];
  /** For each of `made`, the index in `requests` of the request that made it. */
  madeBy: number[];
  /** Requests whose link already existed (redelivery, SDKs repeating a link): to re-mirror. */
  existed: IdentityLink[];
}

/**
 * Ids per statement on SQLite (bound variables). PostgreSQL takes a whole list as one array
 * parameter: one statement per read or insert instead of one per 500 ids, and knex builds no
 * placeholder per value (a unit of 8,000 events asks about thousands of ids).
 */
const CHUNK = 500;

/** `ids` in the slices one statement takes: all at once on PostgreSQL (an array parameter). */
function idSlices(db: Db, ids: string[]): string[][] {
  if (isPostgres(db)) return ids.length ? [ids] : [];
  const out: string[][] = [];
  for (let i = 0; i < ids.length; i += CHUNK) out.push(ids.slice(i, i + CHUNK));
  return out;
}

/** `column IN ids`: `= ANY(array)` on PostgreSQL. */
function whereIdIn(db: Db, q: Knex.QueryBuilder, column: string, ids: string[]): Knex.QueryBuilder {
  return isPostgres(db) ? q.whereRaw(`?? = ANY(?::text[])`, [column, ids]) : q.whereIn(column, ids);
}

/** The stored links of `ids` (those that have one), by distinct_id; `lock` reads them FOR UPDATE. */
export async function linksOf(db: Deps['db'], projectId: number, ids: string[], lock = false): Promise<Map<string, IdentityLink>> {
  const out = new Map<string, IdentityLink>();
  for (const slice of idSlices(db, ids)) {
    const q = whereIdIn(db, db('identity_links').where({ project_id: projectId }), 'distinct_id', slice).select('*');
    const rows: IdentityLink[] = await (lock ? lockForUpdate(db, q) : q);
    for (const r of rows) out.set(r.distinct_id, r);
  }
  return out;
}

/** Inserts links unless their id has one; the distinct ids of those inserted. */
async function insertLinks(trx: Db, links: IdentityLink[]): Promise<Set<string>> {
  const inserted = new Set<string>();
  if (links.length === 0) return inserted;
  if (isPostgres(trx)) {
    // One statement for the unit: its triggers (migration 0012) run once per statement too.
    const { rows } = await trx.raw<{ rows: Array<{ distinct_id: string }> }>(
      `INSERT INTO identity_links (project_id, distinct_id, canonical_id, from_time, created_at)
       SELECT project_id, distinct_id, canonical_id, from_time, created_at
       FROM unnest(?::integer[], ?::text[], ?::text[], ?::bigint[], ?::bigint[]) AS l(project_id, distinct_id, canonical_id, from_time, created_at)
       ON CONFLICT (project_id, distinct_id) DO NOTHING RETURNING distinct_id`,
      [links.map((l) => l.project_id), links.map((l) => l.distinct_id), links.map((l) => l.canonical_id), links.map((l) => l.from_time), links.map((l) => l.created_at)],
    );
    for (const row of rows) inserted.add(row.distinct_id);
    return inserted;
  }
  for (let i = 0; i < links.length; i += CHUNK) {
    const rows: Array<{ distinct_id: string }> = await trx('identity_links').insert(links.slice(i, i + CHUNK))
      .onConflict(['project_id', 'distinct_id']).ignore().returning('distinct_id');
    for (const row of rows) inserted.add(row.distinct_id);
  }
  return inserted;
}

/**
 * Links each request's `alias` into the cluster of its `distinctId`, in order (a later request
 * sees the links of the earlier ones), or refuses it silently: an alias already in a cluster, an
 * alias that is itself a cluster's canonical id (that would merge two users), or an id linked to
 * itself. One event-store read (which aliases have history), one metadata transaction and no
 * event-store write: the caller mirrors `made` and `existed` together (mirrorLinks). Idempotent:
 * a redelivered request finds its link in `existed`. `known`: the stored links of (at least) the
 * requests' ids, read by the caller just before (saves that read).
 */
export async function linkIdentities(deps: Deps, projectId: number, requests: LinkRequest[], known?: Map<string, IdentityLink>): Promise<LinksApplied> {
  const valid: Array<LinkRequest & { index: number }> = [];
  requests.forEach((r, index) => {
    if (r.alias && r.distinctId && r.alias !== r.distinctId) valid.push({ ...r, index });
  });
  if (valid.length === 0) return { made: [], madeBy: [], existed: [] };
  const ids = [...new Set(valid.flatMap((r) => [r.alias, r.distinctId]))];
  // Decided before the transaction: the event store is not part of it, and the worker applies one
  // project's batches in order, so nothing under an alias appears meanwhile.
  const before = known ?? await linksOf(deps.db, projectId, ids, false);
  const open = valid.filter((r) => !before.has(r.alias));
  if (open.length === 0) return { made: [], madeBy: [], existed: sameCluster(valid, before) };
  const ask = [...new Set(open.filter((r) => !retroactiveByRule(r) && !r.aliasHasPendingEvents).map((r) => r.alias))];
  const withHistory = ask.length ? await deps.events.idsWithEvents(projectId, ask) : new Set<string>();
  const applied = await deps.db.transaction(async (trx) => {
    const links = await linksOf(trx, projectId, ids, true);
    // Ids that are some cluster's canonical id (may not join another cluster).
    const canonicals = new Set<string>();
    const aliases = [...new Set(valid.map((r) => r.alias))];
    for (const slice of idSlices(trx, aliases)) {
      const rows: Array<{ canonical_id: string }> = await whereIdIn(trx, trx('identity_links').where({ project_id: projectId }), 'canonical_id', slice)
        .distinct('canonical_id');
      for (const r of rows) canonicals.add(r.canonical_id);
    }
    const made: IdentityLink[] = [];
    const madeBy: number[] = [];
    const madeNow = new Set<string>();
    const existed: IdentityLink[] = [];
    const createdAt = nowMs();
    for (const r of valid) {
      const canonical = links.get(r.distinctId)?.canonical_id ?? r.distinctId;
      const current = links.get(r.alias);
      if (current) {
        if (current.canonical_id === canonical && !madeNow.has(r.alias)) existed.push(current);
        continue;
      }
      if (r.alias === canonical || canonicals.has(r.alias)) continue;
      const retro = retroactiveByRule(r) || (!r.aliasHasPendingEvents && !withHistory.has(r.alias));
      const link: IdentityLink = { project_id: projectId, distinct_id: r.alias, canonical_id: canonical, from_time: retro ? 0 : r.at, created_at: createdAt };
      links.set(r.alias, link);
      canonicals.add(canonical);
      made.push(link);
      madeBy.push(r.index);
      madeNow.add(r.alias);
    }
    // Rows read under lock above cannot change, but a concurrent writer may have inserted one of
    // these ids meanwhile: such a link is not ours (onConflict ignore) and is left out.
    const inserted = await insertLinks(trx, made);
    const kept = made.map((l, i) => i).filter((i) => inserted.has(made[i].distinct_id));
    return { made: kept.map((i) => made[i]), madeBy: kept.map((i) => madeBy[i]), existed };
  });
  deps.links.applied(projectId, applied.made);
  return applied;
}

/** Retroactive whatever is stored under the alias: the $device_id/$user_id rule, or an anonymous alias. */
function retroactiveByRule(r: LinkRequest): boolean {
  return r.retroactive === 'always' || isAnonymousId(r.alias);
}

/** The requests whose link is already there (same cluster). */
function sameCluster(requests: LinkRequest[], links: Map<string, IdentityLink>): IdentityLink[] {
  const out: IdentityLink[] = [];
  for (const r of requests) {
    const current = links.get(r.alias);
    if (current && current.canonical_id === (links.get(r.distinctId)?.canonical_id ?? r.distinctId)) out.push(current);
  }
  return out;
}

/** Copies links into the event store (idempotent). */
export async function mirrorLinks(deps: Deps, links: IdentityLink[]): Promise<void> {
  if (links.length === 0) return;
  await deps.events.writeLinks(links.map((l) => ({
    project_id: Number(l.project_id), distinct_id: l.distinct_id, canonical_id: l.canonical_id,
    from_time: Number(l.from_time), created_at: Number(l.created_at),
  })));
}
