import { createHash } from 'node:crypto';
import { InformerSet, type Cache } from './cache.js';
import { statusDiffers, withCondition } from './conditions.js';
import { Informer, type ChangeType } from './informer.js';
import { keyOf, parseKey, type AnyResource, type KindName, type ResourceOf } from './kinds.js';
import { changedItself, type AnyOperatorKind, type KindReconciler, type KindWatch } from './kinds/kind.js';
import { MANAGED_SELECTOR, describeKubeError, statusOf, type ListPage, type SecretSelector } from './kube.js';
import { WorkQueue, type QueueResult } from './queue.js';
import type { Outcome, ReconcileContext, SecretDigest } from './reconcile/context.js';
import { ManagedRecords } from './reconcile/context.js';
import { TenantConfigWriter } from './reconcile/tenant-config.js';
import { operatorKinds } from './registry.js';
import type { OperatorDeps } from './operator.js';

const TENANT_KEY = 'TenantConfig';
const CRD_DELETING_CACHE_MS = 10_000;
type Meta = { metadata: { namespace?: string; name?: string; resourceVersion?: string } };
/** A watch as the controller runs it: the watching kind with one of its watches. */
type Watcher = { kind: AnyOperatorKind; watch: KindWatch<KindName> };

/**
 * What runs while this replica leads, for every kind of the registry (registry.ts): an informer
 * (cluster-wide for a cluster-scoped kind, else per watched namespace), the watches it declares,
 * and its reconciler; besides, only the Secrets the operator made, plus one small watch per Secret
 * a kind refers to (FlagSecret's secretRef), one work queue of keys and the tenant config writer.
 * Status is written only when it differs; failures become Warning Events. No code here is about
 * one kind: a kind's module says what enqueues it and how it is reconciled.
 */
export class Controller {
  readonly ctx: ReconcileContext;
  readonly queue: WorkQueue;
  readonly tenantConfig: TenantConfigWriter;
  private readonly kinds = new Map<KindName, AnyOperatorKind>();
  private readonly caches = new Map<KindName, Cache<AnyResource>>();
  private readonly reconcilers = new Map<KindName, KindReconciler<AnyResource>>();
  /** Watched kind → the watches on it (of any kind, its own included). */
  private readonly watchers = new Map<KindName, Watcher[]>();
  private readonly informers: Informer<any>[] = [];
  private readonly referenced: ReferencedSecrets;
  private readonly warned = new Map<string, number>();
  private readonly crdDeletingUntil = new Map<KindName, number>();
  private resyncTimer?: NodeJS.Timeout;
  private started = false;

