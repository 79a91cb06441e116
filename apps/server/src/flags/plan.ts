import { rolloutBucket as rolloutBucketOf, variantBucket as variantBucketOf, type FlagConfig, type FlagResult, type FlagVariantDef } from '@tally-analytics/flag-evaluation';

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
 * / 100; the bucketing calls are the same functions. The walk answers an outcome number (disabled,
 * no_match, or rule i serving variant v), whose text is made once per flag on first use: the
 * FlagResult evaluateFlag returns as JSON.stringify writes it, alone (flag_keys) or with the
 * flag's member name before it. The response is that of JSON.stringify({flags})
 * with the members in the order a JS object gives them (integer-like keys first, ascending, then
 * insertion order). test/flags-plan.test.ts compares both, bytes and all, on random flags and ids.
 */

// Module-local bindings: where the sources run through a CommonJS transform (tsx, as the benchmark
// runs the service), every use of an imported name is a property read; 150 calls per request.
const rolloutBucket = rolloutBucketOf;
const variantBucket = variantBucketOf;

/**
 * A result's text, by JSON.stringify itself: the text it gives for the FlagResult of evaluateFlag,
 * by construction, as one flat string.
 */
const result = (enabled: boolean, variant: string | null, payload: unknown, reason: string): string =>
  JSON.stringify({ enabled, variant, payload, reason } satisfies FlagResult);

export const NOT_FOUND_JSON = result(false, null, null, 'not_found');

/**
 * A flat copy of a concatenation. The response is a concatenation of one piece per flag, which the
 * write copies out; a piece that is itself a tree of concatenations is walked again on every request.
 */
const flat = (s: string): string => JSON.parse(JSON.stringify(s)) as string;

/** Outcomes: disabled, no_match, then rule i serving variant v at FIRST_SERVED + i * max(1, variants) + max(0, v). */
const DISABLED = 0;
const NO_MATCH = 1;
const FIRST_SERVED = 2;

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
  /** The rule indexes in order, and those of the rules without an override list (all an identity on no list can match). */
  rules: number[];
  plainRules: number[];
  /** Per rule: its cohort (undefined: none). */
  cohort: Array<number | undefined>;
  /** Per rule: it carries a non-empty override list. */
  listed: boolean[];
  rolloutPct: number[];
  /** Per rule: the index of its named variant, BUCKETED, or MISSING_VARIANT. */
  variant: number[];
  /** Running sums of the variants' percentages / 100, as pickVariant compares them. */
  thresholds: number[];
  variants: FlagVariantDef[];
  /** Per outcome, made on first use: the result text, and `"<key>":` + that text (with a comma before it unless the flag is the first). */
  results: string[];
  members: string[];
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
    rules: [],
    plainRules: [],
    cohort: [],
    listed: [],
    rolloutPct: [],
    variant: [],
    thresholds,
    variants,
    results: [],
    members: [],
    cohortIds: [],
  };
  for (const [i, rule] of flag.rules.entries()) {
    plan.rules.push(i);
    if (!rule.distinctIds || rule.distinctIds.length === 0) plan.plainRules.push(i);
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

/** The outcome of evaluateFlag(flag, identity) (see DISABLED, NO_MATCH, FIRST_SERVED). */
export function evaluatePlan(flag: FlagPlan, who: PlanIdentity): number {
  if (!flag.active) return DISABLED;
  const rules = who.rawPairs === undefined && who.canonicalPairs === undefined ? flag.plainRules : flag.rules;
  const variants = flag.thresholds.length;
  let rollout = -1;
  for (let k = 0; k < rules.length; k++) {
    const i = rules[k];
    const cohort = flag.cohort[i];
    if (cohort !== undefined && !who.inCohort(cohort)) continue;
    if (flag.listed[i] && !holds(who.rawPairs, flag.index, i) && !holds(who.canonicalPairs, flag.index, i)) continue;
    const pct = flag.rolloutPct[i];
    if (pct < 100) {
      if (pct <= 0) continue;
      if (rollout < 0) rollout = rolloutBucket(flag.key, who.bucketingId);
      if (!(rollout < pct / 100)) continue;
    }
    if (variants === 0) return FIRST_SERVED + i;
    let v = flag.variant[i];
    if (v === MISSING_VARIANT) continue;
    if (v === BUCKETED) v = pick(flag, who.bucketingId);
    return FIRST_SERVED + i * variants + v;
  }
  return NO_MATCH;
}

/** pickVariant's choice, as an index. */
function pick(flag: FlagPlan, id: string): number {
  const b = variantBucket(flag.key, id);
  const t = flag.thresholds;
  for (let v = 0; v < t.length; v++) if (t[v] > b) return v;
  return t.length - 1;
}

/** JSON.stringify of the FlagResult of `outcome`. */
export function resultText(flag: FlagPlan, outcome: number): string {
  let text = flag.results[outcome];
  if (text === undefined) {
    if (outcome === DISABLED) text = result(false, null, null, 'disabled');
    else if (outcome === NO_MATCH) text = result(false, null, null, 'no_match');
    else {
      const variants = flag.variants.length;
      const rule = variants === 0 ? outcome - FIRST_SERVED : Math.floor((outcome - FIRST_SERVED) / variants);
      const v = flag.variants[(outcome - FIRST_SERVED) % (variants || 1)];
      text = variants === 0 ? result(true, null, null, `rule:${rule}`) : result(true, v.key, v.payload ?? null, `rule:${rule}`);
    }
    flag.results[outcome] = text;
  }
  return text;
}

/** The flag's member in the whole-project response: `,"<key>":<result>` (no comma for the first flag). */
export function memberText(flag: FlagPlan, outcome: number): string {
  return (flag.members[outcome] ??= flat((flag.index > 0 ? ',' : '') + flag.member + resultText(flag, outcome)));
}
