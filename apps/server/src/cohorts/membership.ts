import { sqlInt, type EventStore } from '../ports/events/index.js';
import { DAY_MS } from '../query/dialects/index.js';
import { filterSql } from '../query/engine/filters.js';
import { dedupOf, type QueryContext, type QueryContexts } from '../query/engine/context.js';
import type { DefinitionStore } from '../definitions/store.js';
import type { CohortCriterion, CohortDefinition } from './schema.js';

/**
 * Cohort membership, evaluated by one event-store query (reused by members listing, preview,
 * size and remote flag evaluation).
 *
 * Universe: every canonical identity with an event (any time) or a live profile.
 * - property criteria look at the live profiles of the identity's cluster (links resolve
 *   profiles regardless of from_time): eq/contains/set hold when some profile matches;
 *   neq/not_set are their negations (so an identity without profile has `not_set` of every key).
 * - behaviour criteria count the identity's events matching the event name (or `$all_events`, or
 *   a derived event) in the last `windowDays` days before `now` (0 = all time), compared with `op`.
 * - static criteria hold for the identities their listed distinct ids resolve to now (through their
 *   events or their profiles); a listed id with neither selects nobody.
 */
export function membershipSql(q: QueryContext, def: CohortDefinition, opts: { now: number; canonicalId?: string }): string {
  const { d } = q;
  const criteria = def.criteria;
  const flag = (cond: string, i: number) => `${d.flag(cond)} AS c${i}`;
  const eventCols = criteria.map((c, i) => {
    if (c.kind !== 'behavior') return flag('1 = 0', i);
    const inWindow = c.windowDays > 0 ? ` AND time >= ${sqlInt(opts.now - c.windowDays * DAY_MS)}` : '';
    return flag(`(${q.events.condition(c.event)}${inWindow})`, i);
  });
  const profileCols = criteria.map((c, i) => (c.kind !== 'property' ? flag('1 = 0', i) : flag(`(${filterSql(d, positive(c.filter), 'profile_keys', 'profile_values')})`, i)));
  const where: string[] = [];
  if (opts.canonicalId !== undefined) {
    const id = d.str(opts.canonicalId);
    where.push(`distinct_id = ${id} OR distinct_id IN (${d.linkedIds(q.projectId, id)})`);
  }
  const needProps = criteria.some((c) => c.kind === 'behavior' && q.events.needsProps(c.event));
  const evSel = ['cid', ...eventCols].join(', ');
  const zeroSel = ['cid', ...criteria.map((_, i) => flag('1 = 0', i))].join(', ');
  // Behaviour counts read only the events some criterion counts (deduplicated); the universe
  // (identities with any event) comes from canonicalIds, which needs no deduplication.
  const counted = criteria.flatMap((c) => (c.kind === 'behavior'
    ? [`(${q.events.condition(c.event)}${c.windowDays > 0 ? ` AND time >= ${sqlInt(opts.now - c.windowDays * DAY_MS)}` : ''})`] : []));
  const countedSql = counted.length
    ? `SELECT ${evSel} FROM ${q.d.canonicalEvents({ projectId: q.projectId, overrides: q.overrides, where: [...where, counted.join(' OR ')], props: needProps, dedup: dedupOf(q) })} ce
      UNION ALL
      ` : '';
  const prSel = ['cid', ...profileCols].join(', ');
  // Identities with no counted event and no profile: only worth listing (a pass over every event)
  // when such an identity (every count 0, no profile) satisfies the definition.
  const universeSql = holdsWithoutData(def)
    ? `SELECT ${zeroSel} FROM ${q.d.canonicalIds(q.projectId, where, q.overrides)} ci
      UNION ALL
      ` : '';
  // A static criterion's listed ids: the identities they resolve to now, from their events and
  // from their profiles (one branch each; c{i} is 1 on this criterion's rows only).
  const staticSql = criteria.map((c, i) => {
    if (c.kind !== 'static') return '';
    const listed = `distinct_id IN (${c.ids.map((id) => d.str(id)).join(', ')})`;
    const sel = ['cid', ...criteria.map((_, j) => flag(j === i ? '1 = 1' : '1 = 0', j))].join(', ');
    return `SELECT ${sel} FROM ${q.d.canonicalIds(q.projectId, [...where, listed], q.overrides)} si${i}
      UNION ALL
      SELECT ${sel} FROM ${q.d.canonicalProfiles(q.projectId, [...where, listed])} sp${i}
      UNION ALL
      `;
  }).join('');
  const agg = criteria.map((c, i) => (c.kind === 'behavior' ? `sum(c${i}) AS n${i}` : `max(c${i}) AS n${i}`));
  const conds = criteria.map((c, i) => criterionCondition(c, `n${i}`));
  const combined = conds.length === 0 ? (def.op === 'and' ? '1 = 1' : '1 = 0') : conds.map((c) => `(${c})`).join(def.op === 'and' ? ' AND ' : ' OR ');
  const idFilter = opts.canonicalId !== undefined ? ` WHERE cid = ${d.str(opts.canonicalId)}` : '';
  return `SELECT cid FROM (
    SELECT cid${agg.length ? ', ' + agg.join(', ') : ''} FROM (
      ${countedSql}${universeSql}${staticSql}SELECT ${prSel} FROM ${q.d.canonicalProfiles(q.projectId, where)}
    )${idFilter} GROUP BY cid
  ) WHERE ${combined}`;
}

