import { z } from 'zod';

/**
 * viewer: read and query. member: also writes reports, boards, cohorts, flags, annotations,
 * lexicon, definitions. admin: also projects and members. owner: everything, including flag
 * secrets, destructive /engage verbs and privacy deletions.
 */
export const ROLES = ['viewer', 'member', 'admin', 'owner'] as const;
export type Role = (typeof ROLES)[number];
export const RoleSchema = z.enum(ROLES);

export const roleAtLeast = (role: Role, min: Role) => ROLES.indexOf(role) >= ROLES.indexOf(min);
