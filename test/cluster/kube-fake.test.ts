import assert from 'node:assert/strict';
import { lstat, mkdtemp, readFile, readdir, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  PatchStrategy,
  Watch,
  makeInformer,
  setHeaderOptions,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { FakeKube, grantsFromYaml, kubectlFor, projectSecret } from '../support/kube/index.js';

/**
 * The fake Kubernetes API (test/support/kube) driven by the real kubectl 1.32 and by
 * @kubernetes/client-node: what passes here is what the operator's tests may rely on.
 */

const G = 'analytics.tally.dev';
const V = 'v1';
const NS = 'default';
const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const project = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: `${G}/${V}`,
  kind: 'Project',
  metadata: { name },
  spec: { displayName: `Project ${name}`, organizationId: 1, ...spec },
});
const statusOf = (err: any): number => err?.code ?? err?.statusCode ?? err?.response?.statusCode;

async function until<T>(what: string, fn: () => T | undefined | Promise<T | undefined>, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

describe('fake Kubernetes API', function () {
  this.timeout(30_000);
  let fake: FakeKube;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;

  beforeEach(async () => {
    fake = await FakeKube.start({ bookmarkIntervalMs: 100 });
    custom = fake.kubeConfig().makeApiClient(CustomObjectsApi);
    core = fake.kubeConfig().makeApiClient(CoreV1Api);
  });
  afterEach(async () => fake.stop());

  describe('driven by kubectl 1.32', () => {
    it('applies the CRDs with kustomize, then applies, lists, patches and deletes custom resources', async () => {
      const kubectl = await kubectlFor(fake);
      const crds = await kubectl.run(['apply', '-k', 'crds/']);
      assert.equal(crds.code, 0, crds.stderr);
      assert.match(crds.stdout, /customresourcedefinition.apiextensions.k8s.io\/projects.analytics.tally.dev (configured|unchanged)/);
      const manifest = 'apiVersion: analytics.tally.dev/v1\nkind: Project\nmetadata: {name: shop}\nspec: {displayName: Shop, organizationId: 7}\n';
      const applied = await kubectl.run(['apply', '-f', '-'], manifest);
      assert.equal(applied.code, 0, applied.stderr);
      assert.match(applied.stdout, /project.analytics.tally.dev\/shop created/);
      assert.match((await kubectl.run(['apply', '-f', '-'], manifest)).stdout, /shop unchanged/);

      const table = await kubectl.run(['get', 'tproj']);
      assert.match(table.stdout, /^NAME\s+READY\s+DISPLAY NAME\s+PROJECT ID\s+AGE$/m);
      assert.match(table.stdout, /^shop\s+<none>\s+Shop\s+\d+s$/m);
      const got = JSON.parse((await kubectl.run(['get', 'project', 'shop', '-o', 'json'])).stdout);
      assert.equal(got.spec.deletionPolicy, 'Retain', 'CRD default applied at admission');
      assert.equal(got.metadata.generation, 1);

      const status = await kubectl.run(['patch', 'project', 'shop', '--subresource=status', '--type=merge', '-p', '{"status":{"projectId":42}}']);
      assert.equal(status.code, 0, status.stderr);
      assert.match((await kubectl.run(['get', 'projects'])).stdout, /^shop\s+<none>\s+Shop\s+42\s+/m);
      const afterStatus = JSON.parse((await kubectl.run(['get', 'project', 'shop', '-o', 'json'])).stdout);
      assert.equal(afterStatus.metadata.generation, 1, 'status writes do not bump generation');

      const spec = await kubectl.run(['apply', '-f', '-'], manifest.replace('Shop,', 'Shop two,'));
      assert.match(spec.stdout, /shop configured/);
      const afterSpec = JSON.parse((await kubectl.run(['get', 'project', 'shop', '-o', 'json'])).stdout);
      assert.equal(afterSpec.metadata.generation, 2);
      assert.equal(afterSpec.status.projectId, 42, 'the main endpoint keeps status');

      const deleted = await kubectl.run(['delete', 'project', 'shop']);
      assert.match(deleted.stdout, /project.analytics.tally.dev "shop" deleted/);
      const missing = await kubectl.run(['get', 'project', 'shop']);
      assert.notEqual(missing.code, 0);
      assert.match(missing.stderr, /Error from server \(NotFound\): projects.analytics.tally.dev "shop" not found/);
    });

    it('refuses schema violations at admission with the API server error kubectl prints', async () => {
      const kubectl = await kubectlFor(fake);
      const flag = (spec: string) => `apiVersion: analytics.tally.dev/v1\nkind: FeatureFlag\nmetadata: {name: f}\nspec: ${spec}\n`;
      const cases: [string, RegExp][] = [
        [
          'apiVersion: analytics.tally.dev/v1\nkind: Project\nmetadata: {name: p}\nspec: {displayName: P, organizationId: "seven"}\n',
          /The Project "p" is invalid: spec.organizationId: Invalid value: "string": spec.organizationId in body must be of type integer: "string"/,
        ],
        [flag('{key: "Bad Key", name: F, projectRef: {name: p}}'), /spec.key: Invalid value: "Bad Key": spec.key in body should match '\^\[a-z0-9\]/],
        [flag('{key: f, name: F, projectRef: {name: p}, rules: [{rolloutPct: 101}]}'), /spec.rules\[0\].rolloutPct: Invalid value: 101: spec.rules\[0\].rolloutPct in body should be less than or equal to 100/],
        [flag('{key: f, name: F, projectRef: {name: p}, deletionPolicy: Keep}'), /spec.deletionPolicy: Unsupported value: "Keep": supported values: "Retain", "Delete"/],
        [flag('{key: f, name: F}'), /spec.projectRef: Required value/],
        [
          flag(`{key: f, name: F, projectRef: {name: p}, variants: [${Array.from({ length: 11 }, (_, i) => `{key: v${i}, rolloutPct: 0}`).join(', ')}]}`),
          /spec.variants: Too many: 11: must have at most 10 items/,
        ],
        [flag('{key: f, name: F, projectRef: {name: p}, color: blue}'), /strict decoding error: unknown field "spec.color"/],
      ];
      for (const [manifest, error] of cases) {
        const result = await kubectl.run(['apply', '-f', '-'], manifest);
        assert.notEqual(result.code, 0, manifest);
        assert.match(result.stderr, error);
      }
      assert.equal((await custom.listNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'featureflags' })).items.length, 0);
      // organizationId is immutable (x-kubernetes-validations: self == oldSelf).
      assert.equal((await kubectl.run(['apply', '-f', '-'], JSON.stringify(project('p')))).code, 0);
      const changed = await kubectl.run(['patch', 'project', 'p', '--type=merge', '-p', '{"spec":{"organizationId":2}}']);
      assert.match(changed.stderr, /The Project "p" is invalid: spec.organizationId: Invalid value: "integer": organizationId is immutable/);
    });

    it('streams changes to kubectl get -w', async () => {
      const kubectl = await kubectlFor(fake);
      await custom.createNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', body: project('before') });
      const watch = kubectl.start(['get', 'projects', '-w', '--output-watch-events']);
      try {
        await watch.waitFor(/ADDED\s+before\s/);
        await custom.createNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', body: project('during') });
        await watch.waitFor(/ADDED\s+during\s/);
        await custom.patchNamespacedCustomObjectStatus(
          { group: G, version: V, namespace: NS, plural: 'projects', name: 'during', body: { status: { projectId: 9 } } },
          merge,
        );
        await watch.waitFor(/MODIFIED\s+during\s+<none>\s+Project during\s+9\s/);
        await custom.deleteNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', name: 'during' });
        await watch.waitFor(/DELETED\s+during\s/);
      } finally {
        watch.child.kill();
      }
    });

    it('runs the finalizer flow: delete marks, removing the last finalizer deletes', async () => {
      const kubectl = await kubectlFor(fake);
      const body = { ...project('fin'), metadata: { name: 'fin', finalizers: ['analytics.tally.dev/finalizer'] } };
      await custom.createNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', body });
      const del = await kubectl.run(['delete', 'project', 'fin', '--wait=false']);
      assert.equal(del.code, 0, del.stderr);
      const marked = JSON.parse((await kubectl.run(['get', 'project', 'fin', '-o', 'json'])).stdout);
      assert.ok(marked.metadata.deletionTimestamp);
      assert.equal(marked.metadata.generation, 2, 'marking for deletion bumps generation');
      const addMore = await kubectl.run(['patch', 'project', 'fin', '--type=json', '-p', '[{"op":"add","path":"/metadata/finalizers/-","value":"x/y"}]']);
      assert.match(addMore.stderr, /no new finalizers can be added if the object is being deleted/);
      const release = await kubectl.run(['patch', 'project', 'fin', '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
      assert.equal(release.code, 0, release.stderr);
      assert.match((await kubectl.run(['get', 'project', 'fin'])).stderr, /NotFound/);
    });

    it('refuses what RBAC rules do not allow, with the API server 403', async () => {
      const user = 'system:serviceaccount:tally:tally-operator';
      fake.enforceRbac(
        user,
        grantsFromYaml(
          [
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRole',
            metadata: { name: 'tally-operator' },
            rules: [{ apiGroups: [G], resources: ['projects'], verbs: ['get', 'list', 'watch'] }],
          },
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'Role',
            metadata: { name: 'tally-operator', namespace: 'tally' },
            rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['*'] }],
          },
          ]
            .map((doc) => stringify(doc))
            .join('---\n'),
        ),
      );
      await custom.createNamespacedCustomObject({ group: G, version: V, namespace: 'tally', plural: 'projects', body: project('x') });
      const kubectl = await kubectlFor(fake, user);
      assert.equal((await kubectl.run(['get', 'projects', '-A'])).code, 0);
      const del = await kubectl.run(['delete', 'project', 'x', '-n', 'tally']);
      assert.match(del.stderr, /Error from server \(Forbidden\): projects.analytics.tally.dev "x" is forbidden: User "system:serviceaccount:tally:tally-operator" cannot delete resource "projects" in API group "analytics.tally.dev" in the namespace "tally"/);
      const api = fake.kubeConfig(user).makeApiClient(CoreV1Api);
      await api.createNamespacedSecret({ namespace: 'tally', body: { metadata: { name: 's' }, stringData: { a: 'b' } } });
      await assert.rejects(api.createNamespacedSecret({ namespace: 'other', body: { metadata: { name: 's' } } }), (e) => statusOf(e) === 403);
    });
    it('enforces OwnerReferencesPermissionEnforcement: blockOwnerDeletion needs update on the owner\'s finalizers', async () => {
      const user = 'system:serviceaccount:tally:tally-operator';
      const owner: any = await custom.createNamespacedCustomObject({
        group: G, version: V, namespace: 'tally', plural: 'flagsecrets',
        body: { apiVersion: `${G}/${V}`, kind: 'FlagSecret', metadata: { name: 'fs' }, spec: { projectRef: { name: 'p' } } },
      });
      const rules = [{ apiGroups: [''], resources: ['secrets'], verbs: ['create', 'get', 'update', 'patch'] }];
      fake.enforceRbac(user, [{ namespace: 'tally', rules }]);
      const ref = { apiVersion: `${G}/${V}`, kind: 'FlagSecret', name: 'fs', uid: owner.metadata.uid, controller: true, blockOwnerDeletion: true };
      const secret = (name: string, blockOwnerDeletion: boolean) =>
        ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'tally', ownerReferences: [{ ...ref, blockOwnerDeletion }] }, stringData: { secret: 'x' } });
      const kubectl = await kubectlFor(fake, user);
      const refused = await kubectl.run(['apply', '-n', 'tally', '-f', '-'], stringify(secret('blocked', true)));
      assert.notEqual(refused.code, 0);
      assert.match(refused.stderr, /secrets "blocked" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: User "system:serviceaccount:tally:tally-operator" cannot update resource "flagsecrets\/finalizers" in API group "analytics.tally.dev" in the namespace "tally"/);
      // Without the flag the same reference is fine; setting it later by patch is checked too.
      assert.equal((await kubectl.run(['apply', '-n', 'tally', '-f', '-'], stringify(secret('plain', false)))).code, 0);
      const api = fake.kubeConfig(user).makeApiClient(CoreV1Api);
      await assert.rejects(
        api.patchNamespacedSecret({ namespace: 'tally', name: 'plain', body: { metadata: { ownerReferences: [ref] } } }, merge),
        (e) => statusOf(e) === 403,
      );
      fake.enforceRbac(user, [{ namespace: 'tally', rules: [...rules, { apiGroups: [G], resources: ['flagsecrets/finalizers'], verbs: ['update'] }] }]);
      assert.equal((await kubectl.run(['apply', '-n', 'tally', '-f', '-'], stringify(secret('blocked', true)))).code, 0);
      assert.equal((await core.readNamespacedSecret({ namespace: 'tally', name: 'blocked' })).metadata?.ownerReferences?.[0].blockOwnerDeletion, true);
    });

    it('serves cluster-scoped custom resources (Organization): kubectl get torg without a namespace, printer columns', async () => {
      await custom.createClusterCustomObject({
        group: G, version: V, plural: 'organizations',
        body: { apiVersion: `${G}/${V}`, kind: 'Organization', metadata: { name: 'acme' }, spec: { displayName: 'Acme', namespaces: ['team-a'] } },
      });
      await custom.patchClusterCustomObjectStatus({ group: G, version: V, plural: 'organizations', name: 'acme', body: { status: { organizationId: 7, usage: { month: '2026-11', events: 12, monthlyEventQuota: 100 } } } }, merge);
      const kubectl = await kubectlFor(fake);
      const got = await kubectl.run(['get', 'torg']);
      assert.equal(got.code, 0, got.stderr);
      assert.match(got.stdout, /^NAME\s+ID\s+EVENTS\s+QUOTA\s+READY\s+AGE/m);
      assert.match(got.stdout, /^acme\s+7\s+12\s+100\s+/m);
      const empty = await kubectl.run(['apply', '-f', '-'], stringify({ apiVersion: `${G}/${V}`, kind: 'Organization', metadata: { name: 'none' }, spec: { displayName: 'None', namespaces: [] } }));
      assert.match(empty.stderr, /spec.namespaces: Invalid value: 0: spec.namespaces in body should have at least 1 items/);
    });
  });

  describe('driven by @kubernetes/client-node', () => {
    it('creates, lists in one and all namespaces, updates with conflicts, and patches with each content type', async () => {
      const created: any = await custom.createNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', body: project('a') });
      await custom.createNamespacedCustomObject({ group: G, version: V, namespace: 'team', plural: 'projects', body: project('b') });
      assert.equal(created.metadata.generation, 1);
      assert.equal((await custom.listNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects' })).items.length, 1);
      const all: any = await custom.listClusterCustomObject({ group: G, version: V, plural: 'projects' });
      assert.deepEqual(all.items.map((i: any) => `${i.metadata.namespace}/${i.metadata.name}`).sort(), ['default/a', 'team/b']);

      const stale = structuredClone(created);
      await custom.replaceNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', name: 'a', body: { ...created, spec: { ...created.spec, displayName: 'A2' } } });
      await assert.rejects(
        custom.replaceNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', name: 'a', body: stale }),
        (e) => statusOf(e) === 409,
      );
      // client-node 1.x PATCH defaults to json-patch.
      const jp: any = await custom.patchNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', name: 'a', body: [{ op: 'replace', path: '/spec/displayName', value: 'A3' }] });
      assert.equal(jp.spec.displayName, 'A3');
      assert.equal(jp.metadata.generation, 3);
      const mp: any = await custom.patchNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', name: 'a', body: { metadata: { labels: { x: 'y' } } } }, merge);
      assert.equal(mp.metadata.generation, 3, 'metadata changes do not bump generation');
      await assert.rejects(
        custom.patchNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', name: 'a', body: {} }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch)),
        (e) => statusOf(e) === 415,
      );
      await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 's' }, stringData: { k: 'v1' } } });
      const smp = await core.patchNamespacedSecret({ namespace: NS, name: 's', body: { stringData: { k: 'v2' } } }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch));
      assert.equal(Buffer.from(smp.data!.k, 'base64').toString(), 'v2');
    });

    it('keeps status and spec apart, and a write that changes nothing keeps the resourceVersion', async () => {
      const p: any = await custom.createNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', body: { ...project('s'), status: { projectId: 5 } } });
      assert.equal(p.status, undefined, 'status is ignored on create');
      const ready = { type: 'Ready', status: 'True', reason: 'Reconciled', message: 'ok', lastTransitionTime: '2026-01-01T00:00:00Z', observedGeneration: 1 };
      const s1: any = await custom.patchNamespacedCustomObjectStatus(
        { group: G, version: V, namespace: NS, plural: 'projects', name: 's', body: { spec: { displayName: 'ignored' }, status: { projectId: 5, conditions: [ready] } } },
        merge,
      );
      assert.equal(s1.spec.displayName, 'Project s');
      assert.equal(s1.status.projectId, 5);
      const s2: any = await custom.patchNamespacedCustomObjectStatus(
        { group: G, version: V, namespace: NS, plural: 'projects', name: 's', body: { status: { conditions: [ready], projectId: 5 } } },
        merge,
      );
      assert.equal(s2.metadata.resourceVersion, s1.metadata.resourceVersion, 'no-op status write');
      const bad = custom.patchNamespacedCustomObjectStatus(
        { group: G, version: V, namespace: NS, plural: 'projects', name: 's', body: { status: { conditions: [{ ...ready, status: 'Yes' }] } } },
        merge,
      );
      await assert.rejects(bad, (e) => statusOf(e) === 422);
      const m: any = await custom.patchNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', name: 's', body: { status: { projectId: 6 } } }, merge);
      assert.equal(m.status.projectId, 5, 'the main endpoint ignores status');
    });

    it('watches from a resourceVersion, sends bookmarks, honours timeoutSeconds and answers 410 beyond the history', async () => {
      const first: any = await custom.createNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', body: project('w1') });
      await custom.createNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', body: project('w2') });
      const events: string[] = [];
      const path = `/apis/${G}/${V}/namespaces/${NS}/projects`;
      const ended = new Promise<unknown>((done) => {
        void new Watch(fake.kubeConfig()).watch(
          path,
          { resourceVersion: first.metadata.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 1 },
          (type, obj) => events.push(type === 'BOOKMARK' ? type : `${type} ${obj.metadata.name}`),
          done,
        );
      });
      const started = Date.now();
      assert.equal(await ended, null);
      assert.ok(Date.now() - started >= 900, 'closed by timeoutSeconds');
      assert.equal(events[0], 'ADDED w2', 'replays only what came after the resourceVersion');
      assert.ok(events.includes('BOOKMARK'));

      fake.expireHistory();
      const expired: any[] = [];
      await new Promise((done) => void new Watch(fake.kubeConfig()).watch(path, { resourceVersion: first.metadata.resourceVersion }, (type, obj) => expired.push({ type, obj }), done));
      assert.equal(expired.length, 1);
      assert.equal(expired[0].type, 'ERROR');
      assert.equal(expired[0].obj.code, 410);
      assert.equal(expired[0].obj.reason, 'Expired');
    });

    it('keeps an informer whole through closed watches, 410 and injected failures', async () => {
      const path = `/apis/${G}/${V}/namespaces/${NS}/projects`;
      const informer = makeInformer<KubernetesObject>(fake.kubeConfig(), path, () =>
        custom.listNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects' }) as any,
      );
      const adds: string[] = [];
      informer.on('add', (o) => adds.push(o.metadata!.name!));
      informer.on('error', () => setTimeout(() => void informer.start(), 20));
      await informer.start();
      for (let i = 0; i < 3; i++) await custom.createNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', body: project(`i${i}`) });
      await until('3 adds', () => adds.length === 3);

      fake.closeWatches();
      await custom.createNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', body: project('after-close') });
      await until('add after a closed watch', () => informer.get('after-close', NS));

      // A change the informer misses, then history gone and the stream cut: 410 on resume, relist.
      const lists = () => fake.requests.filter((r) => r.verb === 'list').length;
      const listsBefore = lists();
      fake.hangWatches();
      await custom.createNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', body: project('after-410') });
      fake.expireHistory();
      fake.restoreWatches();
      fake.closeWatches();
      await until('relist after 410', () => lists() > listsBefore && informer.get('after-410', NS));

      fake.failNext(2, 503, { match: (r) => r.verb === 'list' || r.verb === 'watch' });
      fake.closeWatches();
      await custom.createNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', body: project('after-503') });
      await until('recovery after 503s', () => informer.get('after-503', NS), 8000);
      assert.equal(informer.list(NS).length, 6);
      assert.equal(new Set(adds).size, adds.length, 'no object added twice');
      await informer.stop();
    });

    it('goes silent on hangWatches (a watchdog must notice) and fails the next N requests', async () => {
      const got: string[] = [];
      const path = `/apis/${G}/${V}/namespaces/${NS}/projects`;
      fake.hangWatches();
      const controller = await new Watch(fake.kubeConfig()).watch(path, { allowWatchBookmarks: true }, (t, o) => got.push(`${t} ${o.metadata?.name}`), () => undefined);
      await custom.createNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'projects', body: project('unheard') });
      await sleep(300);
      assert.deepEqual(got, [], 'no events and no bookmarks on a hung watch');
      controller.abort();
      fake.restoreWatches();

      fake.failNext(2, 500);
      await assert.rejects(core.listNamespacedSecret({ namespace: NS }), (e) => statusOf(e) === 500);
      await assert.rejects(core.listNamespacedSecret({ namespace: NS }), (e) => statusOf(e) === 500);
      await core.listNamespacedSecret({ namespace: NS });

      // An outage until it is lifted.
      fake.failNext(Infinity, 503);
      for (let i = 0; i < 3; i++) await assert.rejects(core.listNamespacedSecret({ namespace: NS }), (e) => statusOf(e) === 503);
      fake.clearFaults();
      await core.listNamespacedSecret({ namespace: NS });
    });

    it('collects dependents by ownerReferences once the owner is gone (finalizers first)', async () => {
      const owner: any = await custom.createNamespacedCustomObject({
        group: G,
        version: V,
        namespace: NS,
        plural: 'flagsecrets',
        body: { apiVersion: `${G}/${V}`, kind: 'FlagSecret', metadata: { name: 'fs', finalizers: ['analytics.tally.dev/finalizer'] }, spec: { projectRef: { name: 'p' } } },
      });
      const ref = { apiVersion: `${G}/${V}`, kind: 'FlagSecret', name: 'fs', uid: owner.metadata.uid, controller: true };
      await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'fs-flag-secret', ownerReferences: [ref] }, stringData: { secret: 'x' } } });
      await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'unowned' } } });
      await custom.deleteNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'flagsecrets', name: 'fs' });
      await sleep(50);
      assert.ok(await core.readNamespacedSecret({ namespace: NS, name: 'fs-flag-secret' }), 'kept while the owner waits on its finalizer');
      await custom.patchNamespacedCustomObject({ group: G, version: V, namespace: NS, plural: 'flagsecrets', name: 'fs', body: { metadata: { finalizers: [] } } }, merge);
      await until('garbage collection', async () => !(await core.listNamespacedSecret({ namespace: NS })).items.some((s) => s.metadata?.name === 'fs-flag-secret'));
      assert.ok(await core.readNamespacedSecret({ namespace: NS, name: 'unowned' }));
    });

    it('watches across all namespaces and checks Secrets as the API server does (keys, 1 MiB)', async () => {
      const seen: string[] = [];
      const controller = await new Watch(fake.kubeConfig()).watch('/api/v1/secrets', {}, (t, o) => seen.push(`${t} ${o.metadata.namespace}/${o.metadata.name}`), () => undefined);
      await core.createNamespacedSecret({ namespace: 'a', body: { metadata: { name: 'one' }, stringData: { 'tenants.json': '{}' } } });
      await core.createNamespacedSecret({ namespace: 'b', body: { metadata: { name: 'two' } } });
      await until('both namespaces', () => seen.length === 2);
      assert.deepEqual(seen, ['ADDED a/one', 'ADDED b/two']);
      controller.abort();

      // A label selector watch sees an object move in (ADDED) and out (DELETED) of the selection.
      const labelled: string[] = [];
      const byLabel = await new Watch(fake.kubeConfig()).watch(`/api/v1/namespaces/b/secrets`, { labelSelector: 'tally.dev/tenant=yes' }, (t, o) => labelled.push(`${t} ${o.metadata.name}`), () => undefined);
      await core.patchNamespacedSecret({ namespace: 'b', name: 'two', body: { metadata: { labels: { 'tally.dev/tenant': 'yes' } } } }, merge);
      await core.patchNamespacedSecret({ namespace: 'b', name: 'two', body: { metadata: { annotations: { a: 'b' } } } }, merge);
      await core.patchNamespacedSecret({ namespace: 'b', name: 'two', body: { metadata: { labels: { 'tally.dev/tenant': 'no' } } } }, merge);
      await until('three selector events', () => labelled.length === 3);
      assert.deepEqual(labelled, ['ADDED two', 'MODIFIED two', 'DELETED two']);
      byLabel.abort();
      assert.equal(Buffer.from(fake.stored('', 'secrets', 'a', 'one')!.data!['tenants.json' as never] as string, 'base64').toString(), '{}');

      const big = 'x'.repeat(1024 * 1024 + 1);
      await assert.rejects(
        core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'big' }, stringData: { 'tenants.json': big } } }),
        (e: any) => statusOf(e) === 422 && /Too long: must have at most 1048576 bytes/.test(String(e.body)),
      );
      await assert.rejects(
        core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'bad-key' }, stringData: { 'a/b': 'x' } } }),
        (e) => statusOf(e) === 422,
      );
      assert.equal(fake.storedList('', 'secrets', NS).length, 0);
    });

    it('serves Leases with optimistic concurrency and Events in both groups', async () => {
      const leases = fake.kubeConfig().makeApiClient(CoordinationV1Api);
      const lease = await leases.createNamespacedLease({ namespace: NS, body: { metadata: { name: 'tally-operator' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15 } } });
      const taken = await leases.replaceNamespacedLease({ namespace: NS, name: 'tally-operator', body: { ...lease, spec: { ...lease.spec, holderIdentity: 'b' } } });
      assert.equal(taken.spec!.holderIdentity, 'b');
      await assert.rejects(
        leases.replaceNamespacedLease({ namespace: NS, name: 'tally-operator', body: { ...lease, spec: { ...lease.spec, holderIdentity: 'c' } } }),
        (e) => statusOf(e) === 409,
      );
      await core.createNamespacedEvent({
        namespace: NS,
        body: { metadata: { generateName: 'p.' }, involvedObject: { kind: 'Project', name: 'p', namespace: NS }, reason: 'Invalid', message: 'bad', type: 'Warning' },
      });
      const events = fake.kubeConfig().makeApiClient(EventsV1Api);
      await events.createNamespacedEvent({
        namespace: NS,
        body: { metadata: { generateName: 'p.' }, eventTime: new Date(), reportingController: 'tally', reportingInstance: 'x', action: 'Reconcile', reason: 'Invalid', regarding: { kind: 'Project', name: 'p' }, type: 'Warning' },
      });
      assert.equal((await core.listEventForAllNamespaces()).items[0].reason, 'Invalid');
      assert.equal((await events.listNamespacedEvent({ namespace: NS })).items.length, 1);
    });
  });

  it('projects a Secret into a directory as kubelet does, in step with its changes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'projection-'));
    try {
      await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'cfg' }, stringData: { 'tenants.json': '{"generation":1}' } } });
      const projection = await projectSecret(fake, NS, 'cfg', dir);
      assert.equal(await readFile(join(dir, 'tenants.json'), 'utf8'), '{"generation":1}');
      assert.ok((await lstat(join(dir, 'tenants.json'))).isSymbolicLink());
      assert.equal(await readlink(join(dir, 'tenants.json')), '..data/tenants.json');
      const first = await readlink(join(dir, '..data'));
      assert.match(first, /^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+$/);
      await core.patchNamespacedSecret({ namespace: NS, name: 'cfg', body: { stringData: { 'tenants.json': '{"generation":2}' } } }, merge);
      await until('second write', () => projection.writes === 2);
      await projection.settled();
      assert.equal(await readFile(join(dir, 'tenants.json'), 'utf8'), '{"generation":2}');
      const second = await readlink(join(dir, '..data'));
      assert.notEqual(second, first);
      assert.deepEqual((await readdir(dir)).sort(), ['..data', second, 'tenants.json'].sort(), 'old version removed');
      projection.stop();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
