import type { Deps } from '../deps.js';
import type { RouteSpec } from '../http/route.js';
import type { DefinitionRow } from './store.js';
import type { DefinitionServices } from './service.js';
import { definitionCrudRoutes, nameAndDescription } from './crud.js';
import {
  CalculatedMetricSchema, CreateDerivedEventBody, CreateMetricBody, DerivedEventSchema, UpdateDerivedEventBody, UpdateMetricBody,
  type CalculatedMetricDefinition, type DerivedEventDefinition,
} from './schema.js';

const summaries = (what: string) => ({ list: `List ${what}`, create: 'Create (member)', get: 'One definition', update: 'Update (member)', delete: 'Delete (member)' });

const flatten = <T extends object>(r: DefinitionRow<T>) => {
  const { definition, ...rest } = r;
  return { ...rest, ...definition };
};

export function definitionRoutes(deps: Pick<Deps, 'projects'>, services: Pick<DefinitionServices, 'derivedEvents' | 'metrics'>): RouteSpec[] {
  return [
    ...definitionCrudRoutes(deps.projects, {
      tag: 'Definitions', base: '/api/definitions/events', what: 'definition', service: services.derivedEvents,
      schema: DerivedEventSchema, createBody: CreateDerivedEventBody, updateBody: UpdateDerivedEventBody, summaries: summaries('derived events'), present: flatten,
      split: (b) => ({ ...nameAndDescription(b), definition: b.sources ? { sources: b.sources as DerivedEventDefinition['sources'] } : undefined }),
    }),
    ...definitionCrudRoutes(deps.projects, {
      tag: 'Definitions', base: '/api/definitions/metrics', what: 'definition', service: services.metrics,
      schema: CalculatedMetricSchema, createBody: CreateMetricBody, updateBody: UpdateMetricBody, summaries: summaries('calculated metrics'), present: flatten,
      split: (b) => {
        const def: Partial<CalculatedMetricDefinition> = {};
        if (b.formula !== undefined) def.formula = b.formula as string;
        if (b.metrics !== undefined) def.metrics = b.metrics as CalculatedMetricDefinition['metrics'];
        return { ...nameAndDescription(b), definition: Object.keys(def).length ? (def as CalculatedMetricDefinition) : undefined };
      },
    }),
  ];
}
