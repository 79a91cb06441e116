import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { driftedK8s } from '../../scripts/render-k8s-base.js';
import { envOf, find, kustomize, repoRoot, validateObject, type K8sObject, type RenderResult } from '../support/chart.js';

/** k8s/: the base rendered from the chart (no drift), and the dev and prod overlays building with kubectl kustomize. */

const built: Record<string, RenderResult> = {};
const objectsOf = (dir: string): K8sObject[] => {
  const r = built[dir];
  assert.ok(r?.ok, `kubectl kustomize ${dir} failed: ${r?.stderr}`);
  return r.objects;
};
const container = (o: K8sObject[], name: string) => find(o, 'Deployment', name).spec.template.spec.containers[0];

describe('kustomize (k8s/)', function () {
  this.timeout(120_000);

  before(async () => {
    await Promise.all(['k8s/base', 'k8s/overlays/dev', 'k8s/overlays/prod'].map(async (d) => (built[d] = await kustomize(d))));
  });

  it('k8s/base/tally.yaml and k8s/overlays/dev/stores.yaml are what the chart renders (run npm run k8s:render)', async () => {
    assert.deepEqual(await driftedK8s(), []);
  });

  it('base, dev and prod build, and every object validates against its Kubernetes schema', async () => {
    const crdCount = (parse(readFileSync(join(repoRoot, 'crds/kustomization.yaml'), 'utf8')).resources as string[]).length;
    for (const dir of Object.keys(built)) {
      const objects = objectsOf(dir);
      // Each CRD of crds/ exactly once (the base lists ../../crds; the chart's CRD templates are off there).
      const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition').map((o) => o.metadata.name).sort();
      assert.deepEqual(crds, [...new Set(crds)], `${dir}: a CRD twice`);
      assert.equal(crds.length, crdCount, `${dir}: CRDs`);
      for (const o of objects) await validateObject(o);
    }
  });

  it('base: the service without stores, credentials from the Secret tally-credentials', () => {
    const o = objectsOf('k8s/base');
    assert.deepEqual(o.filter((x) => x.kind === 'StatefulSet' || x.kind === 'Secret'), []);
    const env = envOf(container(o, 'tally-api'));
    assert.equal(env.get('SUPERADMIN_KEY')?.valueFrom?.secretKeyRef?.name, 'tally-credentials');
    assert.equal(env.get('PGPASSWORD')?.valueFrom?.secretKeyRef?.key, 'POSTGRES_PASSWORD');
    assert.equal(env.get('DATABASE_URL')?.value, 'postgres://tally@tally-postgresql:5432/tally');
  });

  it('dev: bundled stores, the credentials Secret with every key the pods read, one replica each, no PDB', () => {
    const o = objectsOf('k8s/overlays/dev');
    assert.deepEqual(o.filter((x) => x.kind === 'StatefulSet').map((x) => x.metadata.name).sort(), ['tally-clickhouse', 'tally-nats', 'tally-postgresql']);
    const secret = find(o, 'Secret', 'tally-credentials');
    for (const x of o.filter((x) => ['Deployment', 'StatefulSet'].includes(x.kind))) {
      assert.equal(x.spec.replicas, 1, x.metadata.name);
      for (const c of x.spec.template.spec.containers) {
        for (const e of c.env ?? []) {
          const ref = e.valueFrom?.secretKeyRef;
          if (ref) assert.ok(ref.name === 'tally-credentials' && secret.data[ref.key], `${x.metadata.name}: ${e.name} -> ${ref.name}/${ref.key}`);
        }
      }
    }
    // The stores' Services are the names the base's URLs point at.
    const env = envOf(container(o, 'tally-api'));
    for (const [k, svc] of [['DATABASE_URL', 'tally-postgresql'], ['CLICKHOUSE_URL', 'tally-clickhouse'], ['NATS_URL', 'tally-nats']]) {
      assert.ok(env.get(k)?.value?.includes(`//${svc}:`) || env.get(k)?.value?.includes(`@${svc}:`), `${k} -> ${svc}`);
      find(o, 'Service', svc);
    }
    assert.equal(o.filter((x) => x.kind === 'PodDisruptionBudget').length, 0);
    for (const x of o.filter((x) => !['CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding'].includes(x.kind))) assert.equal(x.metadata.namespace, 'tally', `${x.kind}/${x.metadata.name}`);
  });

  it('prod: external store URLs on API and worker (other env kept), an HPA owning the API replicas, namespace tally', () => {
    const o = objectsOf('k8s/overlays/prod');
    assert.deepEqual(o.filter((x) => x.kind === 'StatefulSet'), []);
    for (const name of ['tally-api', 'tally-worker']) {
      const env = envOf(container(o, name));
      assert.match(env.get('DATABASE_URL')!.value!, /postgres\.db\.svc/);
      assert.match(env.get('CLICKHOUSE_URL')!.value!, /^https:/);
      assert.ok(env.has('PGPASSWORD') && env.has('CLICKHOUSE_PASSWORD'), `${name}: the patch replaced the env instead of merging`);
    }
    assert.equal(find(o, 'Deployment', 'tally-api').spec.replicas, undefined);
    assert.equal(find(o, 'HorizontalPodAutoscaler', 'tally-api').spec.scaleTargetRef.name, 'tally-api');
    for (const x of o.filter((x) => !['CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding'].includes(x.kind))) assert.equal(x.metadata.namespace, 'tally', `${x.kind}/${x.metadata.name}`);
    assert.equal(find(o, 'ClusterRoleBinding', 'tally-tally-operator').subjects[0].namespace, 'tally');
  });

  it('skaffold.yaml (v4beta) builds the image the chart deploys, with a dev profile for a local cluster', () => {
    const cfg = parse(readFileSync(join(repoRoot, 'skaffold.yaml'), 'utf8'));
    assert.match(cfg.apiVersion, /^skaffold\/v4beta\d+$/);
    const image: string = cfg.build.artifacts[0].image;
    assert.equal(cfg.build.artifacts[0].docker.dockerfile, 'Dockerfile');
    const release = cfg.deploy.helm.releases[0];
    assert.ok(existsSync(join(repoRoot, release.chartPath, 'Chart.yaml')), release.chartPath);
    const key = image.replace(/[/.-]/g, '_');
    assert.equal(release.setValueTemplates['image.repository'], `{{.IMAGE_REPO_${key}}}`);
    assert.match(release.setValueTemplates['image.tag'], new RegExp(`IMAGE_TAG_${key}`));
    const dev = cfg.profiles.find((p: { name: string }) => p.name === 'dev');
    assert.equal(dev.build.local.push, false);
    const values = dev.patches.find((p: { path: string }) => p.path === '/deploy/helm/releases/0/setValues').value;
    assert.equal(values['api.replicas'], 1);
    assert.equal(values['worker.replicas'], 1);
  });
});
