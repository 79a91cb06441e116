import type { Db } from '../ports/metadata/knex.js';
import type { AuditStore } from '../audit/store.js';
import type { TenancyBoundary } from '../auth/boundary.js';
import type { CohortChecker } from './cohorts.js';
import { RemoteEvaluator } from './evaluator.js';
import { LiveFlagsCache } from './live.js';
import { FlagService } from './service.js';
import { FlagStore } from './store.js';
import type { LinkIndex } from '../identity/link-index.js';

/** The flags domain's stores and services, built once at start-up. */
export interface FlagsDomain {
  service: FlagService;
  live: LiveFlagsCache;
  evaluator: RemoteEvaluator;
}

export function flagsDomain(db: Db, links: LinkIndex, cohorts: CohortChecker, audit: AuditStore, boundary: TenancyBoundary): FlagsDomain {
  const store = new FlagStore(db);
  const live = new LiveFlagsCache({ load: (projectId) => store.list(projectId, { includeArchived: false }), revisionOf: (projectId) => store.revision(projectId) });
  return { service: new FlagService(store, live, cohorts, audit, boundary), live, evaluator: new RemoteEvaluator(links, cohorts) };
}
