import { z } from 'zod';
import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf, requireRole } from '../auth/context.js';
import { loadProjectInScope } from '../auth/project-scope.js';
import { publicProject, type Project } from './store.js';
import { CreateProjectBody, IdParams, ProjectListItemSchema, ProjectSchema, UpdateProjectBody } from './schema.js';

/** Events stored per project (each dedup key once), counted in the event store in one grouped query. */
export async function eventCounts(deps: Deps, projects: Project[]): Promise<Map<number, number>> {
  return deps.events.countEvents(projects.map((p) => p.id));
}

export function projectRoutes(deps: Deps): RouteSpec[] {
  const { projects } = deps;
  return [
    route({
      method: 'get', path: '/api/projects', tag: 'Projects', auth: 'api', response: z.array(ProjectListItemSchema),
      summary: "The caller's organisation's projects (all projects for the superadmin)",
      handler: async ({ ctx }) => {
        const auth = authOf(ctx);
        const list = await projects.list(auth.kind === 'superadmin' ? null : auth.orgId);
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
      summary: "Creates a project in the caller's organisation (admin); the superadmin creates one without organisation",
      handler: async ({ ctx, body }) => {
        const auth = requireRole(ctx, 'admin');
        return publicProject(await projects.create({ orgId: auth.kind === 'superadmin' ? null : auth.orgId, name: body.name }));
      },
    }),
    route({
      method: 'get', path: '/api/projects/{id}', tag: 'Projects', auth: 'api', params: IdParams, response: ProjectSchema,
      summary: 'One project',
      handler: async ({ ctx, params }) => publicProject(await loadProjectInScope(projects, authOf(ctx), params.id)),
    }),
    route({
      method: 'patch', path: '/api/projects/{id}', tag: 'Projects', auth: 'api', params: IdParams, body: UpdateProjectBody, response: ProjectSchema,
      summary: 'Renames a project (admin)',
      handler: async ({ ctx, params, body }) => {
        const project = await loadProjectInScope(projects, authOf(ctx), params.id);
        requireRole(ctx, 'admin');
        await projects.rename(project.id, body.name);
        return publicProject({ ...project, name: body.name });
      },
    }),
    route({
      method: 'delete', path: '/api/projects/{id}', tag: 'Projects', auth: 'api', params: IdParams,
      summary: "Deletes a project, its metadata and its events (admin)",
      handler: async ({ ctx, params }) => {
        const project = await loadProjectInScope(projects, authOf(ctx), params.id);
        requireRole(ctx, 'admin');
        await projects.delete(project.id);
        // Events, links and profiles go asynchronously; the project is gone for reads at once.
        deps.events.deleteProject(project.id)
          .catch((err) => deps.log.error('project delete: event store cleanup failed', { projectId: project.id, err: String(err) }));
        return { ok: true };
      },
    }),
  ];
}