  constructor(private readonly deps: OperatorDeps) {
    const { config, kube, metrics } = deps;
    const timing = config.timing;
    const namespaces: (string | undefined)[] = config.watchNamespaces.length > 0 ? config.watchNamespaces : [undefined];
    const informerFor = <S extends Meta>(
      name: string, list: (page: { limit: number; continue?: string }) => Promise<ListPage<unknown>>, watchPath: string, transform: (raw: any) => S,
      onChange: (type: ChangeType, obj: S, old: S | undefined) => void, watchQuery?: SecretSelector,
    ) => {
      const inf = new Informer<S>({
        name, list, watch: kube.watcher, watchPath, watchQuery, transform, onChange, timing,
        onRestart: (cause) => metrics.watchRestarts.inc({ resource: name, cause }),
        onError: (message) => deps.log.error('watch', { message }),
      });
      this.informers.push(inf);
      return inf;
    };
    const crTransform = (kind: KindName) => (raw: any) => { raw.kind ??= kind; raw.metadata.namespace ??= ''; return raw; };
    for (const k of operatorKinds()) {
      const { kind, plural } = k.definition;
      const where = k.definition.scope === 'Cluster' ? [undefined] : namespaces;
      this.kinds.set(kind, k);
      this.caches.set(kind, new InformerSet<AnyResource>(where.map((ns) => informerFor<AnyResource>(ns ? `${plural}/${ns}` : plural,
        (p) => kube.listResources(kind, ns, p), kube.resourceWatchPath(kind, ns), crTransform(kind), (t, o, old) => this.onResource(k, t, o, old)))));
      for (const watch of (k.watches ?? []) as KindWatch<KindName>[]) {
        const list = this.watchers.get(watch.kind) ?? [];
        list.push({ kind: k, watch });
        this.watchers.set(watch.kind, list);
      }
    }
    // Only the Secrets the operator labelled (minted ones) in the watched namespaces: memory does
    // not grow with the cluster's other Secrets.
    const labelled = new InformerSet<SecretDigest>(namespaces.map((ns) => informerFor<SecretDigest>(ns ? `secrets/${ns}` : 'secrets',
      (p) => kube.listSecrets(ns, { labelSelector: MANAGED_SELECTOR }, p), kube.secretWatchPath(ns), digestSecret,
      (t, o) => this.onSecret(t, o), { labelSelector: MANAGED_SELECTOR })));
    // In its own namespace the operator reads the tenant config Secret alone, by name (the chart's
    // Role there names its Secrets with resourceNames: it cannot read the credentials Secret).
    const byName = { fieldSelector: `metadata.name=${config.tenantConfigSecret}` };
    informerFor<SecretDigest>('secrets/tenant-config', (p) => kube.listSecrets(config.podNamespace, byName, p), kube.secretWatchPath(config.podNamespace),
      digestSecret, (t, o) => this.onSecret(t, o), byName);
    this.referenced = new ReferencedSecrets((ns, name) => {
      const inf = new Informer<SecretDigest>({
        name: `secret ${ns}/${name}`, watch: kube.watcher, watchPath: kube.secretWatchPath(ns), timing,
        list: (p) => kube.listSecrets(ns, { fieldSelector: `metadata.name=${name}` }, p),
        watchQuery: { fieldSelector: `metadata.name=${name}` },
        transform: digestSecret, onChange: (t, o) => this.onSecret(t, o),
        onRestart: (cause) => metrics.watchRestarts.inc({ resource: 'secrets/referenced', cause }),
        onError: (message) => deps.log.error('watch', { message }),
      });
      if (this.started) inf.start();
      return inf;
    });
    const secrets: Cache<SecretDigest> = {
      get: (ns, name) => labelled.get(ns, name) ?? this.referenced.get(ns, name),
      list: () => [...labelled.list(), ...this.referenced.list()],
      get synced() { return labelled.synced; },
      get lastHeard() { return labelled.lastHeard; },
    };

    this.queue = new WorkQueue({
      concurrency: 8,
      backoffBaseMs: timing.backoffBaseMs,
      backoffMaxMs: timing.backoffMaxMs,
      process: (key) => this.process(key),
      onDepth: (d) => metrics.queueDepth.set(d),
    });
    this.ctx = {
      config, kube, api: deps.api, log: deps.log, metrics, records: new ManagedRecords(),
      cache: <K extends KindName>(kind: K) => this.cacheOf(kind) as unknown as Cache<ResourceOf<K>>,
      secrets,
      enqueue: (key) => this.queue.add(key),
      enqueueTenantConfig: () => this.queue.add(TENANT_KEY),
      kinds: () => [...this.kinds.values()],
      crdBeingDeleted: (kind) => this.crdBeingDeleted(kind),
      warn: (obj, reason, message) => this.warn(obj, reason, message),
      event: (obj, reason, message) => this.record(obj, 'Normal', reason, message),
    };
    this.tenantConfig = new TenantConfigWriter(this.ctx);
    for (const k of this.kinds.values()) this.reconcilers.set(k.definition.kind, k.reconciler(this.ctx) as KindReconciler<AnyResource>);
  }

  /** Every kind's cache, by kind (the resources gauge reads them). */
  get resourceCaches(): Record<string, Cache<AnyResource>> {
    return Object.fromEntries(this.caches);
  }

  get synced(): boolean {
    return this.informers.every((i) => i.synced);
  }

  /** The oldest "last heard from the API server" of the informers (ms ago). */
  get silenceMs(): number {
    return Date.now() - Math.min(...this.informers.map((i) => i.lastHeard));
  }

