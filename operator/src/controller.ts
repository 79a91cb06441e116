import { createHash } from 'node:crypto';
import { InformerSet, type Cache } from './cache.js';
import { statusDiffers, withCondition } from './conditions.js';
import { Informer, type ChangeType } from './informer.js';
import {
  keyOf, parseKey, type AnyResource, type ApiTokenResource, type ExperimentResource, type FeatureFlagResource, type FlagSecretResource, type KindName,
  type OrganizationResource, type ProjectResource,
} from './kinds.js';
import { MANAGED_SELECTOR, describeKubeError, statusOf, type ListPage, type SecretSelector } from './kube.js';
import { WorkQueue, type QueueResult } from './queue.js';
import type { Outcome, ReconcileContext, SecretDigest } from './reconcile/context.js';
import { ManagedRecords, apiTokenSecretName, flagSecretSecretName } from './reconcile/context.js';
import { reconcileApiToken } from './reconcile/apitoken.js';
import { reconcileExperiment } from './reconcile/experiment.js';
import { reconcileFeatureFlag } from './reconcile/featureflag.js';
import { FlagSecretReconciler } from './reconcile/flagsecret.js';
import { OrganizationReconciler } from './reconcile/organization.js';
import { reconcileProject } from './reconcile/project.js';
import { TenantConfigWriter } from './reconcile/tenant-config.js';
import type { OperatorDeps } from './operator.js';

const TENANT_KEY = 'TenantConfig';
const CRD_DELETING_CACHE_MS = 10_000;
type Meta = { metadata: { namespace?: string; name?: string; resourceVersion?: string } };

/**
 * What runs while this replica leads: informers (Organizations cluster-wide; the namespaced kinds
 * per watched namespace; only the Secrets the operator made, plus one small watch per Secret a
 * FlagSecret refers to), one work queue of keys, a reconciler per kind and the tenant config
 * writer. Status is written only when it differs; failures become Warning Events.
 */
export class Controller {
  readonly ctx: ReconcileContext;
  readonly queue: WorkQueue;
  readonly tenantConfig: TenantConfigWriter;
  private readonly flagSecretReconciler: FlagSecretReconciler;
  private readonly organizationReconciler: OrganizationReconciler;
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
    const perNamespace = <S extends AnyResource>(kind: KindName, plural: string, onChange: (t: ChangeType, o: S, old: S | undefined) => void) =>
      new InformerSet<S>(namespaces.map((ns) => informerFor<S>(ns ? `${plural}/${ns}` : plural, (p) => kube.listResources(kind, ns, p) as never,
        kube.resourceWatchPath(kind, ns), crTransform(kind), onChange)));

