import { route, type RouteSpec } from '../http/route.js';
import { requireRole } from '../auth/context.js';
import { orgActor } from '../orgs/members.js';
import type { AuditStore } from './store.js';
import { AdminAuditQuery, AuditPageSchema, AuditQuery } from './schema.js';

/**
 * The audit log: an organisation's changes for its admins and owners, every organisation's for the
 * superadmin. Read-only: rows are written by the services, in the transaction of each change.
 */
export function auditRoutes(audit: AuditStore): RouteSpec[] {
  return [
    route({
      method: 'get', path: '/api/audit-log', tag: 'Audit', auth: 'api', query: AuditQuery, response: AuditPageSchema,
      summary: "The organisation's audit log, newest first (admin); filters projectId, action, actorKind, targetKind, from, to; cursor paging",
      handler: ({ ctx, query }) => {
        const actor = orgActor(requireRole(ctx, 'admin'));
        return audit.list({ ...query, organizationId: actor.orgId });
      },
    }),
    route({
      method: 'get', path: '/admin/audit-log', tag: 'Admin', auth: 'admin', query: AdminAuditQuery, response: AuditPageSchema,
      summary: "Every organisation's audit log, newest first (superadmin); the same filters and organizationId",
      handler: ({ query }) => audit.list(query),
    }),
  ];
}