  /** Seeds the records from the last tenant config (see TenantConfigWriter.seed), then starts the informers. */
  async start(): Promise<void> {
    await this.tenantConfig.seed();
    this.started = true;
    for (const i of this.informers) i.start();
    this.referenced.startAll();
    this.queue.add(TENANT_KEY);
    this.resyncTimer = setInterval(() => this.resyncAll(), this.deps.config.timing.resyncMs);
    this.resyncTimer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.resyncTimer);
    await Promise.all([...this.informers.map((i) => i.stop()), this.referenced.stopAll()]);
    await this.queue.shutdown();
  }

  private resyncAll(): void {
    for (const c of this.caches.values()) for (const o of c.list()) this.queue.add(keyOf(o));
    this.queue.add(TENANT_KEY);
  }

  // --- events from the informers ---

  /**
   * The objects a watch maps a change of `obj` to, and with `cascade` what watches those in turn
   * (one level: an Organization's Projects, then what acts in their projects).
   */
  private mapped(w: KindWatch<KindName>, obj: AnyResource): string[] {
    const objs = (w.map as (ctx: ReconcileContext, o: AnyResource) => AnyResource[])(this.ctx, obj);
    if (!w.cascade) return objs.map(keyOf);
    return objs.flatMap((o) => [keyOf(o), ...(this.watchers.get(o.kind) ?? []).flatMap(({ watch }) =>
      (watch.map as (ctx: ReconcileContext, o: AnyResource) => AnyResource[])(this.ctx, o).map(keyOf))]);
  }

  // A status change enqueues a reconcile too (changedItself): status is output only, so one
  // written by anyone else is rewritten from the records. The operator's own writes do not loop:
  // the reconcile that follows one finds the same status and writes nothing.

  private onResource(k: AnyOperatorKind, type: ChangeType, obj: AnyResource, old: AnyResource | undefined): void {
    if (changedItself(type, obj, old)) this.queue.add(keyOf(obj));
    for (const { watch } of this.watchers.get(obj.kind) ?? []) {
      const when = watch.when as ((t: ChangeType, o: AnyResource, old: AnyResource | undefined) => boolean) | undefined;
      if (!when || when(type, obj, old)) for (const key of this.mapped(watch, obj)) this.queue.add(key);
    }
    if (k.referencedSecrets) this.syncReferencedSecrets();
    if (k.feedsTenantConfig) this.queue.add(TENANT_KEY);
  }

  /** One watch per Secret that some kind reads without having labelled it. */
  private syncReferencedSecrets(): void {
    const wanted: [string, string][] = [];
    for (const k of this.kinds.values()) {
      const refs = k.referencedSecrets as ((objs: AnyResource[]) => [string, string][]) | undefined;
      if (refs) wanted.push(...refs(this.cacheOf(k.definition.kind).list()));
    }
    this.referenced.sync(wanted);
  }

  private onSecret(_type: ChangeType, obj: SecretDigest): void {
    const { namespace, name } = obj.metadata;
    for (const k of this.kinds.values()) {
      const secretName = k.secretName as ((o: AnyResource) => string) | undefined;
      if (!secretName) continue;
      for (const o of this.cacheOf(k.definition.kind).list()) if (o.metadata.namespace === namespace && secretName(o) === name) this.queue.add(keyOf(o));
    }
    if (namespace === this.deps.config.podNamespace && name === this.deps.config.tenantConfigSecret) this.tenantConfig.invalidate();
    this.queue.add(TENANT_KEY);
  }

  // --- processing one key ---

  private cacheOf(kind: KindName): Cache<AnyResource> {
    const c = this.caches.get(kind);
    if (!c) throw new Error(`no informer for kind ${kind}`);
    return c;
  }

  private async process(key: string): Promise<QueueResult> {
    if (key === TENANT_KEY) return this.processTenantConfig();
    const parsed = parseKey(key);
    // A key of a kind that is not registered, or with the wrong scope for its kind, names nothing.
    const k = parsed && this.kinds.get(parsed.kind);
    if (!parsed || !k || (k.definition.scope === 'Cluster') !== (parsed.namespace === '')) return { kind: 'done' };
    const obj = this.cacheOf(parsed.kind).get(parsed.namespace, parsed.name);
    const { records } = this.ctx;
    if (!obj) {
      records.forget(key);
      return { kind: 'done' };
    }
    const { metrics } = this.deps;
    const end = metrics.duration.startTimer({ kind: parsed.kind });
    const before = records.signature(key);
    let retrying = true;
    try {
      const outcome = await this.reconcile(obj);
      if (outcome === 'gone') {
        metrics.reconciles.inc({ kind: parsed.kind, result: 'ok' });
        records.forget(key);
        retrying = false;
        this.queue.add(TENANT_KEY);
        return { kind: 'done' };
      }
      retrying = !!outcome.retry;
      await this.writeStatus(obj, outcome);
      if (k.feedsTenantConfig) this.queue.add(TENANT_KEY);
      const failed = outcome.ready?.status === 'False';
      metrics.reconciles.inc({ kind: parsed.kind, result: failed ? (outcome.retry ? 'error' : 'waiting') : 'ok' });
      if (failed) {
        metrics.errors.inc({ kind: parsed.kind, reason: outcome.ready!.reason });
        this.warn(obj, outcome.ready!.reason, outcome.ready!.message);
      }
      if (outcome.retry) return { kind: 'retry' };
      if (outcome.afterMs) return { kind: 'after', ms: outcome.afterMs };
      return { kind: 'done' };
    } catch (err) {
      // Kubernetes calls: a stale write (409) is tried again at once; a gone object is done.
      metrics.reconciles.inc({ kind: parsed.kind, result: 'error' });
      const code = statusOf(err);
      if (code === 409) return { kind: 'after', ms: 50 };
      if (code === 404) return { kind: 'done' };
      metrics.errors.inc({ kind: parsed.kind, reason: 'KubernetesError' });
      const message = `a Kubernetes write was refused: ${describeKubeError(err)}`;
      this.deps.log.error('reconcile failed', { key, err: describeKubeError(err) });
      // A refusal (403 from RBAC or admission, 422) is the object's problem too: a condition and a
      // Warning Event where `kubectl describe` shows them, not only a log line.
      if (code !== undefined) {
        this.warn(obj, 'KubernetesError', message);
        await this.writeStatus(obj, { ready: { status: 'False', reason: 'KubernetesError', message } }).catch((e) => {
          this.deps.log.error('status not written', { key, err: describeKubeError(e) });
        });
      }
      return { kind: 'retry' };
    } finally {
      end();
      if (this.cacheOf(parsed.kind).get(parsed.namespace, parsed.name)) {
        records.reconciled.add(key);
        if (retrying) records.retrying.add(key);
        else records.retrying.delete(key);
      }
      // What acts through this resource's project or organisation looks again when the record moved.
      if (records.signature(key) !== before) this.recordChanged(obj);
    }
  }

  /** A reconcile changed what the service said `obj` manages: the watches that asked for it look again. */
  private recordChanged(obj: AnyResource): void {
    for (const { watch } of this.watchers.get(obj.kind) ?? []) if (watch.afterRecordChange) for (const key of this.mapped(watch, obj)) this.queue.add(key);
    this.queue.add(TENANT_KEY);
  }

  private reconcile(obj: AnyResource): Promise<Outcome | 'gone'> {
    const r = this.reconcilers.get(obj.kind)!;
    return obj.metadata.deletionTimestamp ? r.finalize(obj) : r.reconcile(obj);
  }

  private async writeStatus(obj: AnyResource, outcome: Outcome): Promise<void> {
    const generation = obj.metadata.generation;
    const status: Record<string, unknown> = { ...(outcome.fields ?? {}), observedGeneration: generation };
    status.conditions = outcome.ready
      ? withCondition(obj.status?.conditions, { type: 'Ready', ...outcome.ready, observedGeneration: generation })
      : obj.status?.conditions ?? [];
    if (!statusDiffers(obj.status as never, status as never)) return;
    await this.deps.kube.patchStatus(obj.kind, obj.metadata.namespace, obj.metadata.name, status);
  }

  private async processTenantConfig(): Promise<QueueResult> {
    const feeding = [...this.kinds.values()].filter((k) => k.feedsTenantConfig).map((k) => this.cacheOf(k.definition.kind));
    if (!feeding.every((c) => c.synced) || !this.ctx.secrets.synced) return { kind: 'after', ms: 100 };
    try {
      return (await this.tenantConfig.sync()) ? { kind: 'done' } : { kind: 'after', ms: 50 };
    } catch (err) {
      this.deps.log.error('tenant config not written', { err: describeKubeError(err) });
      return { kind: 'retry' };
    }
  }

  /**
   * Only a "being deleted" answer is kept (briefly: while the CRD's cascade deletes every resource
   * of the kind, one read serves them all). A "not being deleted" answer is never reused: it could
   * predate the CRD's deletion that made this very resource go.
   */
  private async crdBeingDeleted(kind: KindName): Promise<boolean> {
    if ((this.crdDeletingUntil.get(kind) ?? 0) > Date.now()) return true;
    const deleting = await this.deps.kube.crdBeingDeleted(kind);
    if (deleting) this.crdDeletingUntil.set(kind, Date.now() + CRD_DELETING_CACHE_MS);
    return deleting;
  }

  private warn(obj: AnyResource, reason: string, message: string): void {
    const key = `${obj.metadata.uid}|${reason}|${message}`;
    const now = Date.now();
    if ((this.warned.get(key) ?? 0) > now - 600_000) return;
    this.warned.set(key, now);
    if (this.warned.size > 10_000) this.warned.clear();
    this.record(obj, 'Warning', reason, message);
  }

  /** Events of cluster-scoped objects go to the operator's namespace (it may write Events there). */
  private record(obj: AnyResource, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const namespace = obj.metadata.namespace || this.deps.config.podNamespace;
    this.deps.kube.createEvent(namespace, obj, type, reason, message).catch((err) => {
      this.deps.log.error('event not recorded', { object: keyOf(obj), err: describeKubeError(err) });
    });
  }
}

