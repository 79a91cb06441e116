/**
 * npm run bench:operator [-- --json] [--projects 50] [--flags 1000] [--changes 200] [--node-args '<node flags of the operator>']
 *
 * The operator as a platform team meets it, on the in-process fake Kubernetes API (the operator's
 * RBAC enforced) with the service and the operator each in its own process (embedded stores):
 *  - cold start: N Projects and M FeatureFlags exist before the operator starts; time until all
 *    are Ready, and the tenant config lists every project;
 *  - change latency: a FeatureFlag's rollout flipped 0 ↔ 100, time until /flags/evaluate gives the
 *    new answer (p50/p99), next to the same flip made directly through the flags API on an
 *    unmanaged flag (the floor: what the service's own evaluation path takes);
 *  - the operator's RSS (now and peak) with everything in its caches.
 * Aims (issue): p99 < 2 s, all Ready < 60 s, RSS < 200 MiB.
 */
import os from 'node:os';
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { FakeKube, projectSecret } from '../test/support/kube/index.js';
import { grantsFromPermissions, OPERATOR_USER, POD_NS } from '../test/support/operator.js';
import { execFileSync } from 'node:child_process';
import YAML from 'yaml';
import { BENCH_KEY, ROOT, benchApi, startBenchService } from './bench-support.js';

const args = process.argv.slice(2);
const opt = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const JSON_OUT = args.includes('--json');
/** --tsx: run the operator from the TypeScript sources (as `npm start`); default: compiled, as the image runs it. */
const TSX = args.includes('--tsx');
const PROJECTS = opt('projects', 50);
const FLAGS = opt('flags', 1000);
const CHANGES = opt('changes', 200);
/**
 * The operator's node flags: the chart's `operator.nodeOptions` (as deployed), or --node-args
 * '<flags>' ('' for Node's defaults).
 */
const NODE_ARGS = (() => {
  const i = args.indexOf('--node-args');
  const chart = (YAML.parse(readFileSync(path.join(ROOT, 'charts/tally/values.yaml'), 'utf8')) as { operator: { nodeOptions?: string } }).operator.nodeOptions ?? '';
  return (i >= 0 ? args[i + 1] ?? '' : chart).split(' ').filter(Boolean);
})();
const NS = 'bench';
const log = (...a: unknown[]) => { if (!JSON_OUT) console.log(...a); };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const rssOf = (pid: number) => {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0) / 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
};

let api: Awaited<ReturnType<typeof startBenchService>> | undefined;
let operator: Awaited<ReturnType<typeof startBenchService>> | undefined;