    const organizations = new InformerSet<OrganizationResource>([informerFor<OrganizationResource>('organizations',
      (p) => kube.listResources('Organization', undefined, p), kube.resourceWatchPath('Organization', undefined), crTransform('Organization'),
      (t, o, old) => this.onOrganization(t, o, old))]);
    const projects = perNamespace<ProjectResource>('Project', 'projects', (t, o, old) => this.onProject(t, o, old));
    const flagSecrets = perNamespace<FlagSecretResource>('FlagSecret', 'flagsecrets', (t, o, old) => this.onFlagSecret(t, o, old));
    const featureFlags = perNamespace<FeatureFlagResource>('FeatureFlag', 'featureflags', (t, o, old) => this.onFeatureFlag(t, o, old));
    const apiTokens = perNamespace<ApiTokenResource>('ApiToken', 'apitokens', (t, o, old) => this.onApiToken(t, o, old));
    const experiments = perNamespace<ExperimentResource>('Experiment', 'experiments', (t, o, old) => this.onExperiment(t, o, old));
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
      organizations, projects, flagSecrets, featureFlags, apiTokens, experiments, secrets,
      enqueue: (key) => this.queue.add(key),
      enqueueTenantConfig: () => this.queue.add(TENANT_KEY),
      crdBeingDeleted: (kind) => this.crdBeingDeleted(kind),
      warn: (obj, reason, message) => this.warn(obj, reason, message),
      event: (obj, reason, message) => this.record(obj, 'Normal', reason, message),
    };
    this.tenantConfig = new TenantConfigWriter(this.ctx);
    this.flagSecretReconciler = new FlagSecretReconciler(this.ctx);
    this.organizationReconciler = new OrganizationReconciler(this.ctx);
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
    const { organizations, projects, flagSecrets, featureFlags, apiTokens, experiments } = this.ctx;
    for (const c of [organizations, projects, flagSecrets, featureFlags, apiTokens, experiments] as Cache<AnyResource>[]) for (const o of c.list()) this.queue.add(keyOf(o));
    this.queue.add(TENANT_KEY);
  }

  // --- events from the informers ---

  private dependents(namespace: string, projectName: string): string[] {
    const refs = [...this.ctx.flagSecrets.list(), ...this.ctx.featureFlags.list(), ...this.ctx.experiments.list()];
    return refs.filter((o) => o.metadata.namespace === namespace && o.spec?.projectRef?.name === projectName).map(keyOf);
  }

  /**
   * Everything that acts for an Organization (by name, or by the id of its organisation as the
   * records have it, before and after): it waits for it, or its namespaces changed.
   */
  private organizationDependents(org: OrganizationResource, formerId?: number): string[] {
    const name = org.metadata.name;
    const ids = new Set([this.ctx.records.organizations.get(keyOf(org)), formerId].filter((x): x is number => !!x));
    const keys: string[] = [];
    for (const p of this.ctx.projects.list()) {
      if (p.spec?.organizationRef?.name === name || (p.spec?.organizationId && (ids.has(p.spec.organizationId) || ids.size === 0))) {
        keys.push(keyOf(p), ...this.dependents(p.metadata.namespace, p.metadata.name));
      }
    }
    for (const t of this.ctx.apiTokens.list()) if (t.spec?.organizationRef?.name === name) keys.push(keyOf(t));
    return keys;
  }

  // A status change enqueues a reconcile too: status is output only, so one written by anyone else
  // is rewritten from the records. The operator's own writes do not loop: the reconcile that
  // follows one finds the same status and writes nothing.

  private onOrganization(type: ChangeType, obj: OrganizationResource, old: OrganizationResource | undefined): void {
    if (type !== 'update' || specChanged(obj, old) || statusChanged(obj, old)) this.queue.add(keyOf(obj));
    // What depends on the organisation it manages is enqueued when its record changes (process()).
    if (type !== 'update' || specChanged(obj, old)) for (const k of this.organizationDependents(obj)) this.queue.add(k);
    this.queue.add(TENANT_KEY);
  }

  private onProject(type: ChangeType, obj: ProjectResource, old: ProjectResource | undefined): void {
    if (type !== 'update' || specChanged(obj, old) || statusChanged(obj, old)) this.queue.add(keyOf(obj));
    const changedForDependents = type !== 'update' || !!old?.metadata.deletionTimestamp !== !!obj.metadata.deletionTimestamp;
    if (changedForDependents) for (const k of this.dependents(obj.metadata.namespace, obj.metadata.name)) this.queue.add(k);
    this.queue.add(TENANT_KEY);
  }

  private onFlagSecret(type: ChangeType, obj: FlagSecretResource, old: FlagSecretResource | undefined): void {
    if (type !== 'update' || specChanged(obj, old) || statusChanged(obj, old)) this.queue.add(keyOf(obj));
    // Another FlagSecret of the same Project may win or lose a conflict now.
    if (type !== 'update' || !!old?.metadata.deletionTimestamp !== !!obj.metadata.deletionTimestamp) {
      for (const fs of this.ctx.flagSecrets.list()) {
        if (fs.metadata.namespace === obj.metadata.namespace && fs.spec?.projectRef?.name === obj.spec?.projectRef?.name && fs.metadata.uid !== obj.metadata.uid) this.queue.add(keyOf(fs));
      }
    }
    this.referenced.sync(this.ctx.flagSecrets.list().filter((f) => f.spec?.secretRef && !f.metadata.deletionTimestamp).map((f) => [f.metadata.namespace, flagSecretSecretName(f)]));
    this.queue.add(TENANT_KEY);
  }

  private onFeatureFlag(type: ChangeType, obj: FeatureFlagResource, old: FeatureFlagResource | undefined): void {
    if (type !== 'update' || specChanged(obj, old) || statusChanged(obj, old)) this.queue.add(keyOf(obj));
    // The Experiments that name it (flagRef) wait for its flag, or follow its key.
    if (type !== 'update' || specChanged(obj, old) || statusChanged(obj, old)) {
      for (const e of this.ctx.experiments.list()) {
        if (e.metadata.namespace === obj.metadata.namespace && e.spec?.flagRef?.name === obj.metadata.name) this.queue.add(keyOf(e));
      }
    }
  }

  private onExperiment(type: ChangeType, obj: ExperimentResource, old: ExperimentResource | undefined): void {
    if (type !== 'update' || specChanged(obj, old) || statusChanged(obj, old)) this.queue.add(keyOf(obj));
  }

  private onApiToken(type: ChangeType, obj: ApiTokenResource, old: ApiTokenResource | undefined): void {
    if (type !== 'update' || specChanged(obj, old) || statusChanged(obj, old)) this.queue.add(keyOf(obj));
  }

  private onSecret(_type: ChangeType, obj: SecretDigest): void {
    const { namespace, name } = obj.metadata;
    for (const fs of this.ctx.flagSecrets.list()) {
      if (fs.metadata.namespace === namespace && flagSecretSecretName(fs) === name) this.queue.add(keyOf(fs));
    }
    for (const t of this.ctx.apiTokens.list()) {
      if (t.metadata.namespace === namespace && apiTokenSecretName(t) === name) this.queue.add(keyOf(t));
    }
    if (namespace === this.deps.config.podNamespace && name === this.deps.config.tenantConfigSecret) this.tenantConfig.invalidate();
    this.queue.add(TENANT_KEY);
  }

  // --- processing one key ---

  private cacheOf(kind: KindName): Cache<AnyResource> {
    const c = this.ctx;
    const caches: Record<KindName, Cache<AnyResource>> = {
      Organization: c.organizations, Project: c.projects, FlagSecret: c.flagSecrets, FeatureFlag: c.featureFlags, ApiToken: c.apiTokens, Experiment: c.experiments,
    };
    return caches[kind];
  }

  private async process(key: string): Promise<QueueResult> {
    if (key === TENANT_KEY) return this.processTenantConfig();
    const parsed = parseKey(key);
    if (!parsed) return { kind: 'done' };
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
      if (parsed.kind !== 'FeatureFlag' && parsed.kind !== 'ApiToken' && parsed.kind !== 'Experiment') this.queue.add(TENANT_KEY);
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

  private recordChanged(obj: AnyResource): void {
    if (obj.kind === 'Organization') for (const k of this.organizationDependents(obj as OrganizationResource)) this.queue.add(k);
    if (obj.kind === 'Project') for (const k of this.dependents(obj.metadata.namespace, obj.metadata.name)) this.queue.add(k);
    this.queue.add(TENANT_KEY);
  }

  private reconcile(obj: AnyResource): Promise<Outcome | 'gone'> {
    switch (obj.kind) {
      case 'Organization': return this.organizationReconciler.reconcile(obj as OrganizationResource);
      case 'Project': return reconcileProject(this.ctx, obj as ProjectResource);
      case 'FlagSecret': return this.flagSecretReconciler.reconcile(obj as FlagSecretResource);
      case 'ApiToken': return reconcileApiToken(this.ctx, obj as ApiTokenResource);
      case 'Experiment': return reconcileExperiment(this.ctx, obj as ExperimentResource);
      default: return reconcileFeatureFlag(this.ctx, obj as FeatureFlagResource);
    }
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
    const c = this.ctx;
    if (!c.organizations.synced || !c.projects.synced || !c.flagSecrets.synced || !c.secrets.synced) return { kind: 'after', ms: 100 };
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

/** An update that the reconciler must look at: spec (generation), annotations or deletion changed. */
function specChanged(obj: AnyResource, old: AnyResource | undefined): boolean {
  if (!old) return true;
  return obj.metadata.generation !== old.metadata.generation || !!obj.metadata.deletionTimestamp !== !!old.metadata.deletionTimestamp
    || JSON.stringify(obj.metadata.annotations ?? {}) !== JSON.stringify(old.metadata.annotations ?? {})
    || (obj.metadata.generation === undefined && obj.metadata.resourceVersion !== old.metadata.resourceVersion);
}

/** A status that is not what it was: the operator's own write, or someone else's, which it rewrites. */
function statusChanged(obj: AnyResource, old: AnyResource | undefined): boolean {
  return JSON.stringify(obj.status ?? {}) !== JSON.stringify(old?.status ?? {});
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