/**
 * One watch per Secret a FlagSecret refers to (field selector on its name): a change rotates the
 * flag secret at once, and nothing else of the namespace is cached.
 */
class ReferencedSecrets {
  private readonly watches = new Map<string, Informer<SecretDigest>>();

  constructor(private readonly make: (namespace: string, name: string) => Informer<SecretDigest>) {}

  get(namespace: string, name: string): SecretDigest | undefined {
    return this.watches.get(`${namespace}/${name}`)?.get(namespace, name);
  }

  list(): SecretDigest[] {
    return [...this.watches.values()].flatMap((i) => i.list());
  }

  /** Watches exactly these (namespace, name) pairs. */
  sync(wanted: [string, string][]): void {
    const keys = new Set(wanted.map(([ns, n]) => `${ns}/${n}`));
    for (const [key, inf] of this.watches) {
      if (!keys.has(key)) {
        this.watches.delete(key);
        void inf.stop();
      }
    }
    for (const [ns, name] of wanted) {
      const key = `${ns}/${name}`;
      if (!this.watches.has(key)) this.watches.set(key, this.make(ns, name));
    }
  }

  startAll(): void {
    for (const i of this.watches.values()) i.start();
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.watches.values()].map((i) => i.stop()));
  }
}

function digestSecret(raw: any): SecretDigest {
  const sha256: Record<string, string> = {};
  for (const [k, v] of Object.entries((raw?.data ?? {}) as Record<string, string>)) {
    sha256[k] = createHash('sha256').update(Buffer.from(v ?? '', 'base64').toString('utf8').trim()).digest('hex');
  }
  const m = raw?.metadata ?? {};
  return {
    metadata: {
      namespace: m.namespace, name: m.name, uid: m.uid, resourceVersion: m.resourceVersion,
      ownerUids: (m.ownerReferences ?? []).map((o: { uid: string }) => o.uid),
    },
    sha256,
  };
}
