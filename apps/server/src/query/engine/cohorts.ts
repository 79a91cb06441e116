import { badRequest } from '../../http/errors.js';
import { PERSON_KEY_SQL } from '../../ports/events/schema.js';
import { membershipSql } from '../../cohorts/membership.js';
import type { CohortDefinition } from '../../cohorts/schema.js';
import type { DefinitionStore } from '../../definitions/store.js';
import type { Dialect } from '../dialects/index.js';
import type { QueryContext } from './context.js';
import type { DateRange } from './range.js';
import { isCohortBreakdown, isCohortFilter, type Breakdown, type GlobalFilter, type IrIssue } from '../ir/schema.js';

/**
 * Cohorts in analyses: a cohort filter (`{cohort, op: 'in' | 'not_in'}` in a document's global
 * filters) and a breakdown by cohorts. Both are a condition on the event's canonical identity:
 * it is (not) among the cohort's members now, membershipSql's answer (the same as the cohort's
 * members, preview and size). The condition joins every `canonicalEvents` read of the run: the
 * query context's dialect is wrapped, so each analysis compiles as it does without cohorts and
 * its events are those of the members only. A breakdown by cohorts runs the analysis once per
 * cohort (kinds/trend, kinds/funnel) with that cohort as a filter.
 */
export interface ResolvedCohort { id: number; name: string; definition: CohortDefinition }
export interface CohortCondition { cohort: ResolvedCohort; op: 'in' | 'not_in' }

type CohortStore = Pick<DefinitionStore<CohortDefinition>, 'get'>;

/**
 * The cohorts a document names (filters and breakdown), from the project's store, and an issue
 * naming the field of each cohort that does not exist or belongs to another project.
 */
export async function lookupCohorts(store: CohortStore, projectId: number, doc: { filters?: GlobalFilter[]; breakdown?: Breakdown }): Promise<{ byId: Map<number, ResolvedCohort>; errors: IrIssue[] }> {
  const named: Array<[number, string]> = [];
  (doc.filters ?? []).forEach((f, i) => { if (isCohortFilter(f)) named.push([f.cohort, `filters.${i}.cohort`]); });
  if (isCohortBreakdown(doc.breakdown)) doc.breakdown.cohorts.forEach((id, i) => named.push([id, `breakdown.cohorts.${i}`]));
  const byId = new Map<number, ResolvedCohort>();
  const errors: IrIssue[] = [];
  for (const [id, path] of named) {
    if (byId.has(id)) continue;
    const row = await store.get(id);
    if (!row || row.project_id !== projectId) { errors.push({ path, message: `no cohort ${id} in this project`, code: 'unknown_reference' }); continue; }
    byId.set(id, { id, name: row.name, definition: row.definition });
  }
  return { byId, errors };
}

/** lookupCohorts, or 400 `invalid query` with its issues. */
export async function resolveCohorts(store: CohortStore, projectId: number, doc: { filters?: GlobalFilter[]; breakdown?: Breakdown }): Promise<Map<number, ResolvedCohort>> {
  const { byId, errors } = await lookupCohorts(store, projectId, doc);
  if (errors.length) throw badRequest('invalid query', { body: { errors } });
  return byId;
}

/** The document's cohort filters as conditions. */
export const filterConditions = (filters: GlobalFilter[] | undefined, cohorts: Map<number, ResolvedCohort>): CohortCondition[] =>
  (filters ?? []).flatMap((f) => (isCohortFilter(f) ? [{ cohort: cohorts.get(f.cohort)!, op: f.op }] : []));

/**
 * `q` whose dialect reads only the events whose identity satisfies every condition: each
 * `canonicalEvents` is wrapped in `WHERE cid [NOT] IN (members)` (identities resolved even where
 * the caller asked for none; `key` reads compare the members' person keys). Membership is asked
 * of the context without any cohort condition (`plain`), so nesting never restricts a membership itself.
 */
export function withCohorts(q: QueryContext, conds: CohortCondition[], now: number): QueryContext {
  if (conds.length === 0) return q;
  const base = q.d;
  const plain = q.plain ?? q;
  const members = conds.map((c) => ({ op: c.op, sql: membershipSql(plain, c.cohort.definition, { now }) }));
  const d: Dialect = Object.create(base) as Dialect;
  d.canonicalEvents = (opts) => {
    const key = opts.key ?? false;
    const inner = base.canonicalEvents({ ...opts, identity: true });
    const wheres = members.map((m) => `cid ${m.op === 'in' ? 'IN' : 'NOT IN'} (SELECT ${key ? PERSON_KEY_SQL[base.name]('m.cid') : 'm.cid'} FROM (${m.sql}) m)`);
    return `(SELECT * FROM ${inner} cf WHERE ${wheres.join(' AND ')})`;
  };
  return { ...q, d, plain };
}

/**
 * The segments of a breakdown by cohorts, in the order listed: each cohort's condition, named by
 * its name (a name two listed cohorts share gets ` #id` after it), then `Not in any cohort`
 * (members of none) when asked.
 */
export function cohortSegments(b: { cohorts: number[]; notInAny: boolean }, cohorts: Map<number, ResolvedCohort>, notInAnyName: string): Array<{ name: string; conds: CohortCondition[] }> {
  const list = b.cohorts.map((id) => cohorts.get(id)!);
  const names = list.map((c) => c.name);
  const segs: Array<{ name: string; conds: CohortCondition[] }> = list.map((c) => ({ name: names.filter((n) => n === c.name).length > 1 ? `${c.name} #${c.id}` : c.name, conds: [{ cohort: c, op: 'in' as const }] }));
  if (b.notInAny) segs.push({ name: notInAnyName, conds: list.map((c) => ({ cohort: c, op: 'not_in' as const })) });
  return segs;
}

/** Whether a document names a cohort (in its filters or its breakdown). */
export const namesCohorts = (doc: { filters?: GlobalFilter[]; breakdown?: Breakdown }): boolean =>
  isCohortBreakdown(doc.breakdown) || (doc.filters ?? []).some(isCohortFilter);

const DAY = 86_400_000;

/**
 * The event times a run naming cohorts reads, for the results cache: memberships read every event
 * up to now (a behaviour criterion's window ends now), so from the epoch to the end of today; the
 * answer is then live (kept only for the cache's freshness) and any day's new events invalidate it.
 * Undefined for a document naming none (its range, as before).
 */
export function cohortSpan(doc: { filters?: GlobalFilter[]; breakdown?: Breakdown }, range: DateRange, cmp: DateRange | undefined, now = Date.now()): DateRange | undefined {
  if (!namesCohorts(doc)) return undefined;
  const endOfToday = Math.floor(now / DAY) * DAY + DAY;
  return { fromMs: 0, toEndMs: Math.max(range.toEndMs, cmp?.toEndMs ?? 0, endOfToday) };
}
