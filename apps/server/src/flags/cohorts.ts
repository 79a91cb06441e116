import type { Deps } from '../deps.js';
import { cohortProjectId, isCohortMember } from '../cohorts/membership.js';

/**
 * What flags need of cohorts, behind one small interface: validation (a rule's cohort must belong
 * to the flag's project) and membership of a canonical id (remote evaluation). The cohorts
 * domain's membership module answers both.
 */
export interface CohortChecker {
  projectOf(cohortId: number): Promise<number | undefined>;
  isMember(projectId: number, cohortId: number, canonicalId: string): Promise<boolean>;
}

export function cohortChecker(deps: Deps): CohortChecker {
  return {
    projectOf: (cohortId) => cohortProjectId(deps, cohortId),
    isMember: (projectId, cohortId, canonicalId) => isCohortMember(deps, projectId, cohortId, canonicalId),
  };
}
