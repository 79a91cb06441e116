import type { Deps } from '../deps.js';
import { dialectFor, type Dialect } from './dialects/index.js';
import { EventMatcher, type DerivedEventDef } from './filters.js';
import { DefinitionStore } from '../definitions/store.js';
import type { DerivedEventDefinition } from '../definitions/schema.js';

/** What a compiler runs with: the engine's dialect and the project's event-name resolver. */
export interface QueryContext {
  d: Dialect;
  projectId: number;
  events: EventMatcher;
}

export async function queryContext(deps: Deps, projectId: number): Promise<QueryContext> {
  const d = dialectFor(deps.events.dialect);
  const rows = await new DefinitionStore<DerivedEventDefinition>(deps.db, 'derived_events').list(projectId);
  const derived = new Map<string, DerivedEventDef>(rows.map((r) => [r.name, { name: r.name, sources: r.definition.sources }]));
  return { d, projectId, events: new EventMatcher(d, derived) };
}
