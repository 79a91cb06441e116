import type { Deps } from '../deps.js';
import type { Services } from '../services.js';
import { startMetricsServer } from '../metrics/server.js';
import { ingestionConsumer } from '../ingestion/consumer.js';
import { privacyLoop } from '../privacy/runner.js';
import { identityFoldLoop } from '../identity/fold.js';
import { eventsCompactionLoop } from '../data/compaction.js';
import { retentionLoop } from '../retention/loop.js';
import { boardWarmingLoop } from '../boards/warming.js';
import type { BackgroundLoop } from './loop.js';

export type { BackgroundLoop } from './loop.js';

/** Starts every background loop the `worker` role runs. A domain with a consumer adds one line. */
export async function startWorkerRole(deps: Deps, services: Services): Promise<BackgroundLoop[]> {
  return [
    ...(await startMetricsServer(deps)),
    ingestionConsumer(deps),
    privacyLoop(deps),
    identityFoldLoop(deps),
    eventsCompactionLoop(deps),
    ...retentionLoop(deps),
    ...boardWarmingLoop(deps, services),
  ];
}
