import type { Context } from 'koa';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf, requireRole } from '../auth/context.js';
import { actorOf } from '../audit/actor.js';
import { resolveProject, rowInScope } from '../auth/project-scope.js';
import { IdParams } from '../projects/schema.js';
import type { AnnotationService } from './service.js';
import { AnnotationSchema, CreateAnnotationBody, ListAnnotationsQuery, UpdateAnnotationBody } from './schema.js';

/** Annotations: every role reads, member and above write; another organisation's id is 404. */
export function annotationRoutes(deps: Deps, service: AnnotationService): RouteSpec[] {
  const inScope = rowInScope(deps.projects, 'annotation', (id) => service.get(id));
  const load = (ctx: Context, id: number) => inScope(authOf(ctx), id);
  return [
    route({
      method: 'get', path: '/api/annotations', tag: 'Annotations', auth: 'api', query: ListAnnotationsQuery, response: z.array(AnnotationSchema),
      summary: "The project's annotations, oldest day first (optionally only days from..to)",
      handler: async ({ ctx, query }) => {
        const project = await resolveProject(deps.projects, authOf(ctx), query.projectId);
        return service.list(project.id, { from: query.from, to: query.to });
      },
    }),
    route({
      method: 'post', path: '/api/annotations', tag: 'Annotations', auth: 'api', query: ListAnnotationsQuery.pick({ projectId: true }),
      body: CreateAnnotationBody, response: AnnotationSchema, status: 201,
      summary: 'Adds a note to a day of the project timeline (member)',
      handler: async ({ ctx, body, query }) => {
        const auth = requireRole(ctx, 'member');
        const project = await resolveProject(deps.projects, auth, body.projectId ?? query.projectId);
        return service.create(actorOf(ctx), { projectId: project.id, date: body.date, description: body.description });
      },
    }),
    route({
      method: 'get', path: '/api/annotations/{id}', tag: 'Annotations', auth: 'api', params: IdParams, response: AnnotationSchema,
      summary: 'One annotation',
      handler: async ({ ctx, params }) => load(ctx, params.id),
    }),
    route({
      method: 'put', path: '/api/annotations/{id}', tag: 'Annotations', auth: 'api', params: IdParams, body: UpdateAnnotationBody, response: AnnotationSchema,
      summary: 'Changes the day or the text of an annotation (member)',
      handler: async ({ ctx, params, body }) => {
        const a = await load(ctx, params.id);
        requireRole(ctx, 'member');
        return service.update(actorOf(ctx), a.id, body);
      },
    }),
    route({
      method: 'delete', path: '/api/annotations/{id}', tag: 'Annotations', auth: 'api', params: IdParams,
      summary: 'Deletes an annotation (member)',
      handler: async ({ ctx, params }) => {
        const a = await load(ctx, params.id);
        requireRole(ctx, 'member');
        await service.delete(actorOf(ctx), a.id);
        return { ok: true };
      },
    }),
  ];
}
