/**
 * What flags need of cohorts, behind one small interface: validation (a rule's cohort must belong
 * to the flag's project) and membership of a canonical id (remote evaluation). The cohorts
 * domain's `CohortMembership` answers both.
 */
export interface CohortChecker {
  projectOf(cohortId: number): Promise<number | undefined>;
  isMember(projectId: number, cohortId: number, canonicalId: string): Promise<boolean>;
}
