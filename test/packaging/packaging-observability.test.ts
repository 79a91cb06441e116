import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { OperatorMetrics } from '../../operator/src/metrics.js';
import { areaOf } from '../../apps/server/src/metrics/http.js';
import { startService } from '../../apps/server/src/app.js';
import { forEachBackend } from '../support/backends.js';
import { CHART_DIR, find, helmTemplate, repoRoot, type K8sObject } from '../support/chart.js';
import { freePort } from '../support/processes.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * Alerts and a dashboard shipped with the chart, and /metrics kept off the API port:
 * - the rule file passes `promtool check rules`, and the rules as the chart renders them pass their
 *   unit tests (`promtool test rules`: each alert fires on its fault, a pod gone included, and
 *   nothing fires on a healthy idle installation); every alert links its section of docs/runbooks.md;
 * - every metric name the rules and the dashboard query is one the code exposes (read from a
 *   running service's /metrics and the operator's registry);
 * - with METRICS_PORT set, /metrics answers 404 on the API port and is served on its own port; the
 *   chart sets it, and neither the Service behind the Ingress nor the Ingress reaches that port.
 */

const run = promisify(execFile);
const RULES = join(CHART_DIR, 'files/prometheus-rules.yaml');
const DASHBOARD = join(CHART_DIR, 'files/grafana-dashboard.json');

/** Metric names an expression reads: identifiers left once label matchers, groupings, ranges and function calls are removed. */
export function metricNames(expr: string): string[] {
  const KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', 'inf', 'nan']);
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\$\w+/g, ' ');
  const out = new Set<string>();
  for (const m of stripped.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?/g)) {
    if (m[2] || KEYWORDS.has(m[1].toLowerCase())) continue;
    out.add(m[1]);
  }
  return [...out];
}

/** Names a Prometheus text exposition offers (histograms: their _bucket, _sum, _count series). */
function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(m[1]);
    if (m[2] === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(m[1] + s);
  }
  return names;
}

