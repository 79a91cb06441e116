import type { Deps } from '../deps.js';

/**
 * What flags need of cohorts, behind one small interface: validation (a rule's cohort must belong
 * to the flag's project) and membership of a canonical id (remote evaluation).
 */
export interface CohortChecker {
  projectOf(cohortId: number): Promise<number | undefined>;
  isMember(projectId: number, cohortId: number, canonicalId: string): Promise<boolean>;
}

interface MembershipModule {
  cohortProjectId(deps: Deps, cohortId: number): Promise<number | undefined>;
  isCohortMember(deps: Deps, projectId: number, cohortId: number, canonicalId: string): Promise<boolean>;
}

/**
 * The cohorts domain's `cohorts/membership.ts` when it is present; until then, the project of a
 * cohort is read from the `cohorts` metadata table (if any) and nobody is a member.
 */
export function cohortChecker(deps: Deps): CohortChecker {
  let mod: Promise<MembershipModule | undefined> | undefined;
  const membership = () =>
    (mod ??= import(/* cohorts domain */ ['..', 'cohorts', 'membership.js'].join('/')).then(
      (m) => m as MembershipModule,
      () => undefined,
    ));
  return {
    async projectOf(cohortId) {
      const m = await membership();
      if (m) return m.cohortProjectId(deps, cohortId);
      if (!(await deps.db.schema.hasTable('cohorts'))) return undefined;
      const row = await deps.db('cohorts').where({ id: cohortId }).first('project_id');
      return row ? Number(row.project_id) : undefined;
    },
    async isMember(projectId, cohortId, canonicalId) {
      const m = await membership();
      return m ? m.isCohortMember(deps, projectId, cohortId, canonicalId) : false;
    },
  };
}
