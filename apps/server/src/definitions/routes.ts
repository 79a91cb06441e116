import type { Deps } from '../deps.js';
import type { RouteSpec } from '../http/route.js';
import { badRequest, conflict } from '../http/errors.js';
import { formulaRefs, parseFormula } from '../query/formula.js';
import { ALL_EVENTS } from '../query/filters.js';
import type { DefinitionRow, DefinitionStores } from './store.js';
import { definitionCrudRoutes, nameAndDescription } from './crud.js';
import {
  CalculatedMetricSchema, CreateDerivedEventBody, CreateMetricBody, DerivedEventSchema, UpdateDerivedEventBody, UpdateMetricBody,
  type CalculatedMetricDefinition, type DerivedEventDefinition,
} from './schema.js';

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

const summaries = (what: string) => ({ list: `List ${what}`, create: 'Create (member)', get: 'One definition', update: 'Update (member)', delete: 'Delete (member)' });

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
  return [
    ...definitionCrudRoutes(deps.projects, {
      tag: 'Definitions', base: '/api/definitions/events', what: 'definition', store: events,
      schema: DerivedEventSchema, createBody: CreateDerivedEventBody, updateBody: UpdateDerivedEventBody, summaries: summaries('derived events'), present: flatten,
      split: (b) => ({ ...nameAndDescription(b), definition: b.sources ? { sources: b.sources as DerivedEventDefinition['sources'] } : undefined }),
      check: async (projectId, _def, name, id) => nameFree(projectId, name, id),
    }),
    ...definitionCrudRoutes(deps.projects, {
      tag: 'Definitions', base: '/api/definitions/metrics', what: 'definition', store: metrics,
      schema: CalculatedMetricSchema, createBody: CreateMetricBody, updateBody: UpdateMetricBody, summaries: summaries('calculated metrics'), present: flatten,
      split: (b) => {
        const def: Partial<CalculatedMetricDefinition> = {};
        if (b.formula !== undefined) def.formula = b.formula as string;
        if (b.metrics !== undefined) def.metrics = b.metrics as CalculatedMetricDefinition['metrics'];
        return { ...nameAndDescription(b), definition: Object.keys(def).length ? (def as CalculatedMetricDefinition) : undefined };
      },
      check: async (_p, def) => checkMetric(def),
    }),
  ];
}
