import { rolloutBucket, variantBucket, type FlagConfig } from '../../../flag-evaluation/src/index.js';

/**
 * The hot path of `POST /flags/evaluate`: a project's live flags compiled once per load of the
 * live-flags cache (live.ts) into what evaluating them for one identity needs, and the answer
 * written as JSON text from pieces serialised at compile time.
 *
 * The rule walk is `evaluateFlag` of @tally-analytics/flag-evaluation (the one definition of the
 * rules, used by GET /flags, preview and the SDK) with its per-request work moved to compile time:
 * override lists become one project-wide map from id to the (flag, rule) pairs that list it, so an
 * identity on no list (the common case) costs one map lookup per request instead of a scan of
 * every list; a rule's named variant is an index; the variant thresholds are the same running sums
 * / 100; the bucketing calls are the same functions. Each result is the text JSON.stringify gives
 * for the FlagResult evaluateFlag returns, and the response is that of JSON.stringify({flags})
 * with the members in the order a JS object gives them (integer-like keys first, ascending, then
 * insertion order). test/flags-plan.test.ts compares both, bytes and all, on random flags and ids.
 */

const result = (enabled: boolean, variantJson: string, payloadJson: string, reason: string) =>
  `{"enabled":${enabled},"variant":${variantJson},"payload":${payloadJson},"reason":${JSON.stringify(reason)}}`;

export const NOT_FOUND_JSON = result(false, 'null', 'null', 'not_found');
const DISABLED_JSON = result(false, 'null', 'null', 'disabled');
const NO_MATCH_JSON = result(false, 'null', 'null', 'no_match');

/** A rule's `variant` names no variant of the flag (cannot be stored; evaluateFlag skips the rule). */
const MISSING_VARIANT = -2;
/** The rule serves the bucketed variant. */
const BUCKETED = -1;

export interface FlagPlan {
  key: string;
  /** Position in `ProjectPlan.flags`, the flag's number in `ProjectPlan.overrides`. */
  index: number;
  /** `"<key>":`, the member's name in the response. */
  member: string;
  active: boolean;
  /** Per rule: its cohort (undefined: none). */
  cohort: Array<number | undefined>;
  /** Per rule: it carries a non-empty override list. */
  listed: boolean[];
  rolloutPct: number[];
  /** Per rule: the index of its named variant, BUCKETED, or MISSING_VARIANT. */
  variant: number[];
  /** Running sums of the variants' percentages / 100, as pickVariant compares them. */
  thresholds: number[];
  /** JSON.stringify of each variant's key and of its payload (null when absent). */
  variantJson: string[];
  payloadJson: string[];
  /** The result text of rule i serving variant v (slot i * max(1, variants) + v), made on first use. */
  served: string[];
  /** Cohorts the flag's rules reference (empty for an inactive flag, whose rules are never read). */
  cohortIds: number[];
}

export interface ProjectPlan {
  /** The flags, each once, in the order the response lists them when no flag_keys are given. */
  flags: FlagPlan[];
  /** Always undefined: a plan is the selection of all its flags (evaluator.ts `Selection`). */
  names: undefined;
  byKey: Map<string, FlagPlan>;
  /** id -> flat pairs (flag index, rule index) of the override lists that hold it. */
  overrides: Map<string, number[]>;
  /** Cohorts referenced by the active flags. */
  cohortIds: number[];
  /** The live flags' definitions text the plan was compiled from (a reload with the same text keeps the plan). */
  source: string;
}

/** The order JSON.stringify lists an object's members in, for members set in `keys` order. */
export function memberOrder(keys: readonly string[]): number[] {
  const at: Record<string, number> = {};
  for (let i = 0; i < keys.length; i++) if (!Object.hasOwn(at, keys[i])) at[keys[i]] = i;
  // `__proto__` is no own member (assigning a number to it changes nothing), as in the object it mirrors
  return Object.keys(at).map((k) => at[k]);
}

