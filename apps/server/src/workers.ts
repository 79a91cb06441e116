import type { Deps } from './deps.js';
import { startMetricsServer } from './metrics/server.js';
import { ingestionWorker } from './ingestion/worker.js';
import { privacyWorker } from './privacy/runner.js';
import { identityFoldWorker } from './identity/fold.js';
import { eventsCompactionWorker } from './data/compaction.js';
import { retentionWorker } from './retention/worker.js';
import type { Worker } from './worker.js';

export type { Worker } from './worker.js';

/** Starts every worker of the service. A domain with a consumer adds one line. */
export async function startWorkers(deps: Deps): Promise<Worker[]> {
  return [
    ...(await startMetricsServer(deps)),
    ingestionWorker(deps),
    privacyWorker(deps),
    identityFoldWorker(deps),
    eventsCompactionWorker(deps),
    ...retentionWorker(deps),
  ];
}
