import client from 'prom-client';
import { registry } from '../../metrics/registry.js';

const org = ['org'] as const;

/**
 * The per-organisation query slots (concurrency.ts), by organisation id (organisations are made by
 * administrators, so the series stay as few as the organisations). Per API process, like the slots.
 */
export const queryMetrics = {
  refused: new client.Counter({
    name: 'tally_query_concurrency_refused_total',
    help: 'Analyses refused with 429 too many concurrent queries after waiting QUERY_QUEUE_MS for a slot of their organisation',
    labelNames: org, registers: [registry],
  }),
  waiting: new client.Gauge({
    name: 'tally_query_waiting',
    help: 'Analyses waiting for a slot of their organisation (QUERY_CONCURRENCY_PER_ORG already running)',
    labelNames: org, registers: [registry],
  }),
  running: new client.Gauge({
    name: 'tally_query_running',
    help: 'Analyses holding a slot of their organisation (running on the event store)',
    labelNames: org, registers: [registry],
  }),
};
