import type { LinkIndex } from '../identity/link-index.js';
import { evaluateFlag, notFoundResult, type EvaluationIdentity, type FlagResult } from '@tally-analytics/flag-evaluation';
import type { CohortChecker } from './cohorts.js';
import type { FeatureFlag } from './schema.js';
import { evaluatePlan, memberOrder, memberText, NOT_FOUND_JSON, resultText, type FlagPlan, type PlanIdentity, type ProjectPlan } from './plan.js';

/** What one set of live flags needs for every request, computed once per set (the set is rebuilt when flags change). */
interface Prepared {
  entries: Array<[string, FeatureFlag]>;
  /** Cohorts referenced by active flags (empty: no store is touched for cohorts). */
  cohortIds: number[];
}

const prepared = new WeakMap<Map<string, FeatureFlag>, Prepared>();

function prepare(flags: Map<string, FeatureFlag>): Prepared {
  let p = prepared.get(flags);
  if (!p) {
    p = { entries: [...flags], cohortIds: cohortsOf(flags.values()) };
    prepared.set(flags, p);
  }
  return p;
}

function cohortsOf(flags: Iterable<FeatureFlag | undefined>): number[] {
  const ids = new Set<number>();
  for (const f of flags) {
    if (!f || !f.active) continue;
    for (const r of f.rules) if (r.cohortId !== undefined && r.cohortId !== null) ids.add(r.cohortId);
  }
  return [...ids];
}

const notInCohort = () => false;

/**
 * Remote evaluation (POST /flags/evaluate, GET /flags and the preview route): resolves the
 * identity's canonical id from the in-memory link index (identity/link-index.ts; rollout,
 * variants and cohorts use it; overrides match it and the raw id), checks the cohorts the flags
 * reference once each, then runs the shared evaluator (@tally-analytics/flag-evaluation). Flags
 * without cohort rules touch no store once the project's links are loaded.
 */
export class RemoteEvaluator {
  constructor(readonly links: LinkIndex, private cohorts: CohortChecker) {}

  /**
   * Evaluates `flags` (non-archived flags of one project) for `distinctId`. `keys`, when given,
   * picks and orders the result; keys without a live flag get `not_found`.
   */
  async evaluate(projectId: number, flags: Map<string, FeatureFlag>, distinctId: string, keys?: string[]): Promise<Record<string, FlagResult>> {
    let entries: Array<[string, FeatureFlag | undefined]>;
    let cohortIds: number[];
    if (keys) {
      entries = keys.map((k) => [k, flags.get(k)]);
      cohortIds = cohortsOf(entries.map((e) => e[1]));
    } else {
      ({ entries, cohortIds } = prepare(flags));
    }
    const resolved = this.links.canonicalOf(projectId, distinctId);
    const canonical = typeof resolved === 'string' ? resolved : await resolved;
    let inCohort: (id: number) => boolean = notInCohort;
    if (cohortIds.length > 0) {
      const membership = new Map<number, boolean>();
      await Promise.all(cohortIds.map(async (id) => membership.set(id, await this.cohorts.isMember(projectId, id, canonical))));
      inCohort = (id) => membership.get(id) === true;
    }
    const who: EvaluationIdentity = {
      bucketingId: canonical,
      overrideIds: canonical === distinctId ? [distinctId] : [distinctId, canonical],
      inCohort,
    };
    const out: Record<string, FlagResult> = {};
    for (let i = 0; i < entries.length; i++) {
      const [key, flag] = entries[i];
      out[key] = flag ? evaluateFlag(flag, who) : notFoundResult();
    }
    return out;
  }

  /**
   * `POST /flags/evaluate`: the body `{"flags": {...}}` of `evaluate` as JSON text, from the
   * project's compiled plan (plan.ts); the same bytes as JSON.stringify of evaluate's answer.
   * Synchronous unless the canonical id or a cohort needs a read.
   */
  evaluateJson(projectId: number, plan: ProjectPlan, distinctId: string, keys?: string[]): string | Promise<string> {
    const selection = select(plan, keys);
    const resolved = this.links.canonicalOf(projectId, distinctId);
    if (typeof resolved === 'string' && selection.cohortIds.length === 0) return evaluationJson(plan, selection, distinctId, resolved, notInCohort);
    return this.withCohorts(projectId, plan, selection, distinctId, resolved);
  }

  private async withCohorts(projectId: number, plan: ProjectPlan, selection: Selection, distinctId: string, resolved: string | Promise<string>): Promise<string> {
    const canonical = typeof resolved === 'string' ? resolved : await resolved;
    let inCohort: (id: number) => boolean = notInCohort;
    if (selection.cohortIds.length > 0) {
      const membership = new Map<number, boolean>();
      await Promise.all(selection.cohortIds.map(async (id) => membership.set(id, await this.cohorts.isMember(projectId, id, canonical))));
      inCohort = (id) => membership.get(id) === true;
    }
    return evaluationJson(plan, selection, distinctId, canonical, inCohort);
  }
}

/** The flags one request answers, in the response's member order. */
export interface Selection {
  flags: ReadonlyArray<FlagPlan | undefined>;
  /** flag_keys given: the member names (undefined flags answer not_found); else the plan's flags. */
  names: string[] | undefined;
  /** Cohorts the selected flags reference (each is checked once per request). */
  cohortIds: number[];
}

export function select(plan: ProjectPlan, keys?: string[]): Selection {
  if (!keys) return plan;
  const names = memberOrder(keys).map((i) => keys[i]);
  const flags = names.map((k) => plan.byKey.get(k));
  return { flags, names, cohortIds: [...new Set(flags.flatMap((f) => f?.cohortIds ?? []))] };
}

/** `{"flags":{…}}`: each selected flag's member and result text. */
export function evaluationJson(plan: ProjectPlan, selection: Selection, distinctId: string, canonical: string, inCohort: (id: number) => boolean): string {
  const who: PlanIdentity = {
    bucketingId: canonical,
    rawPairs: plan.overrides.get(distinctId),
    canonicalPairs: canonical === distinctId ? undefined : plan.overrides.get(canonical),
    inCohort,
  };
  const { flags, names } = selection;
  let out = '{"flags":{';
  if (names) {
    for (let i = 0; i < flags.length; i++) {
      const flag = flags[i];
      out += (i > 0 ? ',' : '') + JSON.stringify(names[i]) + ':' + (flag ? resultText(flag, evaluatePlan(flag, who)) : NOT_FOUND_JSON);
    }
  } else {
    for (let i = 0; i < flags.length; i++) out += memberText(flags[i]!, evaluatePlan(flags[i]!, who));
  }
  return out + '}}';
}
