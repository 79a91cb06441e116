import { z } from 'zod';
import type { Deps } from '../deps.js';
import { AppError, badRequest, conflict, forbidden, notFound } from '../http/errors.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf, requireRole, type AuthContext, type OrgActor } from '../auth/context.js';
import { RoleSchema, type Role } from '../auth/roles.js';
import { publicProject } from '../projects/store.js';
import { ProjectSchema } from '../projects/schema.js';
import { InviteBody, MembershipSchema, MonthQuery, OrgName, OrganizationSchema, RoleBody } from '../orgs/schema.js';
import { monthOf } from '../usage/store.js';

const AccountSchema = z
  .object({
    superadmin: z.boolean(),
    user: z.object({ id: z.number().int(), email: z.string().nullable(), name: z.string().nullable() }).nullable(),
    memberships: z.array(z.object({ org_id: z.number().int(), org_name: z.string(), role: RoleSchema })),
    organization: OrganizationSchema.nullable(),
    role: RoleSchema.nullable(),
  })
  .openapi('Account');

const UserIdParams = z.object({ userId: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER) });

/** Member management acts inside one organisation: the superadmin has none and uses /admin instead. */
export function orgActor(auth: AuthContext): OrgActor {
  if (auth.kind === 'superadmin' || auth.kind === 'operator') {
    throw badRequest('no organization context', { resolution: 'the superadmin manages members through /admin/orgs/{id}/members' });
  }
  if (auth.kind === 'user' && (auth.orgId === null || auth.role === null)) throw badRequest('no organization context');
  return auth as OrgActor;
}

/** Only an owner may grant, change or remove the owner role. */
export function checkOwnerChange(actor: OrgActor, from: Role | null, to: Role | null) {
  if ((from === 'owner' || to === 'owner') && actor.role !== 'owner') throw forbidden();
}

export function accountRoutes(deps: Deps): RouteSpec[] {
  const { orgs, projects, usage, db } = deps;
  return [
    route({
      method: 'get', path: '/api/account', tag: 'Account', auth: 'account', response: AccountSchema,
      summary: 'The caller: user, memberships, current organisation and role',
      handler: async ({ ctx }) => {
        const auth = authOf(ctx);
        if (auth.kind === 'superadmin') return { superadmin: true, user: null, memberships: [], organization: null, role: null };
        if (auth.kind === 'operator') throw forbidden();
        if (auth.kind === 'token') {
          return { superadmin: false, user: null, memberships: [], organization: (await orgs.getOrg(auth.orgId)) ?? null, role: auth.role };
        }
        const user = await orgs.getUser(auth.userId);
        const memberships = await db('memberships as m')
          .join('organizations as o', 'o.id', 'm.org_id')
          .where('m.user_id', auth.userId)
          .orderBy('m.id')
          .select('m.org_id', 'o.name as org_name', 'm.role');
        return {
          superadmin: false,
          user: { id: auth.userId, email: user?.email ?? null, name: user?.name ?? null },
          memberships,
          organization: auth.orgId === null ? null : (await orgs.getOrg(auth.orgId)) ?? null,
          role: auth.role,
        };
      },
    }),
    route({
      method: 'post', path: '/api/account/organization', tag: 'Account', auth: 'account', status: 201,
      body: z.object({ name: OrgName }).strict(),
      response: z.object({ organization: OrganizationSchema, project: ProjectSchema }),
      summary: 'Onboarding: creates an organisation with the caller as owner, and its first project',
      handler: async ({ ctx, body }) => {
        const auth = authOf(ctx);
        if (auth.kind !== 'user') throw badRequest('no user', { resolution: 'the superadmin creates organisations with POST /admin/orgs' });
        if (auth.orgId !== null) throw conflict('already in an organization');
        if (!auth.email) throw badRequest('email required', { message: 'the ID token carries no email to make the owner membership with' });
        return db.transaction(async (trx) => {
          const organization = await orgs.createOrg({ name: body.name }, trx);
          const membership = await orgs.upsertMembership(organization.id, auth.email!, 'owner', trx);
          await trx('memberships').where({ id: membership.id }).update({ user_id: auth.userId });
          const project = await projects.create({ orgId: organization.id, name: 'Default project' }, trx);
          return { organization, project: publicProject(project) };
        });
      },
    }),
    route({
      method: 'get', path: '/api/account/usage', tag: 'Account', auth: 'api', query: MonthQuery,
      response: z.object({ org_id: z.number().int(), month: z.string(), events: z.number().int(), monthly_event_quota: z.number().int().nullable() }),
      summary: "The organisation's accepted events in a UTC month against its quota",
      handler: async ({ ctx, query }) => {
        const auth = orgActor(authOf(ctx));
        const month = query.month ?? monthOf(Date.now());
        const org = await orgs.getOrg(auth.orgId);
        return { org_id: auth.orgId, month, events: await usage.orgEvents(auth.orgId, month), monthly_event_quota: org?.monthly_event_quota ?? null };
      },
    }),
    route({
      method: 'get', path: '/api/org/members', tag: 'Account', auth: 'api', response: z.array(MembershipSchema),
      summary: "The organisation's members and open invitations",
      handler: async ({ ctx }) => {
        const auth = orgActor(authOf(ctx));
        return orgs.listMemberships(auth.orgId);
      },
    }),
    route({
      method: 'post', path: '/api/org/members', tag: 'Account', auth: 'api', body: InviteBody, response: MembershipSchema, status: 201,
      summary: 'Invites an email with a role, or changes the role of that email (admin; owner role: owner only)',
      handler: async ({ ctx, body }) => {
        const actor = orgActor(requireRole(ctx, 'admin'));
        const existing = (await orgs.listMemberships(actor.orgId)).find((m) => m.email === body.email.toLowerCase());
        checkOwnerChange(actor, existing?.role ?? null, body.role);
        if (existing?.role === 'owner' && body.role !== 'owner' && (await orgs.countOwners(actor.orgId)) <= 1) throw conflict('last owner');
        return orgs.upsertMembership(actor.orgId, body.email, body.role);
      },
    }),
    route({
      method: 'patch', path: '/api/org/members/{userId}', tag: 'Account', auth: 'api', params: UserIdParams, body: RoleBody, response: MembershipSchema,
      summary: "Changes a member's role (admin; owner role: owner only; the last owner stays owner)",
      handler: async ({ ctx, params, body }) => {
        const actor = orgActor(requireRole(ctx, 'admin'));
        const m = await orgs.membershipOfUser(actor.orgId, params.userId);
        if (!m) throw notFound('member');
        checkOwnerChange(actor, m.role, body.role);
        if (m.role === 'owner' && body.role !== 'owner' && (await orgs.countOwners(actor.orgId)) <= 1) throw conflict('last owner');
        await orgs.setRole(m.id, body.role);
        return { ...m, role: body.role };
      },
    }),
    route({
      method: 'delete', path: '/api/org/members/{userId}', tag: 'Account', auth: 'api', params: UserIdParams,
      summary: 'Removes a member (admin; an owner: owner only; never the last owner)',
      handler: async ({ ctx, params }) => {
        const actor = orgActor(requireRole(ctx, 'admin'));
        const m = await orgs.membershipOfUser(actor.orgId, params.userId);
        if (!m) throw notFound('member');
        checkOwnerChange(actor, m.role, null);
        if (m.role === 'owner' && (await orgs.countOwners(actor.orgId)) <= 1) throw new AppError(409, 'last owner');
        await orgs.deleteMembership(m.id);
        return { ok: true };
      },
    }),
  ];
}
