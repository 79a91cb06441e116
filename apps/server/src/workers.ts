import type { Deps } from './deps.js';
import { startMetricsServer } from './metrics/server.js';
import { ingestionWorker } from './ingestion/worker.js';

/** A background loop of the `worker` role (e.g. the ingestion consumer). */
export interface Worker {
  name: string;
  stop(): Promise<void>;
}

/** Starts every worker of the service. A domain with a consumer adds one line. */
export async function startWorkers(deps: Deps): Promise<Worker[]> {
  return [
    ...(await startMetricsServer(deps)),
    ingestionWorker(deps),
  ];
}
