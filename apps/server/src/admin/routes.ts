import { z } from 'zod';
import type { Deps } from '../deps.js';
import { notFound } from '../http/errors.js';
import { route, type RouteSpec } from '../http/route.js';
import { publicProject } from '../projects/store.js';
import { requireResource } from '../auth/managed.js';
import { actorOf } from '../audit/actor.js';
import { CreateProjectBody, IdParams, ProjectSchema } from '../projects/schema.js';
import {
  CreateOrgBody, GroupMappingSchema, GroupsBody, InviteBody, ManagedByQuery, MembersBody, MembershipSchema, MonthQuery, OrganizationSchema,
  UpdateOrgBody, UsageSchema,
} from '../orgs/schema.js';
import type { OrgService } from '../orgs/service.js';
import type { ProjectService } from '../projects/service.js';
import { monthOf } from '../usage/store.js';

/**
 * Backoffice administration: the superadmin key, and the operator key on the routes it calls
 * (auth/operator.ts). An organisation created or adopted with `X-Tally-Resource` is managed by
 * that resource: writes without the same header answer `409 managed by resource`.
 */
export function adminRoutes(deps: Pick<Deps, 'orgs' | 'usage'>, services: { orgService: OrgService; projectService: ProjectService }): RouteSpec[] {
  const { orgs, usage } = deps;
  const { orgService, projectService } = services;
  const orgOr404 = async (id: number) => {
    const org = await orgs.getOrg(id);
    if (!org) throw notFound('organization');
    return org;
  };
  return [
    route({
      method: 'post', path: '/admin/orgs', tag: 'Admin', auth: 'admin', body: CreateOrgBody, response: OrganizationSchema, status: 201,
      summary: 'Creates an organisation (managed by the resource named in X-Tally-Resource, when sent)',
      handler: ({ ctx, body }) => orgService.create(actorOf(ctx), body),
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
      handler: ({ ctx, params, body }) => orgService.update(actorOf(ctx), params.id, body),
    }),
    route({
      method: 'delete', path: '/admin/orgs/{id}', tag: 'Admin', auth: 'admin', params: IdParams,
      summary: 'Deletes an organisation with its memberships, group mappings and machine tokens; 409 while it has projects',
      handler: async ({ ctx, params }) => {
        await orgService.delete(actorOf(ctx), params.id);
        return { ok: true };
      },
    }),
    route({
      method: 'post', path: '/admin/orgs/{id}/adopt', tag: 'Admin', auth: 'admin', params: IdParams, response: OrganizationSchema,
      summary: 'The resource in X-Tally-Resource takes over an existing organisation; 409 when another resource manages it',
      handler: ({ ctx, params }) => orgService.adopt(actorOf(ctx), params.id, requireResource(ctx)),
    }),
    route({
      method: 'post', path: '/admin/orgs/{id}/release', tag: 'Admin', auth: 'admin', params: IdParams, response: OrganizationSchema,
      summary: 'The owning resource lets go of its organisation (and of its membership list); idempotent',
      handler: ({ ctx, params }) => orgService.release(actorOf(ctx), params.id, requireResource(ctx)),
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
      handler: ({ ctx, params, body }) => orgService.invite(actorOf(ctx), params.id, body.email, body.role, null),
    }),
    route({
      method: 'put', path: '/admin/orgs/{id}/members', tag: 'Admin', auth: 'admin', params: IdParams, body: MembersBody, response: z.array(MembershipSchema),
      summary: 'The resource in X-Tally-Resource replaces the invited membership list (group-derived ones stay) and owns it from then on',
      handler: async ({ ctx, params, body }) => {
        await orgService.replaceMembers(actorOf(ctx), params.id, body.members, requireResource(ctx));
        return orgs.listMemberships(params.id);
      },
    }),
    route({
      method: 'delete', path: '/admin/orgs/{id}/members-management', tag: 'Admin', auth: 'admin', params: IdParams, response: OrganizationSchema,
      summary: 'The resource that owns the membership list gives it back to people; idempotent',
      handler: ({ ctx, params }) => orgService.releaseMembers(actorOf(ctx), params.id, requireResource(ctx)),
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
        await orgService.replaceGroups(actorOf(ctx), params.id, body.groups);
        return orgs.groups(params.id);
      },
    }),
    route({
      method: 'post', path: '/admin/orgs/{id}/projects', tag: 'Admin', auth: 'admin', params: IdParams, body: CreateProjectBody, response: ProjectSchema, status: 201,
      summary: 'Creates a project in an organisation, with retentionDays and rateLimit (managed by the resource named in X-Tally-Resource, when sent)',
      handler: async ({ ctx, params, body }) => publicProject(await projectService.create(actorOf(ctx), params.id, body)),
    }),
    route({
      method: 'get', path: '/admin/usage', tag: 'Admin', auth: 'admin', query: MonthQuery, response: z.array(UsageSchema),
      summary: 'Accepted events per organisation in a UTC month (default: this month) against its quota',
      handler: ({ query }) => usage.allOrgs(query.month ?? monthOf(Date.now())),
    }),
  ];
}

