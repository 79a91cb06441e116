import { queryString, request } from '../../api.js';
import type { ActorKind, TargetKind } from './kinds.js';

/**
 * `GET /api/audit-log`'s answer. Written out here because the server's `./schemas` entry does not
 * export `AuditPageSchema` (apps/server/src/audit/schema.ts); keep the two the same.
 */
export interface AuditEntry {
  id: number;
  at: number;
  actor: { kind: ActorKind; id: number | null; resource?: string };
  organizationId: number | null;
  projectId?: number;
  action: string;
  target: { kind: TargetKind; id: number | null };
  before: unknown;
  after: unknown;
}
export interface AuditPage {
  entries: AuditEntry[];
  nextCursor: string | null;
}

/** The filters `GET /api/audit-log` takes; times are Unix ms (`to` exclusive). */
export interface AuditFilters {
  projectId?: string;
  action?: string;
  actorKind?: string;
  targetKind?: string;
  from?: number;
  to?: number;
  /** As the address gives it: the API names a bad one. */
  limit?: string;
}

/** `GET /api/org/members` (one row of the server's MembershipSchema, the fields read here). */
export interface Member {
  email: string;
  user_id: number | null;
}

export const auditApi = {
  /** The caller's organisation; the superadmin (no organisation of its own) reads `organizationId`'s. */
  page: (f: AuditFilters, cursor: string | undefined, superadminOrgId?: number) =>
    superadminOrgId === undefined
      ? request<AuditPage>('GET', `/api/audit-log${queryString({ ...f, cursor })}`)
      : request<AuditPage>('GET', `/admin/audit-log${queryString({ ...f, cursor, organizationId: superadminOrgId })}`),
  members: (superadminOrgId?: number) =>
    request<Member[]>('GET', superadminOrgId === undefined ? '/api/org/members' : `/admin/orgs/${superadminOrgId}/members`),
};
