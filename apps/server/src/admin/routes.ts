import { z } from 'zod';
import type { Deps } from '../deps.js';
import { notFound } from '../http/errors.js';
import { route, type RouteSpec } from '../http/route.js';
import { publicProject } from '../projects/store.js';
import { resourceOf } from '../auth/managed.js';
import { authOf } from '../auth/context.js';
import { CreateProjectBody, IdParams, ProjectSchema } from '../projects/schema.js';
import { CreateOrgBody, InviteBody, MembershipSchema, MonthQuery, OrganizationSchema, UpdateOrgBody, UsageSchema } from '../orgs/schema.js';
import { monthOf } from '../usage/store.js';

/** Backoffice administration: superadmin key only. */
export function adminRoutes(deps: Deps): RouteSpec[] {
  const { orgs, projects, usage } = deps;
  const orgOr404 = async (id: number) => {
    const org = await orgs.getOrg(id);
    if (!org) throw notFound('organization');
    return org;
  };
  return [
    route({
      method: 'post', path: '/admin/orgs', tag: 'Admin', auth: 'admin', body: CreateOrgBody, response: OrganizationSchema, status: 201,
      summary: 'Creates an organisation',
      handler: ({ body }) => orgs.createOrg(body),
    }),
    route({
      method: 'get', path: '/admin/orgs', tag: 'Admin', auth: 'admin', response: z.array(OrganizationSchema),
      summary: 'Every organisation',
      handler: () => orgs.listOrgs(),
    }),
    route({
      method: 'get', path: '/admin/orgs/{id}', tag: 'Admin', auth: 'admin', params: IdParams, response: OrganizationSchema,
      summary: 'One organisation',
      handler: ({ params }) => orgOr404(params.id),
    }),
    route({
      method: 'patch', path: '/admin/orgs/{id}', tag: 'Admin', auth: 'admin', params: IdParams, body: UpdateOrgBody, response: OrganizationSchema,
      summary: 'Renames an organisation or changes its monthly event quota (null: unlimited)',
      handler: async ({ params, body }) => {
        await orgOr404(params.id);
        return orgs.updateOrg(params.id, body);
      },
    }),
    route({
      method: 'post', path: '/admin/orgs/{id}/members', tag: 'Admin', auth: 'admin', params: IdParams, body: InviteBody, response: MembershipSchema, status: 201,
      summary: 'Invites an email with a role (bound by the first ID token with that email)',
      handler: async ({ params, body }) => {
        await orgOr404(params.id);
        return orgs.upsertMembership(params.id, body.email, body.role);
      },
    }),
    route({
      method: 'post', path: '/admin/orgs/{id}/projects', tag: 'Admin', auth: 'admin', params: IdParams, body: CreateProjectBody, response: ProjectSchema, status: 201,
      summary: 'Creates a project in an organisation (managed by the resource named in X-Tally-Resource, when sent)',
      handler: async ({ ctx, params, body }) => {
        await orgOr404(params.id);
        const managedBy = resourceOf(ctx, authOf(ctx));
        return publicProject(await projects.create({ orgId: params.id, name: body.name, managedBy }));
      },
    }),
    route({
      method: 'get', path: '/admin/usage', tag: 'Admin', auth: 'admin', query: MonthQuery, response: z.array(UsageSchema),
      summary: 'Accepted events per organisation in a UTC month (default: this month) against its quota',
      handler: ({ query }) => usage.allOrgs(query.month ?? monthOf(Date.now())),
    }),
  ];
}
