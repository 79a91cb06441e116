import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { FakeKube, kubectlFor, type KubeObject } from '../support/kube/index.js';
import { helmTemplate, kustomize, CHART_DIR, type K8sObject } from '../support/chart.js';
import { crdTemplate, driftedChartCrds } from '../../scripts/sync-chart-crds.js';
import { kubeTools } from '../support/kube/tools.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/**
 * CRDs shipped as chart templates (so `helm upgrade` upgrades them), kept on uninstall, behind
 * `crds.enabled`; the chart's kubeVersion; and the FeatureFlag CRD's CEL rules refusing a bad flag
 * at `kubectl apply --dry-run=server` (the fake API evaluates the CEL rules of the CRDs it serves).
 */

const run = promisify(execFile);
const crdsOf = (objects: K8sObject[]) => objects.filter((o) => o.kind === 'CustomResourceDefinition');

describe('chart CRDs as templates', function () {
  this.timeout(120_000);

  it('render by default, one per crds/ file, each annotated helm.sh/resource-policy: keep, and match crds/ but for that', async () => {
    assert.deepEqual(await driftedChartCrds(), []);
    const r = await helmTemplate('tally');
    assert.ok(r.ok, r.stderr);
    const crds = crdsOf(r.objects);
    const { readRepoCrds } = await import('../support/kube/index.js');
    const source = await readRepoCrds();
    assert.equal(crds.length, source.length);
    assert.ok(crds.length >= 3);
    for (const crd of crds) {
      assert.equal(crd.metadata.annotations?.['helm.sh/resource-policy'], 'keep', crd.metadata.name);
      const src = source.find((s) => s.metadata.name === crd.metadata.name)!;
      assert.ok(src, crd.metadata.name);
      assert.deepEqual(crd.spec, src.spec, `${crd.metadata.name}: spec differs from crds/`);
    }
  });

  it('every CRD, in crds/, the chart and the kustomize base, tells Argo CD never to prune or delete it', async () => {
    const argo = 'argocd.argoproj.io/sync-options';
    const options = (crd: K8sObject) => (crd.metadata.annotations?.[argo] ?? '').split(',').map((o) => o.trim()).sort();
    const { readRepoCrds } = await import('../support/kube/index.js');
    const source = (await readRepoCrds()) as unknown as K8sObject[];
    const chart = await helmTemplate('tally');
    const base = await kustomize('k8s/base');
    assert.ok(chart.ok && base.ok, chart.stderr + base.stderr);
    for (const [where, crds] of [['crds/', source], ['chart', crdsOf(chart.objects)], ['k8s/base', crdsOf(base.objects)]] as const) {
      assert.equal(crds.length, source.length, where);
      for (const crd of crds) assert.deepEqual(options(crd), ['Delete=false', 'Prune=false'], `${where} ${crd.metadata.name}`);
    }
    // The chart's copies keep both: Argo CD's and Helm's.
    for (const crd of crdsOf(chart.objects)) assert.equal(crd.metadata.annotations?.['helm.sh/resource-policy'], 'keep');
  });

  it('crds.enabled=false renders none; a non-boolean is refused naming the value', async () => {
    const off = await helmTemplate('tally', { set: ['crds.enabled=false'] });
    assert.ok(off.ok, off.stderr);
    assert.deepEqual(crdsOf(off.objects), []);
    const bad = await helmTemplate('tally', { setString: ['crds.enabled=yes'] });
    assert.equal(bad.ok, false);
    assert.match(bad.stderr, /crds\.enabled/);
  });

  it('the template generator refuses a CRD text Helm would read as a template', () => {
    assert.throws(() => crdTemplate('metadata: { name: x }\ndescription: "{{ .Values }}"\n'), /Helm would read/);
    assert.match(crdTemplate('apiVersion: v1\nkind: CustomResourceDefinition\nmetadata: { name: x }\n'), /helm\.sh\/resource-policy: keep/);
  });

  it('Chart.yaml has kubeVersion >= 1.25 (CEL validation rules on by default): 1.24 is refused, 1.25 and 1.32 render', async () => {
    const chart = parse(await readFile(join(CHART_DIR, 'Chart.yaml'), 'utf8'));
    assert.equal(chart.kubeVersion, '>=1.25.0-0');
    const { helm } = await kubeTools();
    const at = (v: string) => run(helm, ['template', 'tally', CHART_DIR, '--kube-version', v]).then(() => 'ok', (e) => String(e.stderr));
    assert.match(await at('1.24.9'), /kubeVersion/);
    assert.equal(await at('1.25.0'), 'ok');
    assert.equal(await at('1.32.1-eks-1234'), 'ok');
  });
});

