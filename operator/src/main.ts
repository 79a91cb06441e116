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
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: releasing the lease and stopping`);
    await operator.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
