import type { Deps } from '../deps.js';
import { AppError } from '../http/errors.js';
import type { TokenProject } from '../auth/credentials.js';
import { LIMITS } from '../limits.js';
import { ingestMetrics } from '../metrics/registry.js';
import { monthOf, type UsageCount } from '../usage/store.js';
import { geoCache } from './geo.js';
import type { AliasBatch, Batch, EngageBatch, TrackBatch } from './batch.js';
import {
  asRecords, cleanString, eventId, idOf, invalidRecord, isPlainObject, jsonByteLength, recordToken, sanitize, setOwn, timeOf,
  type AliasRecord, type EngageRecord, type Props, type TrackAliasRecord, type TrackEventRecord, type TrackRecord,
} from './records.js';

/**
 * Acceptance of ingestion requests: validate, resolve the projects, limit, enrich, count against
 * the quota and publish. Order: shape first (400), then credentials (401), then limits (429):
 * nothing is published unless all pass. The routes (routes.ts) only decode the HTTP request into
 * an `Arrival` and shape the reply.
 */

/** One decoded ingestion request, in the terms acceptance needs. */
export interface Arrival {
  payload: unknown;
  /** Unix ms when the API took the request. */
  acceptedAt: number;
  /** Derived from the request, so a client retry gets the same batch ids and `$insert_id`s. */
  batchId: string;
  /** The address geo enrichment falls back to (undefined: `ip=0`). */
  geoIp: string | undefined;
  /** The client's address, for the per-IP limit. */
  clientIp(): string;
  /** The project of each record's token (undefined: the header token); 401 on any bad one. */
  projects(tokens: Array<string | undefined>): Promise<TokenProject[]>;
  /** Whether the request's credential may make destructive profile changes in a project. */
  ownerCheck(): Promise<(p: TokenProject) => Promise<boolean>>;
}

export const DESTRUCTIVE_ERROR = '$delete/$unset require an owner or superadmin credential';

type Kind = Batch['kind'];
type RecordOf<K extends Kind> = Extract<Batch, { kind: K }>['records'][number];

/** A record bound for one project. */
interface Routed<R> {
  project: TokenProject;
  record: R;
}

