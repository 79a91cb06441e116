import type { Deps } from './deps.js';
import type { RouteSpec } from './http/route.js';
import { healthRoutes } from './health/routes.js';
import { adminRoutes } from './admin/routes.js';
import { accountRoutes } from './account/routes.js';
import { machineTokenRoutes } from './orgs/token-routes.js';
import { projectRoutes } from './projects/routes.js';
import { flagSecretRoutes } from './projects/flag-secret.js';
import { queryRoutes } from './query/routes.js';
import { irQueryRoutes } from './query/ir/routes.js';
import { cohortRoutes } from './cohorts/routes.js';
import { definitionRoutes } from './definitions/routes.js';
import { metricsRoutes } from './metrics/routes.js';
import { flagRoutes } from './flags/routes.js';
import { ingestionRoutes } from './ingestion/routes.js';
import { dataRoutes } from './data/routes.js';
import { reportRoutes } from './reports/routes.js';
import { experimentRoutes } from './experiments/routes.js';
import { boardRoutes } from './boards/routes.js';
import { annotationRoutes } from './annotations/routes.js';
import { lexiconRoutes } from './lexicon/routes.js';
import { privacyRoutes } from './privacy/routes.js';
import { DataStore } from './data/store.js';
import { auditRoutes } from './audit/routes.js';
import { createServices, type Services } from './services.js';

/** Every domain's routes. A new domain adds one line. */
export function allRoutes(deps: Deps, services: Services = createServices(deps)): RouteSpec[] {
  const { membership } = services.analyses;
  const data = new DataStore(deps.events, services.executor);
  return [
    ...healthRoutes(deps),
    ...adminRoutes(deps, services),
    ...accountRoutes(deps, services.orgService),
    ...machineTokenRoutes({ orgs: deps.orgs, ...services }),
    ...projectRoutes(deps, services.projectService),
    ...flagSecretRoutes({ projects: deps.projects, flagSecrets: services.flagSecrets }),
    ...queryRoutes(deps, services.executor),
    ...irQueryRoutes(deps, services.executor),
    ...cohortRoutes(deps, { service: services.definitions.cohorts, membership, reads: services.executor }),
    ...definitionRoutes(deps, services.definitions),
    ...metricsRoutes(deps),
    ...flagRoutes(deps, services.flags),
    ...ingestionRoutes(deps),
    ...dataRoutes(deps, data),
    ...reportRoutes(deps, services),
    ...experimentRoutes(deps, services),
    ...boardRoutes(deps, services),
    ...annotationRoutes(deps, services.annotations),
    ...lexiconRoutes(deps, { service: services.lexicon, data }),
    ...privacyRoutes(deps, services.privacy),
    ...auditRoutes(services.audit),
  ];
}
