import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { envOf, find, helmTemplate, validateObject, type K8sObject, type RenderResult } from '../support/chart.js';

/**
 * Values a platform team bends without post-rendering (Bitnami-style names, for api, worker and
 * operator): pod metadata, ServiceAccount annotations (workload identity), scheduling with a
 * default spread, extra env/envFrom/volumes, image digests, a global registry, and the key names of
 * an existing credentials Secret. Each rendered and checked; bad values refused naming the value.
 */

const COMPONENTS = ['api', 'worker', 'operator'] as const;
const DIGEST = `sha256:${'ab'.repeat(32)}`;
let dir: string;

async function render(values: Record<string, unknown>, release = 'tally'): Promise<RenderResult> {
  const file = join(dir, `values-${Math.random().toString(36).slice(2)}.yaml`);
  await writeFile(file, stringify(values));
  return helmTemplate(release, { files: [file] });
}
const podOf = (objects: K8sObject[], c: string) => find(objects, 'Deployment', `tally-${c}`).spec.template;

const perComponent = (c: string) => ({
  podAnnotations: { 'example.com/owner': `team-${c}` },
  podLabels: { 'example.com/cost-center': 'cc-42' },
  priorityClassName: 'tally-critical',
  nodeSelector: { 'kubernetes.io/arch': 'arm64' },
  tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'analytics', effect: 'NoSchedule' }],
  affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['analytics'] }] }] } } },
  topologySpreadConstraints: [{ maxSkew: 2, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { app: 'x' } } }],
  extraEnv: [
    { name: 'LOG_LEVEL', value: 'debug' },
    { name: 'FROM_SECRET', valueFrom: { secretKeyRef: { name: 'team-secret', key: 'token' } } },
  ],
  extraEnvFrom: [{ configMapRef: { name: 'team-env' } }, { secretRef: { name: 'team-secret-env' }, prefix: 'T_' }],
  extraVolumes: [{ name: 'ca', configMap: { name: 'corporate-ca' } }],
  extraVolumeMounts: [{ name: 'ca', mountPath: '/etc/ssl/corporate', readOnly: true }],
  serviceAccount: c === 'operator' ? { annotations: { 'iam.gke.io/gcp-service-account': `${c}@p.iam.gserviceaccount.com` } } : { create: true, annotations: { 'eks.amazonaws.com/role-arn': `arn:aws:iam::1:role/${c}` } },
});