async function dashboardExprs(): Promise<string[]> {
  const dash = JSON.parse(await readFile(DASHBOARD, 'utf8'));
  const exprs: string[] = [];
  const walk = (panels: any[]) => {
    for (const p of panels ?? []) {
      for (const t of p.targets ?? []) exprs.push(t.expr);
      walk(p.panels);
    }
  };
  walk(dash.panels);
  for (const v of dash.templating?.list ?? []) if (typeof v.query === 'object' && v.query.query) exprs.push(v.query.query.replace(/^label_values\(([^,]+),.*$/, '$1'));
  return exprs;
}
async function ruleExprs(): Promise<Array<{ alert: string; expr: string }>> {
  const file = parse(await readFile(RULES, 'utf8'));
  return file.groups.flatMap((g: any) => g.rules.map((r: any) => ({ alert: r.alert, expr: r.expr })));
}
const RUNBOOKS = 'https://runbooks.example/tally';
/** The PrometheusRule's spec as `helm template` renders it (namespace tally, runbooks at RUNBOOKS). */
async function renderedRules(set: string[] = []): Promise<any> {
  const r = await helmTemplate('tally', { set: ['prometheusRule.enabled=true', 'serviceMonitor.enabled=true', `prometheusRule.runbookUrl=${RUNBOOKS}`, ...set] });
  assert.ok(r.ok, r.stderr);
  return find(r.objects, 'PrometheusRule', 'tally').spec;
}
/** Series Prometheus itself (up) or kube-state-metrics (kube_*) provide, not Tally's code. */
const notFromTally = (name: string) => name === 'up' || name.startsWith('kube_');

describe('alert rules (promtool)', function () {
  this.timeout(60_000);

  it('pass promtool check rules', async () => {
    const { stdout } = await run('promtool', ['check', 'rules', RULES]);
    assert.match(stdout, /SUCCESS: 18 rules found/);
  });

  it('pass promtool test rules on the rendered rules: each alert fires on its fault (pods gone included), and none on a healthy idle installation', async () => {
    const tests = join(repoRoot, 'test/prometheus/rules.test.yaml');
    const dir = await mkdtemp(join(tmpdir(), 'rules-'));
    await writeFile(join(dir, 'rules.yaml'), stringify(await renderedRules()));
    await copyFile(tests, join(dir, 'rules.test.yaml'));
    const { stdout } = await run('promtool', ['test', 'rules', join(dir, 'rules.test.yaml')]).catch((e) => ({ stdout: `${e.stdout}${e.stderr}` }));
    assert.match(stdout, /SUCCESS/, stdout);
    // The unit tests cover every alert: one firing case each, and the idle case lists them all.
    const spec = parse(await readFile(tests, 'utf8'));
    const alerts = (await ruleExprs()).map((r) => r.alert).sort();
    const idle = spec.tests[0].alert_rule_test;
    assert.deepEqual([...new Set(idle.map((t: any) => t.alertname))].sort(), alerts);
    assert.ok(idle.every((t: any) => t.exp_alerts.length === 0));
    const firing = new Set(spec.tests.flatMap((t: any) => t.alert_rule_test.filter((a: any) => a.exp_alerts?.length > 0).map((a: any) => a.alertname)));
    assert.deepEqual([...firing].sort(), alerts);
  });

  it('promtool test rules fails when an alert does not fire as the test expects (the run is not a no-op)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rules-'));
    // The pod-gone rule written as up == 0 instead of absent(): silent once the series are gone.
    const spec = await renderedRules();
    const targets = spec.groups.find((g: any) => g.name === 'tally.targets');
    targets.rules.find((r: any) => r.alert === 'TallyApiDown').expr = 'sum by (namespace) (up{namespace="tally", component="api"}) == 0';
    await writeFile(join(dir, 'rules.yaml'), stringify(spec));
    await copyFile(join(repoRoot, 'test/prometheus/rules.test.yaml'), join(dir, 'rules.test.yaml'));
    const err = await run('promtool', ['test', 'rules', join(dir, 'rules.test.yaml')]).then(() => undefined, (e) => `${e.stdout}${e.stderr}`);
    assert.ok(err, 'promtool passed a rule that never fires on a gone pod');
    assert.match(err, /alertname: TallyApiDown, time: 16m/);
  });

  it('every alert links its own section of docs/runbooks.md, which says what it means, what to check and how to fix it', async () => {
    const spec = await renderedRules();
    const book = await readFile(join(repoRoot, 'docs/runbooks.md'), 'utf8');
    const sections = new Map(book.split(/^## /m).slice(1).map((s) => [s.slice(0, s.indexOf('\n')).trim(), s]));
    for (const rule of spec.groups.flatMap((g: any) => g.rules)) {
      assert.equal(rule.annotations.runbook_url, `${RUNBOOKS}#${rule.alert.toLowerCase()}`, rule.alert);
      const section = sections.get(rule.alert);
      assert.ok(section, `docs/runbooks.md has no "## ${rule.alert}"`);
      for (const part of ['What it means', 'What to check', 'How to fix']) assert.match(section, new RegExp(`^\\*\\*${part}\\*\\*`, 'm'), `${rule.alert}: ${part}`);
    }
    assert.equal(sections.size, spec.groups.flatMap((g: any) => g.rules).length, 'one section per alert, none left over');
  });

  it('promtool refuses a broken rule file (the check is not a no-op)', async () => {
    const bad = join(await mkdtemp(join(tmpdir(), 'rules-')), 'bad.yaml');
    await writeFile(bad, 'groups:\n  - name: x\n    rules:\n      - alert: X\n        expr: sum by (namespace (rate(x[5m]))\n');
    await assert.rejects(run('promtool', ['check', 'rules', bad]));
  });

  it('the metric-name extraction reads names, not functions, labels or keywords', () => {
    assert.deepEqual(metricNames('sum by (namespace) (rate(a_total{code=~"5.."}[5m])) / sum(rate(b_total[5m])) > 0.05 unless c'), ['a_total', 'b_total', 'c']);
    assert.deepEqual(metricNames('histogram_quantile(0.95, sum by (le) (rate(h_bucket{area="query"}[$__rate_interval])))'), ['h_bucket']);
    assert.deepEqual(metricNames('topk by (ns) (1, a * on (ns, job) group_left (owner) b{x="1"}) and on (job) c == 1'), ['a', 'b', 'c']);
  });
});

