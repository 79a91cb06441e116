/**
 * `@tally-analytics/flag-evaluation`: THE bucketing and rule-evaluation implementation, imported
 * by the server (remote evaluation, preview, the local-evaluation definitions) and by the Node SDK
 * (local evaluation, a dependency of its package). It depends on nothing but `node:crypto`.
 * Other SDKs prove they agree with `test/vectors/flag-bucketing.json`.
 *
 * docs/decisions.md, "Feature-flag bucketing": bucket(s) = first 13 hex digits of SHA-1(UTF-8 s) / 2^52, in [0, 1).
 * Rollout: bucket("<flag_key>.<id>") < rolloutPct / 100.
 * Variant: unless the rule names one, walk variants in order summing rolloutPct / 100 and serve the
 * first whose running sum exceeds bucket("<flag_key>.<id>.variant"). The running sum is kept as an
 * integer number of percent and divided by 100 once per comparison, so every language computes
 * bit-identical thresholds (no accumulated float error).
 */
import { createHash, hash as oneShotHash } from 'node:crypto';
import { asciiBucket } from './sha1.js';

const TWO_POW_52 = 2 ** 52;
const VARIANT_SUFFIX = '.variant';
/** A module-local binding: where the sources run through a CommonJS transform (tsx), each use of an imported name is a property read. */
const jsBucket = asciiBucket;

const sha1Hex: (s: string) => string =
  typeof oneShotHash === 'function'
    ? (s) => oneShotHash('sha1', s, 'hex')
    : (s) => createHash('sha1').update(s, 'utf8').digest('hex');

/** bucket(a + b + c + d): ASCII by sha1.ts, any other string (or a long one) by node:crypto. */
function joinedBucket(a: string, b: string, c: string, d: string): number {
  const v = jsBucket(a, b, c, d);
  return v >= 0 ? v : parseInt(sha1Hex(a + b + c + d).slice(0, 13), 16) / TWO_POW_52;
}

/** A value in [0, 1) derived from SHA-1 of the UTF-8 string `s` (52 bits, exact in a double). */
export function bucket(s: string): number {
  return joinedBucket(s, '', '', '');
}

/** bucket("<flagKey>.<id>"), the rollout bucket, without building the string. */
export const rolloutBucket = (flagKey: string, id: string): number => joinedBucket(flagKey, '.', id, '');

/** bucket("<flagKey>.<id>.variant"), the variant bucket, without building the string. */
export const variantBucket = (flagKey: string, id: string): number => joinedBucket(flagKey, '.', id, VARIANT_SUFFIX);

export interface FlagVariantDef {
  key: string;
  payload?: unknown;
  rolloutPct: number;
}

export interface FlagRuleDef {
  rolloutPct: number;
  cohortId?: number;
  distinctIds?: string[];
  variant?: string;
}

/** What evaluation needs of a flag (a FeatureFlag or a FlagDefinition both fit). */
export interface FlagConfig {
  key: string;
  active: boolean;
  variants: FlagVariantDef[];
  rules: FlagRuleDef[];
}

export interface FlagResult {
  enabled: boolean;
  variant: string | null;
  payload: unknown;
  reason: string;
}

export const REASON = {
  noMatch: 'no_match',
  disabled: 'disabled',
  notFound: 'not_found',
  rule: (i: number) => `rule:${i}`,
} as const;

export const notFoundResult = (): FlagResult => ({ enabled: false, variant: null, payload: null, reason: REASON.notFound });

/** The variant a bucketing id gets when the rule does not name one (undefined without variants). */
export function pickVariant(flagKey: string, id: string, variants: FlagVariantDef[]): FlagVariantDef | undefined {
  if (variants.length === 0) return undefined;
  const b = variantBucket(flagKey, id);
  let sumPct = 0;
  for (const v of variants) {
    sumPct += v.rolloutPct;
    if (sumPct / 100 > b) return v;
  }
  // Unreachable when the percentages sum to 100 (100/100 = 1 > every bucket).
  return variants[variants.length - 1];
}

export interface EvaluationIdentity {
  /** The id hashed for rollout and variant: the canonical id remotely, the raw distinct_id locally. */
  bucketingId: string;
  /** Ids an exact `distinctIds` override matches (the raw id and, remotely, the canonical id). */
  overrideIds: readonly string[];
  /** Cohort membership of the canonical id; undefined when no cohort can be checked (local evaluation). */
  inCohort?: (cohortId: number) => boolean;
}

/**
 * First matching rule wins. A rule matches when every condition it carries holds: membership of
 * its cohort, presence in its override list, and the rollout bucket below its percentage.
 */
export function evaluateFlag(flag: FlagConfig, who: EvaluationIdentity): FlagResult {
  if (!flag.active) return { enabled: false, variant: null, payload: null, reason: REASON.disabled };
  let rollout: number | undefined;
  for (let i = 0; i < flag.rules.length; i++) {
    const rule = flag.rules[i];
    if (rule.cohortId !== undefined && rule.cohortId !== null) {
      if (!who.inCohort || !who.inCohort(rule.cohortId)) continue;
    }
    if (rule.distinctIds && rule.distinctIds.length > 0) {
      let listed = false;
      for (const id of who.overrideIds) if (rule.distinctIds.includes(id)) { listed = true; break; }
      if (!listed) continue;
    }
    if (rule.rolloutPct < 100) {
      if (rule.rolloutPct <= 0) continue;
      rollout ??= rolloutBucket(flag.key, who.bucketingId);
      if (!(rollout < rule.rolloutPct / 100)) continue;
    }
    if (flag.variants.length === 0) return { enabled: true, variant: null, payload: null, reason: REASON.rule(i) };
    const variant = rule.variant !== undefined && rule.variant !== null
      ? flag.variants.find((v) => v.key === rule.variant)
      : pickVariant(flag.key, who.bucketingId, flag.variants);
    if (!variant) continue; // a rule naming a variant that no longer exists cannot be stored; defensive
    return { enabled: true, variant: variant.key, payload: variant.payload ?? null, reason: REASON.rule(i) };
  }
  return { enabled: false, variant: null, payload: null, reason: REASON.noMatch };
}

/** True when no rule needs server-side state (cohorts): the SDK may evaluate the flag in process. */
export const isLocallyEvaluable = (flag: { rules: FlagRuleDef[] }) =>
  flag.rules.every((r) => r.cohortId === undefined || r.cohortId === null);

/** A FlagDefinition as served by `GET /flags/local-evaluation` and evaluated by SDKs in process. */
export interface FlagDefinition {
  key: string;
  name: string;
  active: boolean;
  variants: FlagVariantDef[];
  rules: FlagRuleDef[];
  localEvaluable: boolean;
}

/** The definition of a flag (a FeatureFlag has more fields; only these are served). */
export const toFlagDefinition = (f: FlagConfig & { name: string }): FlagDefinition => ({
  key: f.key,
  name: f.name,
  active: f.active,
  variants: f.variants,
  rules: f.rules,
  localEvaluable: isLocallyEvaluable(f),
});
