import { z, type ZodType } from 'zod';
import type { ProjectStore } from '../projects/store.js';
import { conflict } from '../http/errors.js';
import { isUniqueViolation } from '../ports/metadata/knex.js';
import { route, type RouteSpec } from '../http/route.js';
import { actorUserId, authOf, requireRole } from '../auth/context.js';
import { resolveProject } from '../auth/project-scope.js';
import { IdParams } from '../projects/schema.js';
import { scopedLoader } from './load.js';
import type { DefinitionRow, DefinitionStore } from './store.js';

const ProjectQuery = z.object({ projectId: z.string().optional() });

/**
 * A write that lost a race for a name the check had found free (two requests checked before
 * either wrote): the unique index refuses the second, which is the check's 409, not a 5xx.
 */
const nameRace = (err: unknown): never => {
  if (isUniqueViolation(err)) throw conflict('name taken');
  throw err;
};

/** The parts of a create or update body a definition store keeps. */
export interface DefinitionParts<T> {
  name?: string;
  description?: string | null;
  definition?: T;
}

/** The name and description members of a create or update body. */
export const nameAndDescription = (b: Record<string, unknown>) => ({ name: b.name as string | undefined, description: b.description as string | null | undefined });

/** One kind of named definition (derived events, calculated metrics, cohorts) exposed over HTTP. */
export interface DefinitionCrud<T, R> {
  tag: string;
  base: string;
  /** The `404 <what>` of a missing or foreign id. */
  what: string;
  store: DefinitionStore<T>;
  schema: ZodType;
  createBody: ZodType<{ projectId?: string | number } & Record<string, unknown>>;
  updateBody: ZodType<Record<string, unknown>>;
  summaries: { list: string; create: string; get: string; update: string; delete: string };
  /** Body to stored parts (create bodies carry name and definition; update bodies any subset). */
  split: (body: Record<string, unknown>) => DefinitionParts<T>;
  /** A row as the API shows it. */
  present: (row: DefinitionRow<T>) => R | Promise<R>;
  /** Refuses a definition (400/409) before it is written; `id` on updates. */
  check?: (projectId: number, definition: T, name: string, id?: number) => Promise<void>;
}

/**
 * List, create (member), read, update (member, the definition merged over the stored one) and
 * delete (member) routes of one kind of definition.
 */
export function definitionCrudRoutes<T extends object, R>(projects: ProjectStore, c: DefinitionCrud<T, R>): RouteSpec[] {
  const { tag, base, store, schema, summaries, present } = c;
  const load = scopedLoader(projects, store, c.what);
  const check = c.check ?? (async () => undefined);
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
        await check(project.id, definition!, name!);
        const row = await store.create({ projectId: project.id, createdBy: actorUserId(auth), name: name!, description: description ?? null, definition: definition! }).catch(nameRace);
        return present(row);
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
        const patch = c.split(body);
        const definition = { ...row.definition, ...(patch.definition ?? {}) } as T;
        await check(row.project_id, definition, patch.name ?? row.name, row.id);
        await store.update(row.id, { name: patch.name, description: patch.description, definition }).catch(nameRace);
        return present((await store.get(row.id))!);
      },
    }),
    route({
      method: 'delete', path: `${base}/{id}`, tag, auth: 'api', params: IdParams, summary: summaries.delete,
      handler: async ({ ctx, params }) => {
        const row = await load(ctx, params.id);
        requireRole(ctx, 'member');
        await store.delete(row.id);
        return { ok: true };
      },
    }),
  ];
}
