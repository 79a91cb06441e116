import { z } from 'zod';
import './openapi-zod.js';
import { OrgName } from '@tally-analytics/server/schemas';
import { BaseStatusShape, DELETION_POLICIES, Email, NamespaceName, type KindDefinition, type Resource } from './meta.js';

export const MEMBER_ROLES = ['viewer', 'member', 'admin', 'owner'] as const;

/**
 * Organization (cluster-scoped): an organisation of the service, the namespaces whose resources may
 * act for it (the boundary between teams), its quota, and optionally its members and the identity
 * provider groups that give a role in it.
 */
export const OrganizationSpecSchema = z.object({
  displayName: OrgName,
  namespaces: z.array(NamespaceName).min(1).max(1000).meta({ 'x-kubernetes-list-type': 'set' }),
  monthlyEventQuota: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
  members: z
    .array(z.object({ email: Email, role: z.enum(MEMBER_ROLES) }).strict())
    .max(10_000)
    .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['email'] })
    .optional(),
  groups: z
    .array(z.object({ name: z.string().min(1).max(256), role: z.enum(MEMBER_ROLES) }).strict())
    .max(1000)
    .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] })
    .optional(),
  deletionPolicy: z.enum(DELETION_POLICIES).default('Retain'),
}).strict();
export type OrganizationSpec = z.output<typeof OrganizationSpecSchema>;

export const OrganizationStatusSchema = z.object({
  ...BaseStatusShape,
  organizationId: z.number().int().positive().optional(),
  /** This month's events against the quota (refreshed at most once a minute). */
  usage: z
    .object({
      month: z.string(),
      events: z.number().int().min(0),
      monthlyEventQuota: z.number().int().min(0).optional(),
    })
    .optional(),
});
export type OrganizationStatus = z.infer<typeof OrganizationStatusSchema>;

export type Organization = Resource<'Organization', OrganizationSpec, OrganizationStatus>;

export const ORGANIZATION: KindDefinition<'Organization'> = {
  kind: 'Organization',
  plural: 'organizations',
  singular: 'organization',
  shortNames: ['torg'],
  scope: 'Cluster',
  readyLast: true,
  spec: OrganizationSpecSchema,
  status: OrganizationStatusSchema,
  columns: [
    { name: 'ID', type: 'integer', jsonPath: '.status.organizationId' },
    { name: 'Events', type: 'integer', jsonPath: '.status.usage.events' },
    { name: 'Quota', type: 'integer', jsonPath: '.status.usage.monthlyEventQuota' },
    { name: 'Display Name', type: 'string', jsonPath: '.spec.displayName', priority: 1 },
  ],
};
