import type { Deps } from './deps.js';
import type { RouteSpec } from './http/route.js';
import { healthRoutes } from './health/routes.js';
import { adminRoutes } from './admin/routes.js';
import { accountRoutes } from './account/routes.js';
import { projectRoutes } from './projects/routes.js';
import { queryRoutes } from './query/routes.js';
import { irQueryRoutes } from './query/ir/routes.js';
import { cohortRoutes } from './cohorts/routes.js';
import { definitionRoutes } from './definitions/routes.js';
import { metricsRoutes } from './metrics/routes.js';
import { flagRoutes } from './flags/routes.js';
import { ingestionRoutes } from './ingestion/routes.js';
import { dataRoutes } from './data/routes.js';
import { reportRoutes } from './reports/routes.js';
import { boardRoutes } from './boards/routes.js';
import { annotationRoutes } from './annotations/routes.js';
import { lexiconRoutes } from './lexicon/routes.js';

/** Every domain's routes. A new domain adds one line. */
export function allRoutes(deps: Deps): RouteSpec[] {
  return [
    ...healthRoutes(deps),
    ...adminRoutes(deps),
    ...accountRoutes(deps),
    ...projectRoutes(deps),
    ...queryRoutes(deps),
    ...irQueryRoutes(deps),
    ...cohortRoutes(deps),
    ...definitionRoutes(deps),
    ...metricsRoutes(deps),
    ...flagRoutes(deps),
    ...ingestionRoutes(deps),
    ...dataRoutes(deps),
    ...reportRoutes(deps),
    ...boardRoutes(deps),
    ...annotationRoutes(deps),
    ...lexiconRoutes(deps),
  ];
}
