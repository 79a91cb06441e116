/**
 * The image's entry: one binary, the role as first argument (or ROLE), as the chart runs it.
 * `operator` is the operator package's entry, anything else the service's (`all`, `api`, `worker`;
 * it refuses an unknown role). The two packages depend one way (operator -> server), so the choice
 * between them is made here, above both.
 */
const role = process.argv[2] ?? process.env.ROLE ?? 'all';
if (!['all', 'api', 'worker', 'operator'].includes(role)) {
  console.error(`unknown role ${role}: use all, api, worker or operator`);
  process.exit(1);
}
if (role === 'operator') await import('@tally-analytics/operator/main');
else await import('@tally-analytics/server/main');
