import { Readable } from 'node:stream';
import type { Deps } from '../deps.js';
import { eventProperties, type EventPageKey } from '../ports/events/port.js';
import type { PrivacyRequest } from './store.js';

/** Events read from the engine per page: memory stays at one page whatever the person holds. */
export const DOWNLOAD_PAGE = 5000;

/**
 * The NDJSON of an access/export request, one object per line with a `kind`: `event` (every
 * stored event of the clusters' ids), `profile` (latest version per id), `identity_link`
 * (metadata store), `flag_override` (a flag rule naming one of the ids). Built lazily: the
 * stream pulls one engine page at a time as the client reads.
 */
export function downloadStream(deps: Deps, r: PrivacyRequest): Readable {
  return Readable.from(lines(deps, r.project_id, r.cluster_ids ?? []), { objectMode: false });
}

async function* lines(deps: Deps, projectId: number, ids: string[]): AsyncGenerator<string> {
  if (ids.length === 0) return;
  let after: EventPageKey | null = null;
  for (;;) {
    const page = await deps.events.eventsOfIdentities(projectId, ids, after, DOWNLOAD_PAGE);
    if (page.length === 0) break;
    let chunk = '';
    for (const e of page) {
      chunk += JSON.stringify({
        kind: 'event', event: e.event, distinct_id: e.distinct_id, time: Number(e.time), insert_id: e.insert_id,
        properties: eventProperties(e), received_at: Number(e.received_at),
      }) + '\n';
    }
    yield chunk;
    const last = page[page.length - 1];
    after = { time: Number(last.time), distinct_id: last.distinct_id, event: last.event, insert_id: last.insert_id };
    if (page.length < DOWNLOAD_PAGE) break;
  }
  for (const p of await deps.events.latestProfiles(projectId, ids)) {
    if (p.deleted) continue;
    yield JSON.stringify({ kind: 'profile', distinct_id: p.distinct_id, properties: safeJson(p.properties), updated_at: p.updated_at }) + '\n';
  }
  const idSet = new Set(ids);
  const links = await deps.db('identity_links').where({ project_id: projectId }).whereIn('distinct_id', ids).orderBy('distinct_id');
  for (const l of links) {
    yield JSON.stringify({ kind: 'identity_link', distinct_id: l.distinct_id, canonical_id: l.canonical_id, from_time: Number(l.from_time), created_at: Number(l.created_at) }) + '\n';
  }
  const flags = await deps.db('flags').where({ project_id: projectId }).select('id', 'key', 'rules').orderBy('id');
  const pending: string[] = [];
  for (const f of flags) {
    let rules: Array<{ distinctIds?: string[]; variant?: string }> = [];
    try { rules = JSON.parse(f.rules); } catch { continue; }
    rules.forEach((rule, index) => {
      const named = (rule.distinctIds ?? []).filter((d) => idSet.has(d));
      if (named.length) pending.push(JSON.stringify({ kind: 'flag_override', flag_id: Number(f.id), flag_key: f.key, rule: index, distinct_ids: named, variant: rule.variant ?? null }) + '\n');
    });
    while (pending.length) yield pending.shift()!;
  }
}
function safeJson(text: string): unknown {
  try { return JSON.parse(text); } catch { return text; }
}