describe('chart values a platform team can bend', function () {
  this.timeout(180_000);
  let all: K8sObject[];
  let defaults: K8sObject[];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tally-values-'));
    const [a, d] = await Promise.all([
      render({
        global: { imageRegistry: 'registry.internal.example/mirror' },
        image: { digest: DIGEST },
        postgresql: { image: { digest: DIGEST } },
        api: perComponent('api'), worker: perComponent('worker'), operator: perComponent('operator'),
        credentials: { existingSecret: 'platform-creds', secretKeys: { superadminKey: 'admin-key', operatorKey: 'op-key', postgresPassword: 'pg-pass', clickhousePassword: 'ch-pass' } },
      }),
      render({}),
    ]);
    assert.ok(a.ok, a.stderr);
    assert.ok(d.ok, d.stderr);
    all = a.objects;
    defaults = d.objects;
  });
  after(async () => rm(dir, { recursive: true, force: true }));

  it('every rendered object still validates against its Kubernetes schema', async () => {
    for (const o of all) if (o.kind !== 'CustomResourceDefinition') await validateObject(o);
  });

  for (const c of COMPONENTS) {
    it(`${c}: pod annotations and labels, scheduling, priority class, extra env (valueFrom), envFrom, volumes`, () => {
      const pod = podOf(all, c);
      assert.equal(pod.metadata.annotations['example.com/owner'], `team-${c}`);
      assert.equal(pod.metadata.labels['example.com/cost-center'], 'cc-42');
      assert.equal(pod.metadata.labels['app.kubernetes.io/component'], c, 'chart labels kept');
      const spec = pod.spec;
      assert.equal(spec.priorityClassName, 'tally-critical');
      assert.deepEqual(spec.nodeSelector, { 'kubernetes.io/arch': 'arm64' });
      assert.equal(spec.tolerations[0].value, 'analytics');
      assert.deepEqual(spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values, ['analytics']);
      assert.deepEqual(spec.topologySpreadConstraints.map((t: any) => [t.maxSkew, t.whenUnsatisfiable]), [[2, 'DoNotSchedule']]);
      const container = spec.containers[0];
      const env = envOf(container);
      assert.equal(env.get('LOG_LEVEL')?.value, 'debug');
      assert.deepEqual(env.get('FROM_SECRET')?.valueFrom, { secretKeyRef: { name: 'team-secret', key: 'token' } });
      assert.deepEqual(container.envFrom, [{ configMapRef: { name: 'team-env' } }, { secretRef: { name: 'team-secret-env' }, prefix: 'T_' }]);
      assert.ok(spec.volumes.some((v: any) => v.name === 'ca' && v.configMap.name === 'corporate-ca'));
      assert.ok(container.volumeMounts.some((m: any) => m.name === 'ca' && m.mountPath === '/etc/ssl/corporate'));
      assert.ok(container.volumeMounts.some((m: any) => m.mountPath === '/tmp'), 'chart mounts kept');
      assert.equal(container.image, `registry.internal.example/mirror/tally/analytics@${DIGEST}`);
    });
  }

  it('ServiceAccount annotations for workload identity on api, worker and operator; pods use them; api/worker tokens stay unmounted', () => {
    for (const c of COMPONENTS) {
      const sa = find(all, 'ServiceAccount', `tally-${c}`);
      const pod = podOf(all, c).spec;
      assert.equal(pod.serviceAccountName, `tally-${c}`);
      if (c === 'operator') assert.equal(sa.metadata.annotations?.['iam.gke.io/gcp-service-account'], 'operator@p.iam.gserviceaccount.com');
      else {
        assert.equal(sa.metadata.annotations?.['eks.amazonaws.com/role-arn'], `arn:aws:iam::1:role/${c}`);
        assert.equal(sa.automountServiceAccountToken, false);
        assert.equal(pod.automountServiceAccountToken, false);
      }
    }
  });

  it('serviceAccount.create=false with a name: no ServiceAccount rendered, the pods use the named one', async () => {
    const r = await render({ api: { serviceAccount: { create: false, name: 'shared-sa' } } });
    assert.ok(r.ok, r.stderr);
    assert.equal(podOf(r.objects, 'api').spec.serviceAccountName, 'shared-sa');
    assert.ok(!r.objects.some((o) => o.kind === 'ServiceAccount' && o.metadata.name === 'tally-api'));
  });

  it('credentials.secretKeys maps every credential to the existing Secret\'s keys (api, worker, operator, bundled stores)', () => {
    const refs = all
      .filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet')
      .flatMap((o) => o.spec.template.spec.containers.flatMap((c: any) => (c.env ?? []).filter((e: any) => e.valueFrom?.secretKeyRef?.name === 'platform-creds').map((e: any) => `${o.metadata.name}:${e.name}=${e.valueFrom.secretKeyRef.key}`)));
    for (const want of ['tally-api:SUPERADMIN_KEY=admin-key', 'tally-api:PGPASSWORD=pg-pass', 'tally-api:CLICKHOUSE_PASSWORD=ch-pass', 'tally-operator:OPERATOR_KEY=op-key', 'tally-api:OPERATOR_KEY=op-key', 'tally-worker:PGPASSWORD=pg-pass']) {
      assert.ok(refs.includes(want), `${want} not in ${refs.join(', ')}`);
    }
    const stores = refs.filter((r) => r.startsWith('tally-postgresql') || r.startsWith('tally-clickhouse'));
    assert.ok(stores.length >= 2 && stores.every((r) => /=(pg-pass|ch-pass)$/.test(r)), stores.join(', '));
    assert.ok(!refs.some((r) => /=(SUPERADMIN_KEY|POSTGRES_PASSWORD|CLICKHOUSE_PASSWORD)$/.test(r)), refs.join(', '));
  });

  it('images: the global registry prefixes the bundled stores too; a store digest pins it; defaults are exact version tags', () => {
    const image = (o: K8sObject[], name: string) => find(o, 'StatefulSet', name).spec.template.spec.containers[0].image as string;
    assert.equal(image(all, 'tally-postgresql'), `registry.internal.example/mirror/postgres@${DIGEST}`);
    assert.match(image(all, 'tally-clickhouse'), /^registry\.internal\.example\/mirror\/clickhouse\/clickhouse-server:/);
    for (const [name, tag] of [['tally-postgresql', /^postgres:\d+\.\d+-/], ['tally-clickhouse', /^clickhouse\/clickhouse-server:\d+\.\d+\.\d+\.\d+$/], ['tally-nats', /^nats:\d+\.\d+\.\d+-alpine$/]] as const) {
      assert.match(image(defaults, name), tag, `${name}: an exact version, not a floating tag`);
    }
    assert.equal(podOf(defaults, 'api').spec.containers[0].image, 'tally/analytics:0.1.0');
  });

  it('topology spread: none for one replica; zone and host spread (ScheduleAnyway, this component only) for several or with the HPA', async () => {
    assert.equal(podOf(defaults, 'worker').spec.topologySpreadConstraints, undefined, 'worker: 1 replica');
    assert.equal(podOf(defaults, 'operator').spec.topologySpreadConstraints, undefined, 'operator: 1 replica');
    const api = podOf(defaults, 'api').spec.topologySpreadConstraints;
    assert.deepEqual(api.map((t: any) => [t.topologyKey, t.whenUnsatisfiable, t.maxSkew]), [['topology.kubernetes.io/zone', 'ScheduleAnyway', 1], ['kubernetes.io/hostname', 'ScheduleAnyway', 1]]);
    assert.equal(api[0].labelSelector.matchLabels['app.kubernetes.io/component'], 'api');
    assert.equal(api[0].labelSelector.matchLabels['app.kubernetes.io/instance'], 'tally');
    const r = await render({ api: { replicas: 1, autoscaling: { enabled: true, minReplicas: 2, maxReplicas: 4, targetCPUUtilizationPercentage: 70 } }, worker: { replicas: 3 } });
    assert.ok(r.ok, r.stderr);
    assert.equal(podOf(r.objects, 'api').spec.topologySpreadConstraints.length, 2);
    assert.equal(podOf(r.objects, 'worker').spec.topologySpreadConstraints[0].labelSelector.matchLabels['app.kubernetes.io/component'], 'worker');
  });

  it('the top-level extraEnv takes a map (as before) or a list of EnvVar with valueFrom', async () => {
    const r = await render({ extraEnv: [{ name: 'NATS_TOKEN', valueFrom: { secretKeyRef: { name: 'nats', key: 'token' } } }] });
    assert.ok(r.ok, r.stderr);
    for (const c of ['api', 'worker']) assert.equal(envOf(podOf(r.objects, c).spec.containers[0]).get('NATS_TOKEN')?.valueFrom.secretKeyRef.name, 'nats');
    const m = await render({ extraEnv: { LOG_LEVEL: 'warn' } });
    assert.ok(m.ok, m.stderr);
    assert.equal(envOf(podOf(m.objects, 'api').spec.containers[0]).get('LOG_LEVEL')?.value, 'warn');
  });

  describe('bad values are refused, naming the value', () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['image.digest not a sha256', { image: { digest: 'latest' } }, /image\.digest/],
      ['a store digest too short', { nats: { image: { digest: 'sha256:abc' } } }, /nats\.image\.digest/],
      ['global.imageRegistry with a space', { global: { imageRegistry: 'my registry' } }, /global\.imageRegistry/],
      ['priorityClassName upper case', { worker: { priorityClassName: 'High' } }, /worker\.priorityClassName/],
      ['podAnnotations value a number', { api: { podAnnotations: { a: 1 } } }, /api\.podAnnotations/],
      ['podLabels value too long', { operator: { podLabels: { a: 'x'.repeat(64) } } }, /operator\.podLabels/],
      ['extraEnv item without name', { api: { extraEnv: [{ value: 'x' }] } }, /api\.extraEnv/],
      ['extraEnv valueFrom of an unknown kind', { worker: { extraEnv: [{ name: 'A', valueFrom: { vaultRef: { key: 'k' } } }] } }, /worker\.extraEnv/],
      ['extraEnvFrom with an unknown member', { api: { extraEnvFrom: [{ secretRefs: { name: 'x' } }] } }, /api\.extraEnvFrom/],
      ['extraVolumeMounts relative path', { api: { extraVolumeMounts: [{ name: 'ca', mountPath: 'etc/ca' }] } }, /api\.extraVolumeMounts/],
      ['extraVolumes with only a name', { worker: { extraVolumes: [{ name: 'ca' }] } }, /worker\.extraVolumes/],
      ['topologySpreadConstraints bad whenUnsatisfiable', { api: { topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'k', whenUnsatisfiable: 'Maybe' }] } }, /api\.topologySpreadConstraints/],
      ['serviceAccount unknown key', { api: { serviceAccount: { annotation: {} } } }, /api\.serviceAccount/],
      ['operator serviceAccount.create (always created)', { operator: { serviceAccount: { create: false } } }, /operator\.serviceAccount/],
      ['secretKeys unknown credential', { credentials: { existingSecret: 's', secretKeys: { adminKey: 'x' } } }, /credentials\.secretKeys/],
      ['secretKeys key with a slash', { credentials: { existingSecret: 's', secretKeys: { superadminKey: 'a/b' } } }, /credentials\.secretKeys\.superadminKey/],
    ];
    for (const [what, values, message] of cases) {
      it(what, async () => {
        const r = await render(values);
        assert.equal(r.ok, false, `${what}: rendered`);
        assert.match(r.stderr, message);
      });
    }
  });
});