describe('chart: PrometheusRule and Grafana dashboard', function () {
  this.timeout(60_000);

  it('render the shipped files when enabled (rule labels, dashboard sidecar label), and nothing by default', async () => {
    const off = await helmTemplate('tally');
    assert.ok(off.ok, off.stderr);
    assert.ok(!off.objects.some((o) => o.kind === 'PrometheusRule' || o.metadata.name === 'tally-dashboard'));
    const on = await helmTemplate('tally', { namespace: 'analytics', set: ['prometheusRule.enabled=true', 'serviceMonitor.enabled=true', 'prometheusRule.labels.release=prom', 'grafanaDashboard.enabled=true', 'grafanaDashboard.namespace=monitoring'] });
    assert.ok(on.ok, on.stderr);
    const rule = find(on.objects, 'PrometheusRule', 'tally');
    assert.equal(rule.apiVersion, 'monitoring.coreos.com/v1');
    assert.equal(rule.metadata.labels?.release, 'prom');
    const text = (await readFile(RULES, 'utf8')).replaceAll('${NAMESPACE}', 'analytics').replaceAll('${RUNBOOK_URL}', 'https://github.com/tally-analytics/tally/blob/main/docs/runbooks.md');
    assert.deepEqual(rule.spec, parse(text), 'the rule file with the namespace and runbook address put in (Prometheus templates untouched by Helm)');
    assert.match(JSON.stringify(rule.spec), /\{\{ \$labels\.namespace \}\}/);
    assert.doesNotMatch(JSON.stringify(rule.spec), /\$\{/);
    assert.ok(rule.spec.groups.flatMap((g: any) => g.rules).every((r: any) => /namespace="analytics"/.test(r.expr)), 'every alert watches its own installation only');
    const cm = find(on.objects, 'ConfigMap', 'tally-dashboard');
    assert.equal(cm.metadata.labels?.grafana_dashboard, '1');
    assert.equal(cm.metadata.namespace, 'monitoring');
    assert.deepEqual(JSON.parse(cm.data['tally.json']), JSON.parse(await readFile(DASHBOARD, 'utf8')));
  });

  it('without the operator its alerts are left out; without ServiceMonitors the rules are refused (they read the component label)', async () => {
    const noOperator = await renderedRules(['operator.enabled=false']);
    const alerts = noOperator.groups.flatMap((g: any) => g.rules.map((r: any) => r.alert));
    assert.ok(!noOperator.groups.some((g: any) => g.name === 'tally.operator'));
    assert.ok(alerts.includes('TallyApiDown') && alerts.includes('TallyTenantConfigErrors') && alerts.includes('TallyBackupFailed'));
    assert.ok(!alerts.includes('TallyOperatorDown') && !alerts.includes('TallyOperatorNoLeader'));
    const refused = await helmTemplate('tally', { set: ['prometheusRule.enabled=true'] });
    assert.equal(refused.ok, false);
    assert.match(refused.stderr, /prometheusRule\.enabled=true needs serviceMonitor\.enabled=true/);
  });

  it('the ServiceMonitors label each target with its pod\'s component, the value the alerts select on', async () => {
    const r = await helmTemplate('tally', { set: ['serviceMonitor.enabled=true'] });
    assert.ok(r.ok, r.stderr);
    const rules = JSON.stringify(await renderedRules());
    for (const component of ['api', 'worker', 'operator']) {
      const sm = find(r.objects, 'ServiceMonitor', `tally-${component}`);
      assert.deepEqual(sm.spec.endpoints[0].relabelings, [{ sourceLabels: ['__meta_kubernetes_pod_label_app_kubernetes_io_component'], targetLabel: 'component', action: 'replace' }]);
      const workload = r.objects.find((o) => ['Deployment', 'StatefulSet'].includes(o.kind) && o.metadata.name === `tally-${component}`)!;
      assert.equal(workload.spec.template.metadata.labels['app.kubernetes.io/component'], component, 'the pod label the relabelling reads');
      assert.ok(rules.includes(`component=\\"${component}\\"`), `an alert selects component="${component}"`);
    }
  });

  it('the dashboard covers ingestion, queries, flags and the operator', async () => {
    const dash = JSON.parse(await readFile(DASHBOARD, 'utf8'));
    assert.deepEqual(dash.panels.filter((p: any) => p.type === 'row').map((p: any) => p.title), ['Ingestion', 'Queries', 'Flags', 'Operator', 'Experiments']);
    assert.ok(dash.panels.filter((p: any) => p.type !== 'row').length >= 12);
  });

  it('/metrics never behind the Ingress: the API pods serve it on METRICS_PORT, a port the Ingress Service lacks', async () => {
    const r = await helmTemplate('tally', { set: ['ingress.enabled=true', 'serviceMonitor.enabled=true', 'networkPolicy.enabled=true'] });
    assert.ok(r.ok, r.stderr);
    const api = find(r.objects, 'Deployment', 'tally-api').spec.template.spec.containers[0];
    const metricsPort = api.ports.find((p: any) => p.name === 'metrics');
    assert.ok(metricsPort, 'api container names a metrics port');
    assert.equal(api.env.find((e: any) => e.name === 'METRICS_PORT')?.value, String(metricsPort.containerPort));
    assert.notEqual(metricsPort.containerPort, api.ports.find((p: any) => p.name === 'http').containerPort);
    const ingress = find(r.objects, 'Ingress', 'tally-api');
    const backends = ingress.spec.rules.flatMap((x: any) => x.http.paths.map((p: any) => p.backend.service));
    for (const b of backends) {
      const svc = find(r.objects, 'Service', b.name);
      assert.ok(!svc.spec.ports.some((p: any) => p.targetPort === 'metrics' || p.targetPort === metricsPort.containerPort), `${b.name} exposes the metrics port`);
    }
    const monitors = r.objects.filter((o: K8sObject) => o.kind === 'ServiceMonitor');
    assert.equal(monitors.length, 3);
    for (const m of monitors) assert.deepEqual(m.spec.endpoints.map((e: any) => e.port), ['metrics'], m.metadata.name);
    assert.deepEqual(find(r.objects, 'Service', 'tally-api-metrics').spec.ports.map((p: any) => p.targetPort), ['metrics']);
    const np = find(r.objects, 'NetworkPolicy', 'tally-api');
    assert.ok(np.spec.ingress.some((i: any) => i.ports[0].port === 'metrics' && i.from?.[0]?.namespaceSelector), 'metrics port only from the scrape namespaces');
  });
});

forEachBackend('/metrics on its own port', (backend) => {
  let t: TestService;
  let metricsPort: number;

  before(async function () {
    this.timeout(60_000);
    metricsPort = await freePort();
    t = await startTestService(backend, { METRICS_PORT: String(metricsPort) });
  });
  after(async function () {
    this.timeout(30_000);
    await t?.close();
  });

  it('with METRICS_PORT: /metrics on the API port is 404, on the metrics port 200 with the HTTP, quota and ingestion metrics', async function () {
    this.timeout(30_000);
    const onApi = await fetch(`${t.url}/metrics`);
    assert.equal(onApi.status, 404);
    assert.doesNotMatch(await onApi.text(), /ingest_|nodejs_/);
    await fetch(`${t.url}/health/live`);
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /^tally_http_requests_total\{area="health",code="200"\} [1-9]/m);
    assert.match(text, /^tally_http_requests_total\{area="health",code="404"\} /m, 'the refused /metrics counted too');
    for (const name of ['tally_ingest_quota_rejected_events_total', 'tally_http_rate_limited_total', 'tally_http_request_duration_seconds', 'tally_ingest_consumer_lag_messages']) assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'));
  });

  it('an organisation over its quota: its events are refused and counted in tally_ingest_quota_rejected_events_total (and its old name, for one release)', async function () {
    this.timeout(30_000);
    const scrape = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const count = (text: string, name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? 'NaN');
    const read = async () => count(await scrape(), 'tally_ingest_quota_rejected_events_total');
    const before = await read();
    const org = (await t.admin.post('/admin/orgs', { name: `quota-metric-${Date.now()}`, monthlyEventQuota: 0 })).body;
    const project = (await t.admin.post(`/admin/orgs/${org.id}/projects`, { name: 'q' })).body;
    const events = [1, 2, 3].map((i) => ({ event: 'e', properties: { token: project.token, distinct_id: `u${i}`, time: Date.now(), $insert_id: `q${i}-${Date.now()}` } }));
    const r = await fetch(`${t.url}/track`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(events) });
    assert.equal(r.status, 429, await r.text());
    assert.equal((await read()) - before, 3);
    const text = await scrape();
    assert.equal(count(text, 'ingest_quota_rejected_events_total'), count(text, 'tally_ingest_quota_rejected_events_total'), 'the old name carries the same count');
    assert.match(text, /^# HELP ingest_quota_rejected_events_total Deprecated, removed in the next release: use tally_ingest_quota_rejected_events_total\.$/m);
  });

  it('the api role alone serves METRICS_PORT too', async function () {
    this.timeout(30_000);
    const port = await freePort();
    const api = await startService({ ...t.svc.deps, config: { ...t.svc.deps.config, metricsPort: port } }, { port: 0, host: '127.0.0.1', roles: ['api'] });
    try {
      assert.equal((await fetch(`${api.url}/metrics`)).status, 404);
      assert.equal((await fetch(`http://127.0.0.1:${port}/metrics`)).status, 200);
      assert.equal((await fetch(`http://127.0.0.1:${port}/health/live`)).status, 200);
    } finally {
      api.server.closeAllConnections();
      await new Promise<void>((ok) => api.server.close(() => ok()));
      for (const w of api.workers) await w.stop();
    }
  });

  it('every metric the alert rules and the dashboard read is exposed by the code (service, worker, operator)', async () => {
    const service = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const operator = new OperatorMetrics(false);
    const exposed = new Set([...exposedNames(service), ...exposedNames(await operator.registry.metrics())]);
    const used = new Map<string, string>();
    for (const r of await ruleExprs()) for (const n of metricNames(r.expr)) used.set(n, `alert ${r.alert}`);
    for (const e of await dashboardExprs()) for (const n of metricNames(e)) used.set(n, 'dashboard');
    assert.ok(used.size >= 20, `only ${used.size} names found`);
    const missing = [...used].filter(([n]) => !exposed.has(n) && !notFromTally(n)).map(([n, where]) => `${n} (${where})`);
    assert.deepEqual(missing, []);
  });
});

