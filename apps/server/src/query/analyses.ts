import type { Db } from '../ports/metadata/knex.js';
import type { EventStore } from '../ports/events/index.js';
import { definitionStores, type DefinitionStores } from '../definitions/store.js';
import { CohortMembership } from '../cohorts/membership.js';
import { QueryContexts } from './context.js';
import { AnnotationStore } from '../annotations/store.js';

/** The stores and services the analysis domains (definitions, query, cohorts, flags, reports, annotations) share. */
export interface Analyses {
  definitions: DefinitionStores;
  contexts: QueryContexts;
  membership: CohortMembership;
  /** Shown beside trend results. */
  annotations: AnnotationStore;
}

/** Built once at start-up (routes.ts, through `analysesOf`) and handed to each domain's routes. */
export function buildAnalyses(db: Db, events: EventStore): Analyses {
  const definitions = definitionStores(db);
  const contexts = new QueryContexts(events, definitions.derivedEvents);
  return { definitions, contexts, membership: new CohortMembership(events, contexts, definitions.cohorts), annotations: new AnnotationStore(db) };
}

const built = new WeakMap<Db, Analyses>();

/** The analyses of a running service: built on first use and then shared (one per metadata store). */
export function analysesOf(deps: { db: Db; events: EventStore }): Analyses {
  let analyses = built.get(deps.db);
  if (!analyses) {
    analyses = buildAnalyses(deps.db, deps.events);
    built.set(deps.db, analyses);
  }
  return analyses;
}
