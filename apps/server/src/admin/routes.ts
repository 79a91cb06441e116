import { z } from 'zod';
import type { Context } from 'koa';
import type { Deps } from '../deps.js';
import { notFound } from '../http/errors.js';
import { route, type RouteSpec } from '../http/route.js';
import { publicProject } from '../projects/store.js';
import { assertOwnedBy, requireResource, resourceOf } from '../auth/managed.js';
import { authOf } from '../auth/context.js';
import { CreateProjectBody, IdParams, ProjectSchema } from '../projects/schema.js';
import {
  CreateOrgBody, GroupMappingSchema, GroupsBody, InviteBody, ManagedByQuery, MembersBody, MembershipSchema, MonthQuery, OrganizationSchema,
  UpdateOrgBody, UsageSchema,
} from '../orgs/schema.js';
import { MembershipService } from '../orgs/members.js';
import type { Management, Organization } from '../orgs/store.js';
import { monthOf } from '../usage/store.js';

/**
 * Backoffice administration: the superadmin key, and the operator key on the routes it calls
 * (auth/operator.ts). An organisation created or adopted with `X-Tally-Resource` is managed by
 * that resource: writes without the same header answer `409 managed by resource`.
 */
export function adminRoutes(deps: Deps): RouteSpec[] {
  const { orgs, projects, usage } = deps;
  const members = new MembershipService(deps.db, orgs);
  const orgOr404 = async (id: number) => {
    const org = await orgs.getOrg(id);
    if (!org) throw notFound('organization');
    return org;
  };
  const resource = (ctx: Context) => resourceOf(ctx, authOf(ctx));
  /** An organisation the caller may write: unmanaged, or managed by the call's resource. */
  const writableOrg = async (ctx: Context, id: number) => {
    const org = await orgOr404(id);
    assertOwnedBy(org.managed_by, resource(ctx));
    return org;
  };
  /**
   * Adopt, release and members-management: the call's resource (required) must own `owned`
   * (or it is unset), then `next` says who manages what; only the fields that change are written.
   */
  const changeManagement = async (
    ctx: Context, id: number, owned: keyof Management, next: (org: Organization, by: string) => Management,
  ): Promise<Organization> => {
    const by = requireResource(ctx);
    const org = await orgOr404(id);
    assertOwnedBy(org[owned], by);
    const changed = Object.fromEntries(Object.entries(next(org, by)).filter(([k, v]) => org[k as keyof Management] !== v)) as Management;
    await orgs.setManagement(org.id, changed);
    return { ...org, ...changed };
  };
  return [
    route({
      method: 'post', path: '/admin/orgs', tag: 'Admin', auth: 'admin', body: CreateOrgBody, response: OrganizationSchema, status: 201,
      summary: 'Creates an organisation (managed by the resource named in X-Tally-Resource, when sent)',
      handler: ({ ctx, body }) => orgs.createOrg({ ...body, managedBy: resource(ctx) }),
    }),
    route({
      method: 'get', path: '/admin/orgs', tag: 'Admin', auth: 'admin', query: ManagedByQuery, response: z.array(OrganizationSchema),
      summary: 'Every organisation; `managedBy` keeps those a resource owns',
      handler: ({ query }) => orgs.listOrgs({ managedBy: query.managedBy }),
    }),
    route({
      method: 'get', path: '/admin/orgs/{id}', tag: 'Admin', auth: 'admin', params: IdParams, response: OrganizationSchema,
      summary: 'One organisation',
      handler: ({ params }) => orgOr404(params.id),
    }),
    route({
      method: 'patch', path: '/admin/orgs/{id}', tag: 'Admin', auth: 'admin', params: IdParams, body: UpdateOrgBody, response: OrganizationSchema,
      summary: 'Renames an organisation or changes its monthly event quota (null: unlimited); a managed one only through its resource (else 409)',
      handler: async ({ ctx, params, body }) => {
        await writableOrg(ctx, params.id);
        return orgs.updateOrg(params.id, body);
      },
    }),
    route({
      method: 'delete', path: '/admin/orgs/{id}', tag: 'Admin', auth: 'admin', params: IdParams,
      summary: 'Deletes an organisation with its memberships, group mappings and machine tokens; 409 while it has projects',
      handler: async ({ ctx, params }) => {
        await writableOrg(ctx, params.id);
        if (!(await orgs.deleteOrg(params.id))) throw notFound('organization');
        return { ok: true };
      },
    }),
    route({
      method: 'post', path: '/admin/orgs/{id}/adopt', tag: 'Admin', auth: 'admin', params: IdParams, response: OrganizationSchema,
      summary: 'The resource in X-Tally-Resource takes over an existing organisation; 409 when another resource manages it',
      handler: ({ ctx, params }) => changeManagement(ctx, params.id, 'managed_by', (_, by) => ({ managed_by: by })),
    }),
    route({
      method: 'post', path: '/admin/orgs/{id}/release', tag: 'Admin', auth: 'admin', params: IdParams, response: OrganizationSchema,
      summary: 'The owning resource lets go of its organisation (and of its membership list); idempotent',
      handler: ({ ctx, params }) => changeManagement(ctx, params.id, 'managed_by', (org, by) => (
        org.members_managed_by === by ? { managed_by: null, members_managed_by: null } : { managed_by: null })),
    }),
    route({
      method: 'get', path: '/admin/orgs/{id}/members', tag: 'Admin', auth: 'admin', params: IdParams, response: z.array(MembershipSchema),
      summary: "An organisation's memberships (invited and group-derived)",
      handler: async ({ params }) => {
        await orgOr404(params.id);
        return orgs.listMemberships(params.id);
      },
    }),
    route({
      method: 'post', path: '/admin/orgs/{id}/members', tag: 'Admin', auth: 'admin', params: IdParams, body: InviteBody, response: MembershipSchema, status: 201,
      summary: 'Invites an email with a role (bound by the first ID token with that email); 409 while a resource owns the list',
      handler: async ({ ctx, params, body }) => members.invite(params.id, body.email, body.role, null, resource(ctx)),
    }),
    route({
      method: 'put', path: '/admin/orgs/{id}/members', tag: 'Admin', auth: 'admin', params: IdParams, body: MembersBody, response: z.array(MembershipSchema),
      summary: 'The resource in X-Tally-Resource replaces the invited membership list (group-derived ones stay) and owns it from then on',
      handler: async ({ ctx, params, body }) => {
        const by = requireResource(ctx);
        const org = await orgOr404(params.id);
        assertOwnedBy(org.members_managed_by, by);
        await orgs.replaceInvited(org.id, body.members, by);
        return orgs.listMemberships(org.id);
      },
    }),
    route({
      method: 'delete', path: '/admin/orgs/{id}/members-management', tag: 'Admin', auth: 'admin', params: IdParams, response: OrganizationSchema,
      summary: 'The resource that owns the membership list gives it back to people; idempotent',
      handler: ({ ctx, params }) => changeManagement(ctx, params.id, 'members_managed_by', () => ({ members_managed_by: null })),
    }),
    route({
      method: 'get', path: '/admin/orgs/{id}/groups', tag: 'Admin', auth: 'admin', params: IdParams, response: z.array(GroupMappingSchema),
      summary: "An organisation's group mapping (groups claim value → role at sign-in)",
      handler: async ({ params }) => {
        await orgOr404(params.id);
        return orgs.groups(params.id);
      },
    }),
    route({
      method: 'put', path: '/admin/orgs/{id}/groups', tag: 'Admin', auth: 'admin', params: IdParams, body: GroupsBody, response: z.array(GroupMappingSchema),
      summary: 'Replaces the group mapping; members whose last-seen groups no longer match lose their group-derived membership at once',
      handler: async ({ ctx, params, body }) => {
        await writableOrg(ctx, params.id);
        await orgs.replaceGroups(params.id, body.groups);
        return orgs.groups(params.id);
      },
    }),
    route({
      method: 'post', path: '/admin/orgs/{id}/projects', tag: 'Admin', auth: 'admin', params: IdParams, body: CreateProjectBody, response: ProjectSchema, status: 201,
      summary: 'Creates a project in an organisation, with retentionDays and rateLimit (managed by the resource named in X-Tally-Resource, when sent)',
      handler: async ({ ctx, params, body }) => {
        await orgOr404(params.id);
        return publicProject(await projects.create({ orgId: params.id, managedBy: resource(ctx), ...body }));
      },
    }),
    route({
      method: 'get', path: '/admin/usage', tag: 'Admin', auth: 'admin', query: MonthQuery, response: z.array(UsageSchema),
      summary: 'Accepted events per organisation in a UTC month (default: this month) against its quota',
      handler: ({ query }) => usage.allOrgs(query.month ?? monthOf(Date.now())),
    }),
  ];
}

