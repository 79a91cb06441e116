import { IdentityStore } from '../identity/store.js';
import type { Db } from '../ports/metadata/knex.js';
import { evaluateFlag, notFoundResult, type FlagResult } from '../../../flag-evaluation/src/index.js';
import type { CohortChecker } from './cohorts.js';
import type { FeatureFlag } from './schema.js';

/**
 * Remote evaluation (POST /flags/evaluate and the preview route): resolves the identity's
 * canonical id (rollout, variants and cohorts use it; overrides match it and the raw id), checks
 * the cohorts the flags reference once each, then runs the shared evaluator (@tally-analytics/flag-evaluation).
 */
export class RemoteEvaluator {
  private identity: IdentityStore;

  constructor(db: Db, private cohorts: CohortChecker) {
    this.identity = new IdentityStore(db);
  }

  /**
   * Evaluates `flags` (non-archived flags of one project) for `distinctId`. `keys`, when given,
   * picks and orders the result; keys without a live flag get `not_found`.
   */
  async evaluate(projectId: number, flags: Map<string, FeatureFlag>, distinctId: string, keys?: string[]): Promise<Record<string, FlagResult>> {
    const chosen: Array<[string, FeatureFlag | undefined]> = keys ? keys.map((k) => [k, flags.get(k)]) : [...flags].map(([k, f]) => [k, f]);
    const canonical = await this.identity.canonicalOf(projectId, distinctId);
    const cohortIds = new Set<number>();
    for (const [, f] of chosen) {
      if (!f || !f.active) continue;
      for (const r of f.rules) if (r.cohortId !== undefined && r.cohortId !== null) cohortIds.add(r.cohortId);
    }
    const membership = new Map<number, boolean>();
    await Promise.all([...cohortIds].map(async (id) => membership.set(id, await this.cohorts.isMember(projectId, id, canonical))));
    const who = {
      bucketingId: canonical,
      overrideIds: canonical === distinctId ? [distinctId] : [distinctId, canonical],
      inCohort: (id: number) => membership.get(id) === true,
    };
    const out: Record<string, FlagResult> = {};
    for (const [key, flag] of chosen) out[key] = flag ? evaluateFlag(flag, who) : notFoundResult();
    return out;
  }
}