function positive(f: { key: string; op: string; value?: string }) {
  if (f.op === 'neq') return { ...f, op: 'eq' as const };
  if (f.op === 'not_set') return { ...f, op: 'set' as const };
  return f as { key: string; op: 'eq' | 'contains' | 'set'; value?: string };
}

/** Whether an identity with no counted event and no profile satisfies the definition. */
export function holdsWithoutData(def: CohortDefinition): boolean {
  const holds = (c: CohortCriterion): boolean => {
    if (c.kind === 'property') return c.filter.op === 'neq' || c.filter.op === 'not_set';
    if (c.kind === 'static') return false;
    return { gte: 0 >= c.count, lte: 0 <= c.count, gt: 0 > c.count, lt: 0 < c.count, eq: 0 === c.count }[c.op];
  };
  return def.op === 'and' ? def.criteria.every(holds) : def.criteria.some(holds);
}

function criterionCondition(c: CohortCriterion, col: string): string {
  if (c.kind === 'property') {
    const negated = c.filter.op === 'neq' || c.filter.op === 'not_set';
    return negated ? `${col} = 0` : `${col} = 1`;
  }
  if (c.kind === 'static') return `${col} = 1`;
  const op = { gte: '>=', lte: '<=', gt: '>', lt: '<', eq: '=' }[c.op];
  return `${col} ${op} ${sqlInt(c.count)}`;
}

/**
 * Membership questions the routes and remote flag evaluation ask, built once at start-up from the
 * event store, the query contexts and the cohort store.
 */
export class CohortMembership {
  constructor(private events: EventStore, private contexts: QueryContexts, private cohorts: DefinitionStore<CohortDefinition>) {}

  /** The same questions asked of another view of the event store (the query executor's, for the cohort routes). */
  on(events: EventStore): CohortMembership {
    return new CohortMembership(events, this.contexts, this.cohorts);
  }

  /** Canonical ids of the cohort defined by `def`, sorted. */
  async members(projectId: number, def: CohortDefinition, opts: { limit?: number; now?: number } = {}): Promise<string[]> {
    const q = await this.contexts.forProject(projectId);
    const sql = `${membershipSql(q, def, { now: opts.now ?? Date.now() })} ORDER BY cid${opts.limit !== undefined ? ` LIMIT ${sqlInt(opts.limit)}` : ''}`;
    return (await this.events.query<{ cid: string }>(sql)).map((r) => r.cid);
  }

  async size(projectId: number, def: CohortDefinition, now = Date.now()): Promise<number> {
    const q = await this.contexts.forProject(projectId);
    const rows = await this.events.query<{ n: number }>(`SELECT count(*) AS n FROM (${membershipSql(q, def, { now })}) m`);
    return Number(rows[0]?.n ?? 0);
  }

  /** The project a cohort belongs to (undefined when the cohort does not exist). */
  async projectOf(cohortId: number): Promise<number | undefined> {
    return (await this.cohorts.get(cohortId))?.project_id;
  }

  /**
   * Whether the identity `canonicalId` (a cluster's canonical id) belongs to the cohort now.
   * False when the cohort does not exist or belongs to another project.
   */
  async isMember(projectId: number, cohortId: number, canonicalId: string): Promise<boolean> {
    const cohort = await this.cohorts.get(cohortId);
    if (!cohort || cohort.project_id !== projectId) return false;
    const q = await this.contexts.forProject(projectId);
    const rows = await this.events.query<{ cid: string }>(membershipSql(q, cohort.definition, { now: Date.now(), canonicalId }));
    return rows.length > 0;
  }
}
