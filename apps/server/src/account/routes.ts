import { z } from 'zod';
import type { Deps } from '../deps.js';
import { badRequest, conflict, forbidden, notFound } from '../http/errors.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf, requireRole } from '../auth/context.js';
import { RoleSchema } from '../auth/roles.js';
import { orgActor } from '../orgs/members.js';
import type { OrgService } from '../orgs/service.js';
import { actorOf } from '../audit/actor.js';
import { publicProject } from '../projects/store.js';
import { ProjectSchema } from '../projects/schema.js';
import { InviteBody, MembershipSchema, MonthQuery, OrgName, OrganizationSchema, RoleBody } from '../orgs/schema.js';
import { monthOf } from '../usage/store.js';

const AccountSchema = z
  .object({
    superadmin: z.boolean(),
    user: z.object({ id: z.number().int(), email: z.string().nullable(), name: z.string().nullable() }).nullable(),
    memberships: z.array(z.object({ org_id: z.number().int(), org_name: z.string(), role: RoleSchema, source: z.enum(['invite', 'group']) })),
    organization: OrganizationSchema.nullable(),
    role: RoleSchema.nullable(),
  })
  .openapi('Account');

const UserIdParams = z.object({ userId: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER) });

export function accountRoutes(deps: Pick<Deps, 'orgs' | 'usage'>, orgService: OrgService): RouteSpec[] {
  const { orgs, usage } = deps;
  return [
    route({
      method: 'get', path: '/api/account', tag: 'Account', auth: 'account', response: AccountSchema,
      summary: 'The caller: user, memberships, current organisation (the chosen one, or X-Tally-Organization) and role',
      handler: async ({ ctx }) => {
        const auth = authOf(ctx);
        if (auth.kind === 'superadmin') return { superadmin: true, user: null, memberships: [], organization: null, role: null };
        if (auth.kind === 'operator') throw forbidden();
        if (auth.kind === 'token') {
          return { superadmin: false, user: null, memberships: [], organization: (await orgs.getOrg(auth.orgId)) ?? null, role: auth.role };
        }
        const user = await orgs.getUser(auth.userId);
        const memberships = await orgs.membershipsOfUser(auth.userId);
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
      method: 'post', path: '/api/account/current-organization', tag: 'Account', auth: 'account', status: 200,
      body: z.object({ organizationId: z.number().int().positive().max(Number.MAX_SAFE_INTEGER) }).strict(),
      response: AccountSchema.pick({ organization: true, role: true }),
      summary: 'A user in several organisations chooses the one they work in (kept across sign-ins); 404 unknown organisation, 403 not a member',
      handler: async ({ ctx, body }) => {
        const auth = authOf(ctx);
        if (auth.kind !== 'user') throw badRequest('no user', { message: 'only a signed-in user chooses an organisation' });
        const org = await orgs.getOrg(body.organizationId);
        if (!org) throw notFound('organization');
        const m = await orgs.membershipOfUser(org.id, auth.userId);
        if (!m) throw forbidden();
        await orgs.setCurrentOrg(auth.userId, org.id);
        return { organization: org, role: m.role };
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
        const { organization, project } = await orgService.onboard({ kind: 'user', id: auth.userId, resource: null }, body.name, auth.email);
        return { organization, project: publicProject(project) };
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
        return orgService.invite(actorOf(ctx), actor.orgId, body.email, body.role, actor);
      },
    }),
    route({
      method: 'patch', path: '/api/org/members/{userId}', tag: 'Account', auth: 'api', params: UserIdParams, body: RoleBody, response: MembershipSchema,
      summary: "Changes a member's role (admin; owner role: owner only; the last owner stays owner)",
      handler: async ({ ctx, params, body }) => {
        const actor = orgActor(requireRole(ctx, 'admin'));
        return orgService.changeRole(actorOf(ctx), actor.orgId, params.userId, body.role, actor);
      },
    }),
    route({
      method: 'delete', path: '/api/org/members/{userId}', tag: 'Account', auth: 'api', params: UserIdParams,
      summary: 'Removes a member (admin; an owner: owner only; never the last owner)',
      handler: async ({ ctx, params }) => {
        const actor = orgActor(requireRole(ctx, 'admin'));
        await orgService.remove(actorOf(ctx), actor.orgId, params.userId, actor);
        return { ok: true };
      },
    }),
  ];
}
