import { z } from 'zod';
import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf, isInstallation, requireRole } from '../auth/context.js';
import { loadProjectInScope } from '../auth/project-scope.js';
import { publicProject, type Project } from './store.js';
import { requireResource } from '../auth/managed.js';
import { actorOf } from '../audit/actor.js';
import type { ProjectService } from './service.js';
import { CreateProjectBody, IdParams, ListProjectsQuery, ProjectListItemSchema, ProjectSchema, UpdateProjectBody } from './schema.js';

/** Events stored per project (each dedup key once), counted in the event store in one grouped query. */
export async function eventCounts(deps: Deps, projects: Project[]): Promise<Map<number, number>> {
  return deps.events.countEvents(projects.map((p) => p.id));
}

export function projectRoutes(deps: Deps, service: ProjectService): RouteSpec[] {
  const { projects } = deps;
  return [
    route({
      method: 'get', path: '/api/projects', tag: 'Projects', auth: 'api', query: ListProjectsQuery, response: z.array(ProjectListItemSchema),
      summary: "The caller's organisation's projects (all projects for the superadmin); `managedBy` keeps those a resource owns",
      handler: async ({ ctx, query }) => {
        const auth = authOf(ctx);
        const list = await projects.list(isInstallation(auth) ? null : auth.orgId, { managedBy: query.managedBy });
        const counts = await eventCounts(deps, list);
        return list.map((p) => ({
          ...publicProject(p),
          org_id: p.org_id,
          event_count: counts.get(p.id) ?? 0,
          has_flag_secret: p.flag_secret_hash !== null,
        }));
      },
    }),
    route({
      method: 'post', path: '/api/projects', tag: 'Projects', auth: 'api', body: CreateProjectBody, response: ProjectSchema, status: 201,
      summary: "Creates a project in the caller's organisation (admin); the superadmin creates one without organisation (managed by X-Tally-Resource when sent)",
      handler: async ({ ctx, body }) => {
        const auth = requireRole(ctx, 'admin');
        return publicProject(await service.create(actorOf(ctx), isInstallation(auth) ? null : auth.orgId, body));
      },
    }),
    route({
      method: 'get', path: '/api/projects/{id}', tag: 'Projects', auth: 'api', params: IdParams, response: ProjectSchema,
      summary: 'One project',
      handler: async ({ ctx, params }) => publicProject(await loadProjectInScope(projects, authOf(ctx), params.id)),
    }),
    route({
      method: 'patch', path: '/api/projects/{id}', tag: 'Projects', auth: 'api', params: IdParams, body: UpdateProjectBody, response: ProjectSchema,
      summary: 'Renames a project or sets its retentionDays and rateLimit (admin); a managed project only through its resource (else 409)',
      handler: async ({ ctx, params, body }) => {
        const project = await loadProjectInScope(projects, authOf(ctx), params.id);
        requireRole(ctx, 'admin');
        return publicProject(await service.update(actorOf(ctx), project.id, body));
      },
    }),
    route({
      method: 'delete', path: '/api/projects/{id}', tag: 'Projects', auth: 'api', params: IdParams,
      summary: "Deletes a project, its metadata and its events (admin); a managed project only through its resource (else 409)",
      handler: async ({ ctx, params }) => {
        const project = await loadProjectInScope(projects, authOf(ctx), params.id);
        requireRole(ctx, 'admin');
        await service.delete(actorOf(ctx), project.id);
        return { ok: true };
      },
    }),
    route({
      method: 'post', path: '/api/projects/{id}/adopt', tag: 'Projects', auth: 'admin', params: IdParams, response: ProjectSchema,
      summary: 'A resource takes over an existing project (superadmin or operator key with X-Tally-Resource); 409 when another resource manages it',
      handler: async ({ ctx, params }) => {
        const project = await loadProjectInScope(projects, authOf(ctx), params.id);
        return publicProject(await service.adopt(actorOf(ctx), project.id, requireResource(ctx)));
      },
    }),
    route({
      method: 'post', path: '/api/projects/{id}/release', tag: 'Projects', auth: 'admin', params: IdParams, response: ProjectSchema,
      summary: 'The owning resource lets go of its project (superadmin key and its X-Tally-Resource): managed_by becomes null; idempotent',
      handler: async ({ ctx, params }) => {
        const project = await loadProjectInScope(projects, authOf(ctx), params.id);
        return publicProject(await service.release(actorOf(ctx), project.id));
      },
    }),
  ];
}
