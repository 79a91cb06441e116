import type { EventStore } from '../../ports/events/index.js';
import type { DefinitionStores } from '../../definitions/store.js';
import { dialectFor, type Dialect } from '../dialects/index.js';
import { EventMatcher, type DerivedEventDef } from './filters.js';
import type { QueryContext } from './context.js';
import type { EventMetric, IrDocument } from '../ir/schema.js';
import { filterConditions, resolveCohorts, withCohorts } from './cohorts.js';

/**
 * The IR compiles onto the v0 builders by giving each event metric a name the project's
 * EventMatcher resolves like a derived event: its event (or the derived event's sources) AND its
 * own filters. The v0 segmentation and funnel SQL then run unchanged on those names.
 */
export const metricEventName = (id: string) => `\u0001ir:${id}`;

/** What it reads: the project's derived events and the event store's link and merge state. */
export interface IrContextDeps {
  events: EventStore;
  analyses: { definitions: Pick<DefinitionStores, 'derivedEvents' | 'cohorts'> };
}

/**
 * The context a document runs with: its metrics' names, and the cohorts it names resolved (400
 * naming the field of one not in the project) with its cohort filters applied to every read.
 */
export async function irContext(deps: IrContextDeps, projectId: number, q: Pick<IrDocument<unknown>, 'metrics' | 'filters' | 'breakdown'>, now = Date.now()): Promise<QueryContext> {
  const [rows, overrides, unmerged, cohorts] = await Promise.all([
    deps.analyses.definitions.derivedEvents.list(projectId), deps.events.hasUnfoldedLinks(projectId), deps.events.unmergedRanges(),
    resolveCohorts(deps.analyses.definitions.cohorts, projectId, q),
  ]);
  const base = irMetricContext(dialectFor(deps.events.dialect, deps.events.materialized), projectId, q, rows.map((r) => ({ name: r.name, sources: r.definition.sources })), { overrides, unmerged });
  return withCohorts({ ...base, cohorts: { byId: cohorts, now } }, filterConditions(q.filters, cohorts), now);
}

/** The same from a list of the project's derived events (benchmarks and callers that have them). */
export function irMetricContext(d: Dialect, projectId: number, q: Pick<IrDocument<unknown>, 'metrics'>, derivedEvents: DerivedEventDef[], store: Pick<QueryContext, 'overrides' | 'unmerged'> = {}): QueryContext {
  const derived = new Map<string, DerivedEventDef>(derivedEvents.map((r) => [r.name, r]));
  for (const m of q.metrics) {
    if (m.kind !== 'event') continue;
    derived.set(metricEventName(m.id), { name: metricEventName(m.id), sources: metricSources(m, derived) });
  }
  return { d, projectId, events: new EventMatcher(d, derived), ...store };
}

function metricSources(m: EventMetric, derived: Map<string, DerivedEventDef>): DerivedEventDef['sources'] {
  const own = m.filters ?? [];
  const def = derived.get(m.event);
  if (!def) return [{ event: m.event, filters: own }];
  return def.sources.map((s) => ({ event: s.event, filters: [...(s.filters ?? []), ...own] }));
}