describe('FeatureFlag CRD: CEL rules refuse bad flags at kubectl apply --dry-run=server', function () {
  this.timeout(120_000);
  let fake: FakeKube;
  let kubectl: Awaited<ReturnType<typeof kubectlFor>>;
  const flag = (spec: Record<string, unknown>, name = 'checkout') =>
    stringify({ apiVersion: 'analytics.tally.dev/v1', kind: 'FeatureFlag', metadata: { name, namespace: 'default' }, spec: { projectRef: { name: 'shop' }, name: 'Checkout', ...spec } });

  before(async () => {
    const r = await helmTemplate('tally');
    assert.ok(r.ok, r.stderr);
    // The CRDs exactly as the chart installs them.
    fake = await FakeKube.start({ crds: crdsOf(r.objects) as unknown as KubeObject[] });
    kubectl = await kubectlFor(fake);
  });
  after(async () => fake?.stop());

  const dryRun = (yaml: string) => kubectl.run(['apply', '--dry-run=server', '-f', '-'], yaml);

  it('admits a consistent flag', async () => {
    const ok = await dryRun(flag({ key: 'checkout', variants: [{ key: 'a', rolloutPct: 50 }, { key: 'b', rolloutPct: 50 }], rules: [{ rolloutPct: 100, variant: 'b', distinctIds: ['qa'] }] }));
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /server dry run/);
  });

  const refusals: Array<[string, Record<string, unknown>, RegExp]> = [
    ['variants summing to 90', { key: 'f1', variants: [{ key: 'a', rolloutPct: 50 }, { key: 'b', rolloutPct: 40 }] }, /rolloutPct must sum to exactly 100/],
    ['a rule naming an unknown variant', { key: 'f2', variants: [{ key: 'a', rolloutPct: 100 }], rules: [{ rolloutPct: 100, variant: 'c' }] }, /variant must be one of variants/],
    ['a rule with a variant and no variants', { key: 'f3', rules: [{ rolloutPct: 10, variant: 'a' }] }, /variant must be one of variants/],
    ['duplicate variant keys', { key: 'f4', variants: [{ key: 'a', rolloutPct: 50 }, { key: 'a', rolloutPct: 50 }] }, /variant keys must be unique/],
    ['distinctIds below 100 %', { key: 'f5', rules: [{ rolloutPct: 50, distinctIds: ['u1'] }] }, /must be 100 when distinctIds/],
  ];
  for (const [what, spec, message] of refusals) {
    it(`refuses ${what}`, async () => {
      const r = await dryRun(flag(spec, String(spec.key)));
      assert.notEqual(r.code, 0, `admitted: ${r.stdout}`);
      assert.match(r.stderr, message);
      assert.match(r.stderr, /spec/);
    });
  }

  it('refuses changing key of an existing FeatureFlag; other changes pass', async () => {
    const created = await kubectl.run(['apply', '-f', '-'], flag({ key: 'stable' }, 'stable'));
    assert.equal(created.code, 0, created.stderr);
    const renamed = await dryRun(flag({ key: 'renamed' }, 'stable'));
    assert.notEqual(renamed.code, 0, renamed.stdout);
    assert.match(renamed.stderr, /key is immutable/);
    const edited = await dryRun(flag({ key: 'stable', active: false }, 'stable'));
    assert.equal(edited.code, 0, edited.stderr);
  });
});
