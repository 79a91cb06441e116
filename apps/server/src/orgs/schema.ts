import { z } from 'zod';
import { RoleSchema } from '../auth/roles.js';

export const OrganizationSchema = z
  .object({ id: z.number().int(), name: z.string(), monthly_event_quota: z.number().int().nullable(), created_at: z.number().int() })
  .openapi('Organization');

export const MembershipSchema = z
  .object({
    id: z.number().int(),
    org_id: z.number().int(),
    email: z.string(),
    user_id: z.number().int().nullable(),
    role: RoleSchema,
    created_at: z.number().int(),
  })
  .openapi('Membership');

export const OrgName = z.string().trim().min(1).max(200);
export const Quota = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
export const CreateOrgBody = z.object({ name: OrgName, monthlyEventQuota: Quota.nullable().optional() }).strict();
export const UpdateOrgBody = z.object({ name: OrgName.optional(), monthlyEventQuota: Quota.nullable().optional() }).strict();
export const InviteBody = z.object({ email: z.string().trim().email().max(320), role: RoleSchema }).strict();
export const RoleBody = z.object({ role: RoleSchema }).strict();
export const MonthQuery = z.object({ month: z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'month must be YYYY-MM').optional() });

export const UsageSchema = z
  .object({ org_id: z.number().int(), name: z.string(), month: z.string(), events: z.number().int(), monthly_event_quota: z.number().int().nullable() })
  .openapi('OrgUsage');
