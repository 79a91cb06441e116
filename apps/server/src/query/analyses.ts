import type { Db } from '../ports/metadata/knex.js';
import type { EventStore } from '../ports/events/index.js';
import { definitionStores, type DefinitionStores } from '../definitions/store.js';
import { CohortMembership } from '../cohorts/membership.js';
import { QueryContexts } from './engine/context.js';
import { AnnotationStore } from '../annotations/store.js';

/** The stores and services the analysis domains (definitions, query, cohorts, flags, reports, annotations) share. */
export interface Analyses {
  definitions: DefinitionStores;
  contexts: QueryContexts;
  membership: CohortMembership;
  /** Shown beside trend results. */
  annotations: AnnotationStore;
}

/** Built once at start-up (app.ts buildDeps) and handed to each domain through `deps.analyses`. */
export function buildAnalyses(db: Db, events: EventStore): Analyses {
  const definitions = definitionStores(db);
  const contexts = new QueryContexts(events, definitions.derivedEvents);
  return { definitions, contexts, membership: new CohortMembership(events, contexts, definitions.cohorts), annotations: new AnnotationStore(db) };
}

/**
 * What a project's answers are compiled from or carry beside its events (derived events,
 * calculated metrics, cohorts, annotations): the results cache serves an answer only while it is unchanged.
 */
export function analysisMetadata(analyses: Analyses) {
  return (projectId: number) =>
    Promise.all([
      analyses.definitions.derivedEvents.list(projectId), analyses.definitions.metrics.list(projectId), analyses.annotations.list(projectId),
      analyses.definitions.cohorts.list(projectId),
    ]);
}
