import { z, type ZodType } from 'zod';
import type { ProjectStore } from '../projects/store.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf, requireRole } from '../auth/context.js';
import { actorOf } from '../audit/actor.js';
import { resolveProject } from '../auth/project-scope.js';
import { IdParams } from '../projects/schema.js';
import { scopedLoader } from './load.js';
import type { DefinitionRow } from './store.js';
import type { DefinitionService } from './service.js';

const ProjectQuery = z.object({ projectId: z.string().optional() });

/** The parts of a create or update body a definition store keeps. */
export interface DefinitionParts<T> {
  name?: string;
  description?: string | null;
  definition?: T;
}

/** The name and description members of a create or update body. */
export const nameAndDescription = (b: Record<string, unknown>) => ({ name: b.name as string | undefined, description: b.description as string | null | undefined });

/** One kind of named definition (derived events, calculated metrics, cohorts) exposed over HTTP. */
export interface DefinitionCrud<T extends object, R> {
  tag: string;
  base: string;
  /** The `404 <what>` of a missing or foreign id. */
  what: string;
  /** Its writes (with their checks and audit rows) and, as `service.store`, its reads. */
  service: DefinitionService<T>;
  schema: ZodType;
  createBody: ZodType<{ projectId?: string | number } & Record<string, unknown>>;
  updateBody: ZodType<Record<string, unknown>>;
  summaries: { list: string; create: string; get: string; update: string; delete: string };
  /** Body to stored parts (create bodies carry name and definition; update bodies any subset). */
  split: (body: Record<string, unknown>) => DefinitionParts<T>;
  /** A row as the API shows it. */
  present: (row: DefinitionRow<T>) => R | Promise<R>;
}

/**
 * List, create (member), read, update (member, the definition merged over the stored one) and
 * delete (member) routes of one kind of definition.
 */
export function definitionCrudRoutes<T extends object, R>(projects: ProjectStore, c: DefinitionCrud<T, R>): RouteSpec[] {
  const { tag, base, service, schema, summaries, present } = c;
  const { store } = service;
  const load = scopedLoader(projects, store, c.what);
  return [
    route({
      method: 'get', path: base, tag, auth: 'api', query: ProjectQuery, response: z.array(schema), summary: summaries.list,
      handler: async ({ ctx, query }) => Promise.all((await store.list((await resolveProject(projects, authOf(ctx), query.projectId)).id)).map(present)),
    }),
    route({
      method: 'post', path: base, tag, auth: 'api', query: ProjectQuery, body: c.createBody, response: schema, status: 201, summary: summaries.create,
      handler: async ({ ctx, query, body }) => {
        const auth = requireRole(ctx, 'member');
        const project = await resolveProject(projects, auth, body.projectId ?? query.projectId);
        const { definition, name, description } = c.split(body);
        return present(await service.create(actorOf(ctx), { projectId: project.id, name: name!, description: description ?? null, definition: definition! }));
      },
    }),
    route({
      method: 'get', path: `${base}/{id}`, tag, auth: 'api', params: IdParams, response: schema, summary: summaries.get,
      handler: async ({ ctx, params }) => present(await load(ctx, params.id)),
    }),
    route({
      method: 'put', path: `${base}/{id}`, tag, auth: 'api', params: IdParams, body: c.updateBody, response: schema, summary: summaries.update,
      handler: async ({ ctx, params, body }) => {
        const row = await load(ctx, params.id);
        requireRole(ctx, 'member');
        return present(await service.update(actorOf(ctx), row.id, c.split(body)));
      },
    }),
    route({
      method: 'delete', path: `${base}/{id}`, tag, auth: 'api', params: IdParams, summary: summaries.delete,
      handler: async ({ ctx, params }) => {
        const row = await load(ctx, params.id);
        requireRole(ctx, 'member');
        await service.delete(actorOf(ctx), row.id);
        return { ok: true };
      },
    }),
  ];
}
