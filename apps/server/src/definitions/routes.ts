import { z } from 'zod';
import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { actorUserId, authOf, requireRole } from '../auth/context.js';
import { resolveProject } from '../auth/project-scope.js';
import { badRequest, conflict } from '../http/errors.js';
import { IdParams } from '../projects/schema.js';
import { formulaRefs, parseFormula } from '../query/formula.js';
import { ALL_EVENTS } from '../query/filters.js';
import type { DefinitionRow, DefinitionStore, DefinitionStores, DefinitionTable } from './store.js';
import { scopedLoader } from './load.js';
import {
  CalculatedMetricSchema, CreateDerivedEventBody, CreateMetricBody, DerivedEventSchema, UpdateDerivedEventBody, UpdateMetricBody,
  type CalculatedMetricDefinition, type DerivedEventDefinition,
} from './schema.js';

const ProjectQuery = z.object({ projectId: z.string().optional() });

/** 400 unless the formula parses and references only defined, distinct letters. */
export function checkMetric(def: CalculatedMetricDefinition) {
  const ids = def.metrics.map((m) => m.id);
  if (new Set(ids).size !== ids.length) throw badRequest('metrics: letters must be distinct');
  let refs: Set<string>;
  try {
    refs = formulaRefs(parseFormula(def.formula));
  } catch (e) {
    throw badRequest(`formula: ${(e as Error).message.replace(/^formula: /, '')}`);
  }
  for (const r of refs) if (!ids.includes(r as never)) throw badRequest(`formula: ${r} is not defined in metrics`);
}

const flatten = <T extends object>(r: DefinitionRow<T>) => {
  const { definition, ...rest } = r;
  return { ...rest, ...definition };
};

export function definitionRoutes(deps: Pick<Deps, 'projects'>, stores: DefinitionStores): RouteSpec[] {
  const { derivedEvents: events, metrics } = stores;
  const nameFree = async (projectId: number, name: string, exceptId?: number) => {
    if (name === ALL_EVENTS) throw badRequest('name: $all_events is reserved');
    const other = await events.byName(projectId, name);
    if (other && other.id !== exceptId) throw conflict('name taken');
  };
  const crud = <T extends object>(
    table: DefinitionTable, base: string, store: DefinitionStore<T>, schema: z.ZodType, createBody: z.ZodType<any>, updateBody: z.ZodType<any>,
    split: (body: any) => { definition?: T; name?: string; description?: string | null },
    check: (projectId: number, def: T, name: string, id?: number) => Promise<void>,
  ): RouteSpec[] => {
    const load = scopedLoader(deps.projects, store, 'definition');
    return [
      route({
        method: 'get', path: base, tag: 'Definitions', auth: 'api', query: ProjectQuery, response: z.array(schema), summary: `List ${table.replace('_', ' ')}`,
        handler: async ({ ctx, query }) => {
          const project = await resolveProject(deps.projects, authOf(ctx), query.projectId);
          return (await store.list(project.id)).map(flatten);
        },
      }),
      route({
        method: 'post', path: base, tag: 'Definitions', auth: 'api', query: ProjectQuery, body: createBody, response: schema, status: 201, summary: `Create (member)`,
        handler: async ({ ctx, query, body }) => {
          const auth = requireRole(ctx, 'member');
          const project = await resolveProject(deps.projects, auth, body.projectId ?? query.projectId);
          const { definition, name, description } = split(body);
          await check(project.id, definition!, name!);
          return flatten(await store.create({ projectId: project.id, createdBy: actorUserId(auth), name: name!, description: description ?? null, definition: definition! }));
        },
      }),
      route({
        method: 'get', path: `${base}/{id}`, tag: 'Definitions', auth: 'api', params: IdParams, response: schema, summary: 'One definition',
        handler: async ({ ctx, params }) => flatten(await load(ctx, params.id)),
      }),
      route({
        method: 'put', path: `${base}/{id}`, tag: 'Definitions', auth: 'api', params: IdParams, body: updateBody, response: schema, summary: 'Update (member)',
        handler: async ({ ctx, params, body }) => {
          const row = await load(ctx, params.id);
          requireRole(ctx, 'member');
          const patch = split(body);
          const definition = { ...row.definition, ...(patch.definition ?? {}) } as T;
          await check(row.project_id, definition, patch.name ?? row.name, row.id);
          await store.update(row.id, { name: patch.name, description: patch.description, definition });
          return flatten((await store.get(row.id))!);
        },
      }),
      route({
        method: 'delete', path: `${base}/{id}`, tag: 'Definitions', auth: 'api', params: IdParams, summary: 'Delete (member)',
        handler: async ({ ctx, params }) => {
          const row = await load(ctx, params.id);
          requireRole(ctx, 'member');
          await store.delete(row.id);
          return { ok: true };
        },
      }),
    ];
  };
  return [
    ...crud<DerivedEventDefinition>('derived_events', '/api/definitions/events', events, DerivedEventSchema, CreateDerivedEventBody, UpdateDerivedEventBody,
      (b) => ({ name: b.name, description: b.description, definition: b.sources ? { sources: b.sources } : undefined }),
      async (projectId, _def, name, id) => nameFree(projectId, name, id)),
    ...crud<CalculatedMetricDefinition>('calculated_metrics', '/api/definitions/metrics', metrics, CalculatedMetricSchema, CreateMetricBody, UpdateMetricBody,
      (b) => {
        const def: Partial<CalculatedMetricDefinition> = {};
        if (b.formula !== undefined) def.formula = b.formula;
        if (b.metrics !== undefined) def.metrics = b.metrics;
        return { name: b.name, description: b.description, definition: Object.keys(def).length ? (def as CalculatedMetricDefinition) : undefined };
      },
      async (_p, def) => checkMetric(def)),
  ];
}
