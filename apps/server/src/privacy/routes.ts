import type { Context } from 'koa';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf, requireRole } from '../auth/context.js';
import { actorOf } from '../audit/actor.js';
import { resolveProject, rowInScope } from '../auth/project-scope.js';
import { IdParams } from '../projects/schema.js';
import { conflict } from '../http/errors.js';
import { viewOf } from './store.js';
import type { PrivacyService } from './service.js';
import { CreatePrivacyRequestBody, PrivacyRequestSchema, ProjectQuery } from './schema.js';
import { downloadStream } from './download.js';

/**
 * Privacy requests (docs/privacy.md). Access/export: admin and above (they read everything a
 * person left); delete: owner only. Reads of requests: admin and above. Another organisation's
 * request is 404.
 */
export function privacyRoutes(deps: Deps, service: PrivacyService): RouteSpec[] {
  const { store } = service;
  const inScope = rowInScope(deps.projects, 'privacy request', (id) => store.get(id));
  const load = (ctx: Context, id: number) => inScope(authOf(ctx), id);
  return [
    route({
      method: 'post', path: '/api/privacy/requests', tag: 'Privacy', auth: 'api', query: ProjectQuery, body: CreatePrivacyRequestBody,
      response: PrivacyRequestSchema, status: 202,
      summary: 'Queues an access, export or delete request for the identity clusters of the given ids (delete: owner; others: admin)',
      handler: async ({ ctx, body, query }) => {
        const auth = requireRole(ctx, body.type === 'delete' ? 'owner' : 'admin');
        const project = await resolveProject(deps.projects, auth, body.projectId ?? query.projectId);
        return viewOf(await service.create(actorOf(ctx), { projectId: project.id, type: body.type, distinctIds: body.distinctIds }));
      },
    }),
    route({
      method: 'get', path: '/api/privacy/requests', tag: 'Privacy', auth: 'api', query: ProjectQuery, response: z.array(PrivacyRequestSchema),
      summary: "The project's privacy requests, newest first (admin)",
      handler: async ({ ctx, query }) => {
        const auth = requireRole(ctx, 'admin');
        const project = await resolveProject(deps.projects, auth, query.projectId);
        return (await store.list(project.id)).map(viewOf);
      },
    }),
    route({
      method: 'get', path: '/api/privacy/requests/{id}', tag: 'Privacy', auth: 'api', params: IdParams, response: PrivacyRequestSchema,
      summary: 'One privacy request (admin)',
      handler: async ({ ctx, params }) => {
        const r = await load(ctx, params.id);
        requireRole(ctx, 'admin');
        return viewOf(r);
      },
    }),
    route({
      method: 'get', path: '/api/privacy/requests/{id}/download', tag: 'Privacy', auth: 'api', params: IdParams,
      summary: 'NDJSON of everything stored for a completed access/export request (admin)',
      handler: async ({ ctx, params }) => {
        const r = await load(ctx, params.id);
        requireRole(ctx, 'admin');
        if (r.type === 'delete') throw conflict('a delete request has no download');
        if (r.status !== 'completed') throw conflict(`request is ${r.status}`, { message: 'the download exists once the request is completed' });
        ctx.status = 200;
        ctx.type = 'application/x-ndjson';
        ctx.set('Content-Disposition', `attachment; filename="privacy-request-${r.id}.ndjson"`);
        ctx.body = downloadStream(deps, r);
        return undefined;
      },
    }),
  ];
}