function compileFlag(flag: FlagConfig, index: number): FlagPlan {
  const variants = flag.variants;
  const thresholds: number[] = [];
  let sumPct = 0;
  for (const v of variants) {
    sumPct += v.rolloutPct;
    thresholds.push(sumPct / 100);
  }
  const cohortIds = new Set<number>();
  const plan: FlagPlan = {
    key: flag.key,
    index,
    member: JSON.stringify(flag.key) + ':',
    active: flag.active,
    cohort: [],
    listed: [],
    rolloutPct: [],
    variant: [],
    thresholds,
    variantJson: variants.map((v) => JSON.stringify(v.key)),
    payloadJson: variants.map((v) => JSON.stringify(v.payload ?? null)),
    served: [],
    cohortIds: [],
  };
  for (const rule of flag.rules) {
    const cohort = rule.cohortId !== undefined && rule.cohortId !== null ? rule.cohortId : undefined;
    plan.cohort.push(cohort);
    if (cohort !== undefined && flag.active) cohortIds.add(cohort);
    plan.listed.push(!!rule.distinctIds && rule.distinctIds.length > 0);
    plan.rolloutPct.push(rule.rolloutPct);
    plan.variant.push(rule.variant !== undefined && rule.variant !== null ? variantIndex(flag, rule.variant) : BUCKETED);
  }
  plan.cohortIds = [...cohortIds];
  return plan;
}

function variantIndex(flag: FlagConfig, key: string): number {
  const i = flag.variants.findIndex((v) => v.key === key);
  return i < 0 ? MISSING_VARIANT : i;
}

/** Compiles a project's live flags (non-archived, in the order the store lists them). */
export function compileProject(list: readonly FlagConfig[], source: string): ProjectPlan {
  const order = memberOrder(list.map((f) => f.key));
  const flags = order.map((i, at) => compileFlag(list[i], at));
  const byKey = new Map(flags.map((f) => [f.key, f]));
  const overrides = new Map<string, number[]>();
  for (const f of flags) {
    const rules = list[order[f.index]].rules;
    for (let r = 0; r < rules.length; r++) {
      for (const id of rules[r].distinctIds ?? []) {
        let pairs = overrides.get(id);
        if (!pairs) overrides.set(id, (pairs = []));
        pairs.push(f.index, r);
      }
    }
  }
  const cohortIds = [...new Set(flags.flatMap((f) => f.cohortIds))];
  return { flags, names: undefined, byKey, overrides, cohortIds, source };
}

const holds = (pairs: number[] | undefined, flag: number, rule: number): boolean => {
  if (pairs === undefined) return false;
  for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === flag && pairs[i + 1] === rule) return true;
  return false;
};

/** What one request evaluates for: evaluateFlag's EvaluationIdentity, resolved against a plan. */
export interface PlanIdentity {
  bucketingId: string;
  /** Override pairs of the raw id and (when it differs) of the canonical id. */
  rawPairs: number[] | undefined;
  canonicalPairs: number[] | undefined;
  inCohort: (cohortId: number) => boolean;
}

/** The result text of `flag` for `who`: JSON.stringify(evaluateFlag(flag, identity)). */
export function evaluatePlan(flag: FlagPlan, who: PlanIdentity): string {
  if (!flag.active) return DISABLED_JSON;
  const rules = flag.rolloutPct.length;
  const variants = flag.thresholds.length;
  let rollout = -1;
  for (let i = 0; i < rules; i++) {
    const cohort = flag.cohort[i];
    if (cohort !== undefined && !who.inCohort(cohort)) continue;
    if (flag.listed[i] && !holds(who.rawPairs, flag.index, i) && !holds(who.canonicalPairs, flag.index, i)) continue;
    const pct = flag.rolloutPct[i];
    if (pct < 100) {
      if (pct <= 0) continue;
      if (rollout < 0) rollout = rolloutBucket(flag.key, who.bucketingId);
      if (!(rollout < pct / 100)) continue;
    }
    let v = -1;
    if (variants > 0) {
      v = flag.variant[i];
      if (v === MISSING_VARIANT) continue;
      if (v === BUCKETED) v = pick(flag, who.bucketingId);
    }
    return flag.served[i * (variants || 1) + (v < 0 ? 0 : v)] ??= served(flag, i, v);
  }
  return NO_MATCH_JSON;
}

/** pickVariant's choice, as an index. */
function pick(flag: FlagPlan, id: string): number {
  const b = variantBucket(flag.key, id);
  const t = flag.thresholds;
  for (let v = 0; v < t.length; v++) if (t[v] > b) return v;
  return t.length - 1;
}

function served(flag: FlagPlan, rule: number, v: number): string {
  const reason = `rule:${rule}`;
  return v < 0 ? result(true, 'null', 'null', reason) : result(true, flag.variantJson[v], flag.payloadJson[v], reason);
}
