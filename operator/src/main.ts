import { runMain, stopOnSignals } from '@tally-analytics/server/process';
import { loadOperatorConfig } from './config.js';
import { startOperator } from './operator.js';

/**
 * The operator's process entry (`@tally-analytics/operator/main`; the image's `operator` role).
 * No stores of its own: it talks to Kubernetes and to the service's API (docs/operator.md).
 */
async function main() {
  const operatorConfig = loadOperatorConfig();
  const operator = await startOperator(operatorConfig, { defaultMetrics: true });
  console.log(`analytics operator (${operatorConfig.identity}) started; probes and /metrics on ${operator.url || 'no port'}`);
  stopOnSignals('releasing the lease and stopping', () => operator.close());
}

runMain(main);