describe('/metrics on the API port without METRICS_PORT (npm start)', function () {
  this.timeout(60_000);
  forEachBackend('default', (backend) => {
    it('stays on the API port', async () => {
      const t = await startTestService(backend);
      try {
        const res = await fetch(`${t.url}/metrics`);
        assert.equal(res.status, 200);
        assert.match(await res.text(), /^# TYPE tally_http_requests_total counter$/m);
      } finally {
        await t.close();
      }
    });
  });
});

describe('operator: resources by Ready status', () => {
  it('tally_operator_resources counts the leader\'s cached resources per kind and Ready status; a standby reports none', async () => {
    const m = new OperatorMetrics(false);
    const cache = (...ready: Array<string | undefined>) => ({ list: () => ready.map((s) => ({ status: s ? { conditions: [{ type: 'Ready', status: s }] } : {} })) });
    assert.doesNotMatch(await m.registry.metrics(), /^tally_operator_resources\{/m);
    m.resourcesSource = () => ({ Project: cache('True', 'True', 'False'), FeatureFlag: cache(undefined, 'False') });
    const text = await m.registry.metrics();
    assert.match(text, /^tally_operator_resources\{kind="Project",ready="True"\} 2$/m);
    assert.match(text, /^tally_operator_resources\{kind="Project",ready="False"\} 1$/m);
    assert.match(text, /^tally_operator_resources\{kind="FeatureFlag",ready="Unknown"\} 1$/m);
    m.resourcesSource = () => undefined;
    assert.doesNotMatch(await m.registry.metrics(), /^tally_operator_resources\{/m, 'lost the lease: stale counts dropped');
  });
});

describe('HTTP areas', () => {
  it('group paths into a fixed set', () => {
    assert.equal(areaOf('/track?verbose=1'), 'ingest');
    assert.equal(areaOf('/v/0.14/engage'), 'ingest');
    assert.equal(areaOf('/flags/evaluate'), 'flags');
    assert.equal(areaOf('/api/query'), 'query');
    assert.equal(areaOf('/api/reports/3/run'), 'query');
    assert.equal(areaOf('/api/flags/4'), 'flags_admin');
    assert.equal(areaOf('/api/experiments/4/results'), 'experiments');
    assert.equal(areaOf('/admin/orgs'), 'admin');
    assert.equal(areaOf('/health/ready'), 'health');
    assert.equal(areaOf('/../etc/passwd'), 'other');
  });
});
