import { z } from 'zod';
import { RoleSchema } from '../auth/roles.js';

export const OrganizationSchema = z
  .object({
    id: z.number().int(), name: z.string(), monthly_event_quota: z.number().int().nullable(), created_at: z.number().int(),
    managed_by: z.string().nullable().openapi({ description: 'the resource (`Organization/<name>`) that owns the organisation, or null' }),
    members_managed_by: z.string().nullable().openapi({ description: 'the resource that owns the invited membership list (hand edits: 409), or null' }),
    namespaces: z.array(z.string()).nullable().openapi({ description: "the Kubernetes namespaces whose resources may act for it (its Organization's spec.namespaces), or null" }),
  })
  .openapi('Organization');

export const MembershipSchema = z
  .object({
    id: z.number().int(),
    org_id: z.number().int(),
    email: z.string(),
    user_id: z.number().int().nullable(),
    role: RoleSchema,
    created_at: z.number().int(),
    source: z.enum(['invite', 'group']).openapi({ description: '`invite`: invited by a person or a resource; `group`: given at sign-in by a mapped group' }),
  })
  .openapi('Membership');

export const OrgName = z.string().trim().min(1).max(200);
export const Quota = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
/** A Kubernetes namespace name (RFC 1123 label). */
export const NamespaceName = z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a Kubernetes namespace name');
const Namespaces = z.array(NamespaceName).max(1000)
  .openapi({ description: "the namespaces whose resources may act for the organisation (an Organization resource's spec.namespaces)" });
export const CreateOrgBody = z.object({ name: OrgName, monthlyEventQuota: Quota.nullable().optional(), namespaces: Namespaces.optional() }).strict();
export const UpdateOrgBody = z.object({ name: OrgName.optional(), monthlyEventQuota: Quota.nullable().optional(), namespaces: Namespaces.nullable().optional() }).strict();
export const InviteBody = z.object({ email: z.string().trim().email().max(320), role: RoleSchema }).strict();
export const RoleBody = z.object({ role: RoleSchema }).strict();
const Email = z.string().trim().email().max(320);
export const MembersBody = z
  .object({ members: z.array(z.object({ email: Email, role: RoleSchema }).strict()).max(10_000) })
  .strict()
  .superRefine((b, ctx) => {
    const seen = new Set<string>();
    b.members.forEach((m, i) => {
      const e = m.email.toLowerCase();
      if (seen.has(e)) ctx.addIssue({ code: 'custom', path: ['members', i, 'email'], message: 'listed twice' });
      seen.add(e);
    });
  });
export const GroupMappingSchema = z.object({ name: z.string().trim().min(1).max(400), role: RoleSchema }).strict().openapi('GroupMapping');
export const GroupsBody = z
  .object({ groups: z.array(GroupMappingSchema).max(1000) })
  .strict()
  .superRefine((b, ctx) => {
    const seen = new Set<string>();
    b.groups.forEach((g, i) => {
      if (seen.has(g.name)) ctx.addIssue({ code: 'custom', path: ['groups', i, 'name'], message: 'listed twice' });
      seen.add(g.name);
    });
  });
export const ManagedByQuery = z.object({ managedBy: z.string().min(1).max(400).optional() });
export const MonthQuery = z.object({ month: z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'month must be YYYY-MM').optional() });

export const UsageSchema = z
  .object({ org_id: z.number().int(), name: z.string(), month: z.string(), events: z.number().int(), monthly_event_quota: z.number().int().nullable() })
  .openapi('OrgUsage');
