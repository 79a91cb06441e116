import type { Deps } from './deps.js';
import type { AuditStore } from './audit/store.js';
import { analysisMetadata, buildAnalyses, type Analyses } from './query/analyses.js';
import { QueryExecutor } from './query/executor.js';
import { DataVersions, ResultsCache, RESULTS_CACHE_DEFAULTS } from './results-cache/index.js';

/**
 * The composition root of the domains' services: each is built once here from the ports and the
 * shared stores, and route factories receive what they need from this object (not the database).
 * A domain that writes adds its service here; every write goes through a service, which takes an
 * `Actor` (audit/actor.ts) and records the change in the audit log in the same transaction.
 */
export interface Services {
  audit: AuditStore;
  /** The stores the analysis domains share (definitions, query contexts, cohort membership, annotations). */
  analyses: Analyses;
  /** Every analysis run passes it: rate limit, cost guard, results cache, per-organisation slots (query/executor.ts). */
  executor: QueryExecutor;
}

export function createServices(deps: Deps): Services {
  const analyses = buildAnalyses(deps.db, deps.events);
  const cache = new ResultsCache(new DataVersions(deps.db), deps.config.resultsCache ?? RESULTS_CACHE_DEFAULTS, analysisMetadata(analyses));
  return {
    audit: deps.audit,
    analyses,
    executor: new QueryExecutor({ config: deps.config, events: deps.events, analyses, rateLimits: deps.rateLimits, projects: deps.projects, cache }),
  };
}