async function main() {
  const load = os.loadavg().map((l) => l.toFixed(2));
  const fake = await FakeKube.start({ historyLimit: 5000, bookmarkIntervalMs: 30_000 });
  fake.enforceRbac(OPERATOR_USER, grantsFromPermissions(POD_NS));
  const tenantDir = await mkdtemp(path.join(os.tmpdir(), 'bench-tenant-'));
  const projection = await projectSecret(fake, POD_NS, 'tally-tenant-config', tenantDir);
  api = await startBenchService({ name: 'bench-operator-api', env: { TENANT_CONFIG_PATH: tenantDir } });
  const custom = fake.kubeConfig().makeApiClient(CustomObjectsApi);
  const org = await benchApi(api!.url, 'POST', '/admin/orgs', { name: 'bench' });
  const cr = (kind: string, plural: string, name: string, spec: object) => custom.createNamespacedCustomObject({
    group: 'analytics.tally.dev', version: 'v1', namespace: NS, plural,
    body: { apiVersion: 'analytics.tally.dev/v1', kind, metadata: { name, namespace: NS }, spec },
  });

  // Projects may act only for an organisation an Organization manages and whose namespaces list
  // theirs: the bench's organisation is adopted by one listing the bench namespace.
  await custom.createClusterCustomObject({
    group: 'analytics.tally.dev', version: 'v1', plural: 'organizations',
    body: {
      apiVersion: 'analytics.tally.dev/v1', kind: 'Organization',
      metadata: { name: 'bench', annotations: { 'analytics.tally.dev/adopt-id': String(org.id) } },
      spec: { displayName: 'bench', namespaces: [NS] },
    },
  });

  // --- cold start ---
  log(`creating an Organization, ${PROJECTS} Projects and ${FLAGS} FeatureFlags before the operator starts`);
  for (let p = 0; p < PROJECTS; p++) await cr('Project', 'projects', `p${p}`, { displayName: `Project ${p}`, organizationId: org.id });
  for (let f = 0; f < FLAGS; f++) {
    await cr('FeatureFlag', 'featureflags', `f${f}`, { projectRef: { name: `p${f % PROJECTS}` }, key: `flag-${f}`, name: `Flag ${f}`, rules: [{ rolloutPct: 100 }] });
  }
  const kubeconfig = await fake.kubeconfigFile(OPERATOR_USER, POD_NS);
  if (!TSX) {
    log('compiling (npm run build) to run the operator as the image does');
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  }
  const started = Date.now();
  operator = await startBenchService({
    name: 'bench-operator', role: 'operator',
    env: { KUBECONFIG: kubeconfig, OPERATOR_API_URL: api.url, SUPERADMIN_KEY: BENCH_KEY, POD_NAMESPACE: POD_NS, METRICS_PORT: '0', POD_NAME: 'bench-operator' },
    listening: /probes and \/metrics on (http:\/\/\S+)/,
    entry: TSX ? undefined : path.join(ROOT, 'dist/bin/tally.js'),
    nodeArgs: NODE_ARGS,
  });
  const processUpS = (Date.now() - started) / 1000;
  const isReady = (o: any) => o.status?.observedGeneration === o.metadata.generation && o.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True');
  const readyCount = () => ['projects', 'featureflags'].reduce((n, plural) => n + fake.api.store.list(`analytics.tally.dev/${plural}`, NS).filter(isReady).length, 0);
  let lastLog = 0;
  while (readyCount() < PROJECTS + FLAGS) {
    if (Date.now() - started > 300_000) throw new Error(`only ${readyCount()} of ${PROJECTS + FLAGS} Ready after 300 s`);
    if (Date.now() - lastLog > 5_000) { log(`  ${readyCount()} Ready after ${((Date.now() - started) / 1000).toFixed(0)} s`); lastLog = Date.now(); }
    await sleep(50);
  }
  const coldStartS = (Date.now() - started) / 1000;
  const tenantListed = async () => {
    const s = fake.api.store.get('/secrets', POD_NS, 'tally-tenant-config') as any;
    return s ? JSON.parse(Buffer.from(s.data['tenants.json'], 'base64').toString()).projects.length : 0;
  };
  while ((await tenantListed()) < PROJECTS) await sleep(50);
  const tenantConfigS = (Date.now() - started) / 1000;
  await projection.settled();
  const rssAfterColdStart = rssOf(operator!.child.pid!);
  log(`cold start: ${PROJECTS + FLAGS} resources Ready ${coldStartS.toFixed(1)} s after the operator process was started (up after ${processUpS.toFixed(1)} s), tenant config complete at ${tenantConfigS.toFixed(1)} s; operator RSS ${rssAfterColdStart.rss.toFixed(0)} MiB (peak ${rssAfterColdStart.peak.toFixed(0)})`);

  // --- change → new answer ---
  const p0 = fake.api.store.get('analytics.tally.dev/projects', NS, 'p0') as any;
  const token = p0.status.token;
  const projectId = p0.status.projectId;
  const evaluate = async (key: string) => {
    const r = await fetch(`${api!.url}/flags/evaluate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token, distinct_id: 'bench-user', flag_keys: [key] }) });
    return ((await r.json()) as any).flags?.[key]?.enabled as boolean | undefined;
  };
  const untilAnswer = async (key: string, want: boolean, from: number) => {
    for (;;) {
      if ((await evaluate(key)) === want) return Date.now() - from;
      if (Date.now() - from > 30_000) throw new Error(`${key}: no new answer after 30 s`);
      await sleep(5);
    }
  };
  const direct = await benchApi(api!.url, 'POST', '/api/flags', { projectId, key: 'direct', name: 'Direct', rules: [{ rolloutPct: 100 }] });
  const viaOperator: number[] = [];
  const viaApi: number[] = [];
  log(`${CHANGES} rollout flips through a FeatureFlag, and as many through the API directly`);
  for (let i = 0; i < CHANGES; i++) {
    const on = i % 2 === 1;
    let t = Date.now();
    await custom.patchNamespacedCustomObject({ group: 'analytics.tally.dev', version: 'v1', namespace: NS, plural: 'featureflags', name: 'f0', body: { spec: { rules: [{ rolloutPct: on ? 100 : 0 }] } } }, MERGE);
    viaOperator.push(await untilAnswer('flag-0', on, t));
    t = Date.now();
    await benchApi(api!.url, 'PUT', `/api/flags/${direct.id}`, { rules: [{ rolloutPct: on ? 100 : 0 }] });
    viaApi.push(await untilAnswer('direct', on, t));
  }
  viaOperator.sort((a, b) => a - b);
  viaApi.sort((a, b) => a - b);
  const rss = rssOf(operator!.child.pid!);
  const metrics = await (await fetch(`${operator!.url}/metrics`)).text();
  const apiRequests = metrics.split('\n').filter((l) => l.startsWith('tally_operator_api_requests_total{')).reduce((n, l) => n + Number(l.split(' ').pop()), 0);
  // Where the RSS is: V8's heap spaces (committed / used) from the operator's default metrics.
  const spaceMiB = (name: string) => Object.fromEntries(metrics.split('\n').filter((l) => l.startsWith(`${name}{space="`))
    .map((l) => [/space="([^"]+)"/.exec(l)![1], Math.round(Number(l.split(' ').pop()) / 2 ** 20)]).filter(([, v]) => v !== 0));
  const heap = { committed: spaceMiB('nodejs_heap_space_size_total_bytes'), used: spaceMiB('nodejs_heap_space_size_used_bytes') };

  const result = {
    projects: PROJECTS, flags: FLAGS, changes: CHANGES, operator_runs: TSX ? 'tsx' : 'compiled',
    operator_process_up_s: Number(processUpS.toFixed(2)),
    cold_start_all_ready_s: Number(coldStartS.toFixed(2)),
    cold_start_tenant_config_s: Number(tenantConfigS.toFixed(2)),
    change_p50_ms: pct(viaOperator, 50), change_p99_ms: pct(viaOperator, 99), change_max_ms: viaOperator.at(-1),
    direct_api_p50_ms: pct(viaApi, 50), direct_api_p99_ms: pct(viaApi, 99),
    operator_rss_mib: Math.round(rss.rss), operator_peak_rss_mib: Math.round(rss.peak), operator_node_args: NODE_ARGS.join(' '),
    operator_heap_committed_mib: heap.committed, operator_heap_used_mib: heap.used,
    operator_api_requests: apiRequests,
    loadavg_start: load.join(' '), loadavg_end: os.loadavg().map((l) => l.toFixed(2)).join(' '),
  };
  log(`change → new answer on /flags/evaluate: p50 ${result.change_p50_ms} ms, p99 ${result.change_p99_ms} ms, max ${result.change_max_ms} ms (the same change through the API: p50 ${result.direct_api_p50_ms} ms, p99 ${result.direct_api_p99_ms} ms)`);
  log(`operator RSS ${result.operator_rss_mib} MiB, peak ${result.operator_peak_rss_mib} MiB (V8 heap spaces committed ${JSON.stringify(heap.committed)}, used ${JSON.stringify(heap.used)} MiB); ${apiRequests} API requests; load average ${result.loadavg_start} → ${result.loadavg_end}`);
  log(`aims: p99 < 2000 ms ${result.change_p99_ms < 2000 ? 'met' : 'NOT met'}; all Ready < 60 s ${coldStartS < 60 ? 'met' : 'NOT met'}; RSS < 200 MiB ${rss.peak < 200 ? 'met' : 'NOT met'}`);
  if (JSON_OUT) console.log(JSON.stringify(result));

  projection.stop();
  await fake.stop();
}

main().then(
  () => { operator?.child.kill('SIGTERM'); api?.child.kill('SIGTERM'); process.exit(0); },
  (err) => { console.error(err); operator?.child.kill('SIGKILL'); api?.child.kill('SIGKILL'); process.exit(1); },
);
