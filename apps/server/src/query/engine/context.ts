import type { EventStore } from '../../ports/events/index.js';
import { dialectFor, type Dialect } from '../dialects/index.js';
import type { Dedup } from '../dialects/dialect.js';
import { EventMatcher, type DerivedEventDef } from './filters.js';
import type { DefinitionStore } from '../../definitions/store.js';
import type { DerivedEventDefinition } from '../../definitions/schema.js';
import type { ResolvedCohort } from './cohorts.js';

/** What a compiler runs with: the engine's dialect and the project's event-name resolver. */
export interface QueryContext {
  d: Dialect;
  projectId: number;
  events: EventMatcher;
  /**
   * Whether the project has links not yet folded into its events' person_id (identity/fold.ts):
   * then reads join them; otherwise person_id alone is every event's identity. Absent: true
   * (always correct, only slower).
   */
  overrides?: boolean;
  /**
   * Time ranges whose stored rows may hold copies of a dedup key (EventStore.unmergedRanges):
   * reads that count every row deduplicate only those. Absent: deduplicate everything.
   */
  unmerged?: ReadonlyArray<readonly [number, number]>;
  /** The cohorts an IR document names, resolved (engine/cohorts.ts), and the time memberships are taken at. */
  cohorts?: { byId: Map<number, ResolvedCohort>; now: number };
  /** This context before cohort conditions restricted its reads (what memberships are computed on). */
  plain?: QueryContext;
}

/** `dedup` for a read where every row counts (dialect canonicalEvents): the unmerged ranges when known. */
export const dedupOf = (q: QueryContext): Dedup => q.unmerged ?? true;

/** Builds a project's query context (its derived events read per query, so edits apply at once). */
export class QueryContexts {
  private d: Dialect;

  constructor(private store: EventStore, private derivedEvents: DefinitionStore<DerivedEventDefinition>) {
    this.d = dialectFor(store.dialect, store.materialized);
  }

  async forProject(projectId: number): Promise<QueryContext> {
    const [rows, overrides, unmerged] = await Promise.all([this.derivedEvents.list(projectId), this.store.hasUnfoldedLinks(projectId), this.store.unmergedRanges()]);
    const derived = new Map<string, DerivedEventDef>(rows.map((r) => [r.name, { name: r.name, sources: r.definition.sources }]));
    // A key materialised since (EventStore.materialize) gives the store a new map: reads use its column from now on.
    if (this.d.materialized !== this.store.materialized && this.store.materialized.size > 0) this.d = dialectFor(this.store.dialect, this.store.materialized);
    return { d: this.d, projectId, events: new EventMatcher(this.d, derived), overrides, unmerged };
  }
}