export function ingestionService(deps: Deps) {
  /** Ingestion's windows only: /flags/* has its own buckets (docs/hardening.md). */
  const limit = (arrival: Arrival, projects: TokenProject[], perIp: boolean) =>
    deps.rateLimits.ingestion(perIp ? arrival.clientIp() : undefined, projects);

  /** Groups records per project (keeping their order) into one batch each. */
  function batches<K extends Kind>(kind: K, arrival: Arrival, routed: Routed<RecordOf<K>>[]): Extract<Batch, { kind: K }>[] {
    const byProject = new Map<number, RecordOf<K>[]>();
    for (const r of routed) {
      let list = byProject.get(r.project.id);
      if (!list) byProject.set(r.project.id, (list = []));
      list.push(r.record);
    }
    const many = byProject.size > 1;
    return [...byProject].map(([projectId, records]) => ({
      id: many ? `${arrival.batchId}.${projectId}` : arrival.batchId, kind, projectId, acceptedAt: arrival.acceptedAt, records,
    }) as unknown as Extract<Batch, { kind: K }>);
  }

  /**
   * Counts accepted events against each organisation's monthly quota, then publishes. The check
   * and the count are one conditional upsert per organisation (usage/store.ts `admit`: atomic on
   * PostgreSQL and SQLite, no lock held afterwards), so concurrent requests cannot both pass; over
   * quota counts and publishes nothing. Batches that then fail to publish are counted back out.
   */
  async function admit(out: Batch[], eventsPerProject: Map<number, { project: TokenProject; n: number }>, acceptedAt: number) {
    const counted: UsageCount[] = [];
    for (const { project, n } of eventsPerProject.values()) if (n > 0) counted.push({ orgId: project.org_id, projectId: project.id, n });
    const month = monthOf(acceptedAt);
    if (counted.length > 0 && !(await deps.usage.admit(counted, month))) {
      ingestMetrics.quotaRejected.inc(counted.reduce((s, c) => s + c.n, 0));
      throw new AppError(429, 'monthly event quota exceeded', { headers: { 'Retry-After': String(LIMITS.quotaRetryAfterSeconds) } });
    }
    for (let i = 0; i < out.length; i++) {
      try {
        await deps.buffer.publish(out[i]);
      } catch (err) {
        const unpublished = new Set(out.slice(i).map((b) => b.projectId));
        const back = counted.filter((c) => unpublished.has(c.projectId));
        if (back.length) {
          await deps.usage.uncount(back, month).catch((e) => deps.log.error('ingestion: could not uncount events of a failed publish', { err: String(e) }));
        }
        throw err;
      }
    }
  }

  /** Events (and `$create_alias` events) from /track; the count of records accepted. */
  async function track(arrival: Arrival): Promise<{ status: 1; inserted: number }> {
    const { acceptedAt, batchId, geoIp } = arrival;
    const raw = asRecords(arrival.payload);
    const geo = geoCache();
    // One pass per record, no closures or spreads per record (this loop is the API's hot path).
    const tokens: Array<string | undefined> = new Array(raw.length);
    const drafts: Array<TrackAliasRecord | TrackEventRecord> = new Array(raw.length);
    for (let i = 0; i < raw.length; i++) {
      const rec = raw[i];
      if (!isPlainObject(rec)) throw invalidRecord(`${i}: must be an object`);
      const event = typeof rec.event === 'string' ? cleanString(rec.event) : undefined;
      if (!event || event.length > 255) throw invalidRecord(`${i}.event: must be a non-empty string of at most 255 characters`);
      const props = rec.properties === undefined ? {} : rec.properties;
      if (!isPlainObject(props)) throw invalidRecord(`${i}.properties: must be an object`);
      const distinctId = idOf(props.distinct_id);
      tokens[i] = recordToken(props.token);
      if (event === '$create_alias') {
        const alias = idOf(props.alias);
        if (!alias || !distinctId) throw invalidRecord(`${i}.properties: alias and distinct_id required`);
        const link: TrackAliasRecord = { t: 'a', alias, distinct_id: distinctId };
        if (props.time !== undefined && props.time !== null) link.time = timeOf(props.time, `${i}.properties.time`);
        drafts[i] = link;
        continue;
      }
      if (!distinctId) throw invalidRecord(`${i}.properties.distinct_id: must be a non-empty string of at most 255 characters`);
      const time = props.time === undefined || props.time === null ? acceptedAt : timeOf(props.time, `${i}.properties.time`);
      const stored: Props = {};
      for (const k of Object.keys(props)) {
        if (k === 'token' || k === 'distinct_id' || k === 'time') continue; // columns, not stored properties
        const v = props[k];
        setOwn(stored, cleanString(k), typeof v === 'object' && v !== null ? sanitize(v, `${i}.properties.${k}`, 1) : sanitize(v, '', 1));
      }
      const sent = stored.$insert_id;
      const clientInsertId =
        typeof sent === 'string' && sent ? sent.slice(0, 255) : typeof sent === 'number' && Number.isFinite(sent) ? String(sent) : undefined;
      const insertId = clientInsertId ?? `${batchId}:${i}`;
      // Enrichment never overrides a client-sent key.
      if (!Object.hasOwn(stored, '$insert_id')) stored.$insert_id = insertId;
      if (!Object.hasOwn(stored, '$received_at')) stored.$received_at = acceptedAt;
      if (!Object.hasOwn(stored, '$payload_size')) {
        const size = jsonByteLength(props); // counted, not serialised (JSON.stringify for anything unusual)
        stored.$payload_size = Buffer.byteLength(event) + (size >= 0 ? size : Buffer.byteLength(JSON.stringify(props)));
      }
      const g = geo(typeof props.ip === 'string' ? props.ip : geoIp);
      for (const k in g) if (!Object.hasOwn(stored, k)) stored[k] = g[k];
      drafts[i] = { t: 'e', id: 0, event, distinct_id: distinctId, time, insert_id: insertId, received_at: acceptedAt, properties: stored };
    }
    const projects = await arrival.projects(tokens);
    await limit(arrival, projects, true);
    const routed: Routed<TrackRecord>[] = new Array(drafts.length);
    const counts = new Map<number, { project: TokenProject; n: number }>();
    for (let i = 0; i < drafts.length; i++) {
      const d = drafts[i];
      const project = projects[i];
      if (d.t === 'a') {
        routed[i] = { project, record: d };
        continue;
      }
      d.id = eventId(project.id, d.event, d.distinct_id, d.time, d.insert_id); // the project is known only now
      routed[i] = { project, record: d };
      const c = counts.get(project.id);
      if (c) c.n++;
      else counts.set(project.id, { project, n: 1 });
    }
    await admit(batches('track', arrival, routed) satisfies TrackBatch[], counts, acceptedAt);
    return { status: 1, inserted: routed.length };
  }

  /**
   * Profile updates from /engage. Destructive verbs ($delete, $unset) need the superadmin key or
   * an owner's credential; the others are refused one by one (status 0 with the refused list).
   */
  async function engage(arrival: Arrival) {
    const { acceptedAt, geoIp } = arrival;
    const raw = asRecords(arrival.payload);
    const geo = geoCache();
    const drafts = raw.map((op, i) => {
      if (!isPlainObject(op)) throw invalidRecord(`${i}: must be an object`);
      const distinctId = idOf(op.distinct_id ?? op.$distinct_id);
      if (!distinctId) throw invalidRecord(`${i}.distinct_id: must be a non-empty string of at most 255 characters`);
      const rec: EngageRecord = { index: i, distinct_id: distinctId };
      for (const verb of ['$set', '$set_once'] as const) {
        if (op[verb] === undefined) continue;
        if (!isPlainObject(op[verb])) throw invalidRecord(`${i}.${verb}: must be an object`);
        const obj = sanitize(op[verb], `${i}.${verb}`, 1) as Props;
        const g = geo(typeof op.$ip === 'string' ? op.$ip : geoIp);
        for (const k of Object.keys(g)) if (!(k in obj)) obj[k] = g[k];
        if (verb === '$set') rec.set = obj;
        else rec.set_once = obj;
      }
      if ((rec.set || rec.set_once) && op.$ignore_time !== true && !(rec.set && '$last_seen' in rec.set) && !(rec.set_once && '$last_seen' in rec.set_once)) {
        rec.set ??= Object.create(null);
        rec.set!.$last_seen = acceptedAt;
      }
      if (op.$add !== undefined) {
        if (!isPlainObject(op.$add)) throw invalidRecord(`${i}.$add: must be an object of numbers`);
        const add: Record<string, number> = Object.create(null);
        for (const k of Object.keys(op.$add)) {
          const v = op.$add[k];
          if (typeof v !== 'number' || !Number.isFinite(v)) throw invalidRecord(`${i}.$add.${k}: must be a number`);
          add[cleanString(k)] = v;
        }
        rec.add = add;
      }
      if (op.$unset !== undefined) {
        if (!Array.isArray(op.$unset) || !op.$unset.every((k) => typeof k === 'string')) throw invalidRecord(`${i}.$unset: must be an array of strings`);
        rec.unset = (op.$unset as string[]).map(cleanString);
      }
      if (op.$delete !== undefined && op.$delete !== false && op.$delete !== null) rec.delete = true;
      return { token: recordToken(op.token) ?? recordToken(op.$token), rec };
    });
    const projects = await arrival.projects(drafts.map((d) => d.token));
    await limit(arrival, projects, true);
    const refused: Array<{ index: number; op: '$delete' | '$unset' }> = [];
    const routed: Routed<EngageRecord>[] = [];
    let elevated: ((p: TokenProject) => Promise<boolean>) | undefined;
    for (let i = 0; i < drafts.length; i++) {
      const { rec } = drafts[i];
      if (rec.delete || rec.unset) {
        elevated ??= await arrival.ownerCheck();
        if (!(await elevated(projects[i]))) {
          refused.push({ index: i, op: rec.delete ? '$delete' : '$unset' });
          continue;
        }
      }
      routed.push({ project: projects[i], record: rec });
    }
    await admit(batches('engage', arrival, routed) satisfies EngageBatch[], new Map(), acceptedAt);
    if (refused.length) return { status: 0 as const, error: DESTRUCTIVE_ERROR, applied: routed.length, refused };
    return { status: 1 as const, applied: routed.length };
  }

  /** Identity links from /alias (some are silently refused when applied). */
  async function alias(arrival: Arrival): Promise<{ status: 1 }> {
    const { payload } = arrival;
    if (!isPlainObject(payload) && !Array.isArray(payload)) throw new AppError(400, 'alias and distinct_id required');
    const drafts = asRecords(payload).map((r) => {
      const rec = isPlainObject(r) ? r : {};
      const a = idOf(rec.alias);
      const d = idOf(rec.distinct_id);
      if (!a || !d) throw new AppError(400, 'alias and distinct_id required');
      return { token: recordToken(rec.token), rec: { alias: a, distinct_id: d } as AliasRecord };
    });
    const projects = await arrival.projects(drafts.map((d) => d.token));
    await limit(arrival, projects, false);
    const routed = drafts.map((d, i) => ({ project: projects[i], record: d.rec }));
    await admit(batches('alias', arrival, routed) satisfies AliasBatch[], new Map(), arrival.acceptedAt);
    return { status: 1 };
  }

  return { track, engage, alias };
}
