import { createHash } from 'node:crypto';
import { statusDiffers, withCondition } from './conditions.js';
import { Informer, type ChangeType } from './informer.js';
import { keyOf, parseKey, type AnyResource, type FeatureFlagResource, type FlagSecretResource, type KindName, type ProjectResource } from './kinds.js';
import { describeKubeError, statusOf, type ListPage } from './kube.js';
import { WorkQueue, type QueueResult } from './queue.js';
import type { Outcome, ReconcileContext, SecretDigest } from './reconcile/context.js';
import { flagSecretSecretName } from './reconcile/context.js';
import { reconcileFeatureFlag } from './reconcile/featureflag.js';
import { FlagSecretReconciler } from './reconcile/flagsecret.js';
import { reconcileProject } from './reconcile/project.js';
import { TenantConfigWriter } from './reconcile/tenant-config.js';
import type { OperatorDeps } from './operator.js';

const TENANT_KEY = 'TenantConfig';

/**
 * What runs while this replica leads: four informers (the three kinds and Secrets), one work
 * queue of keys, a reconciler per kind and the tenant config writer. Status is written only when
 * it differs; failures become Warning Events.
 */
export class Controller {
  readonly ctx: ReconcileContext;
  readonly queue: WorkQueue;
  readonly tenantConfig: TenantConfigWriter;
  private readonly flagSecretReconciler: FlagSecretReconciler;
  private readonly informers: Informer<any>[];
  private readonly warned = new Map<string, number>();
  private resyncTimer?: NodeJS.Timeout;

  constructor(private readonly deps: OperatorDeps) {
    const { config, kube, metrics } = deps;
    const ns = config.watchNamespace;
    const timing = config.timing;
    const informerFor = <S extends { metadata: { namespace?: string; name?: string; resourceVersion?: string } }>(
      name: string, list: (page: { limit: number; continue?: string }) => Promise<ListPage<unknown>>, watchPath: string, transform: (raw: any) => S,
      onChange: (type: ChangeType, obj: S, old: S | undefined) => void,
    ) => new Informer<S>({
      name, list, watch: kube.watcher, watchPath, transform, onChange, timing,
      onRestart: (cause) => metrics.watchRestarts.inc({ resource: name, cause }),
      onError: (message) => deps.log.error('watch', { message }),
    });
    const crTransform = (kind: KindName) => (raw: any) => { raw.kind ??= kind; return raw; };
    const projects = informerFor<ProjectResource>('projects', (p) => kube.listResources('Project', ns, p), kube.resourceWatchPath('Project', ns), crTransform('Project'), (t, o, old) => this.onProject(t, o, old));
    const flagSecrets = informerFor<FlagSecretResource>('flagsecrets', (p) => kube.listResources('FlagSecret', ns, p), kube.resourceWatchPath('FlagSecret', ns), crTransform('FlagSecret'), (t, o, old) => this.onFlagSecret(t, o, old));
    const featureFlags = informerFor<FeatureFlagResource>('featureflags', (p) => kube.listResources('FeatureFlag', ns, p), kube.resourceWatchPath('FeatureFlag', ns), crTransform('FeatureFlag'), (t, o, old) => this.onFeatureFlag(t, o, old));
    const secrets = informerFor<SecretDigest>('secrets', (p) => kube.listSecrets(ns, p), kube.secretWatchPath(ns), digestSecret, (t, o) => this.onSecret(t, o));
    this.informers = [projects, flagSecrets, featureFlags, secrets];

    this.queue = new WorkQueue({
      concurrency: 8,
      backoffBaseMs: timing.backoffBaseMs,
      backoffMaxMs: timing.backoffMaxMs,
      process: (key) => this.process(key),
      onDepth: (d) => metrics.queueDepth.set(d),
    });
    this.ctx = {
      config, kube, api: deps.api, log: deps.log, metrics,
      projects, flagSecrets, featureFlags, secrets,
      enqueue: (key) => this.queue.add(key),
      enqueueTenantConfig: () => this.queue.add(TENANT_KEY),
      warn: (obj, reason, message) => this.warn(obj, reason, message),
    };
    this.tenantConfig = new TenantConfigWriter(this.ctx);
    this.flagSecretReconciler = new FlagSecretReconciler(this.ctx);
  }

  get synced(): boolean {
    return this.informers.every((i) => i.synced);
  }

  /** The oldest "last heard from the API server" of the informers (ms ago). */
  get silenceMs(): number {
    return Date.now() - Math.min(...this.informers.map((i) => i.lastHeard));
  }

  start(): void {
    for (const i of this.informers) i.start();
    this.queue.add(TENANT_KEY);
    this.resyncTimer = setInterval(() => this.resyncAll(), this.deps.config.timing.resyncMs);
    this.resyncTimer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.resyncTimer);
    await Promise.all(this.informers.map((i) => i.stop()));
    await this.queue.shutdown();
  }

  private resyncAll(): void {
    for (const inf of [this.ctx.projects, this.ctx.flagSecrets, this.ctx.featureFlags]) for (const o of inf.list()) this.queue.add(keyOf(o));
    this.queue.add(TENANT_KEY);
  }

  // --- events from the informers ---

  private dependents(namespace: string, projectName: string): string[] {
    const refs = [...this.ctx.flagSecrets.list(), ...this.ctx.featureFlags.list()];
    return refs.filter((o) => o.metadata.namespace === namespace && o.spec?.projectRef?.name === projectName).map(keyOf);
  }

  private onProject(type: ChangeType, obj: ProjectResource, old: ProjectResource | undefined): void {
    if (type !== 'update' || specChanged(obj, old)) this.queue.add(keyOf(obj));
    const changedForDependents = type !== 'update' || old?.status?.projectId !== obj.status?.projectId || !!old?.metadata.deletionTimestamp !== !!obj.metadata.deletionTimestamp;
    if (changedForDependents) for (const k of this.dependents(obj.metadata.namespace, obj.metadata.name)) this.queue.add(k);
    this.queue.add(TENANT_KEY);
  }

  private onFlagSecret(type: ChangeType, obj: FlagSecretResource, old: FlagSecretResource | undefined): void {
    if (type !== 'update' || specChanged(obj, old)) this.queue.add(keyOf(obj));
    // Another FlagSecret of the same Project may win or lose a conflict now.
    if (type !== 'update' || !!old?.metadata.deletionTimestamp !== !!obj.metadata.deletionTimestamp) {
      for (const fs of this.ctx.flagSecrets.list()) {
        if (fs.metadata.namespace === obj.metadata.namespace && fs.spec?.projectRef?.name === obj.spec?.projectRef?.name && fs.metadata.uid !== obj.metadata.uid) this.queue.add(keyOf(fs));
      }
    }
    this.queue.add(TENANT_KEY);
  }

  private onFeatureFlag(type: ChangeType, obj: FeatureFlagResource, old: FeatureFlagResource | undefined): void {
    if (type !== 'update' || specChanged(obj, old)) this.queue.add(keyOf(obj));
  }

  private onSecret(_type: ChangeType, obj: SecretDigest): void {
    const { namespace, name } = obj.metadata;
    for (const fs of this.ctx.flagSecrets.list()) {
      if (fs.metadata.namespace === namespace && flagSecretSecretName(fs) === name) this.queue.add(keyOf(fs));
    }
    if (namespace === this.deps.config.podNamespace && name === this.deps.config.tenantConfigSecret) this.tenantConfig.invalidate();
    this.queue.add(TENANT_KEY);
  }

  // --- processing one key ---

  private async process(key: string): Promise<QueueResult> {
    if (key === TENANT_KEY) return this.processTenantConfig();
    const parsed = parseKey(key);
    if (!parsed) return { kind: 'done' };
    const informer = parsed.kind === 'Project' ? this.ctx.projects : parsed.kind === 'FlagSecret' ? this.ctx.flagSecrets : this.ctx.featureFlags;
    const obj = informer.get(parsed.namespace, parsed.name) as AnyResource | undefined;
    if (!obj) return { kind: 'done' };
    const { metrics } = this.deps;
    const end = metrics.duration.startTimer({ kind: parsed.kind });
    try {
      const outcome = await this.reconcile(obj);
      if (outcome === 'gone') {
        metrics.reconciles.inc({ kind: parsed.kind, result: 'ok' });
        this.queue.add(TENANT_KEY);
        return { kind: 'done' };
      }
      await this.writeStatus(obj, outcome);
      if (parsed.kind !== 'FeatureFlag') this.queue.add(TENANT_KEY);
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
      // Kubernetes calls: a stale write (409) is tried again at once; anything else backs off.
      metrics.reconciles.inc({ kind: parsed.kind, result: 'error' });
      if (statusOf(err) === 409) return { kind: 'after', ms: 50 };
      if (statusOf(err) === 404) return { kind: 'done' };
      metrics.errors.inc({ kind: parsed.kind, reason: 'KubernetesError' });
      this.deps.log.error('reconcile failed', { key, err: describeKubeError(err) });
      return { kind: 'retry' };
    } finally {
      end();
    }
  }

  private reconcile(obj: AnyResource): Promise<Outcome | 'gone'> {
    switch (obj.kind) {
      case 'Project': return reconcileProject(this.ctx, obj as ProjectResource);
      case 'FlagSecret': return this.flagSecretReconciler.reconcile(obj as FlagSecretResource);
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
    if (!this.ctx.projects.synced || !this.ctx.flagSecrets.synced || !this.ctx.secrets.synced) return { kind: 'after', ms: 100 };
    try {
      return (await this.tenantConfig.sync()) ? { kind: 'done' } : { kind: 'after', ms: 50 };
    } catch (err) {
      this.deps.log.error('tenant config not written', { err: describeKubeError(err) });
      return { kind: 'retry' };
    }
  }

  private warn(obj: AnyResource, reason: string, message: string): void {
    const key = `${obj.metadata.uid}|${reason}|${message}`;
    const now = Date.now();
    if ((this.warned.get(key) ?? 0) > now - 600_000) return;
    this.warned.set(key, now);
    if (this.warned.size > 10_000) this.warned.clear();
    this.deps.kube.createEvent(obj.metadata.namespace, obj, 'Warning', reason, message).catch((err) => {
      this.deps.log.error('event not recorded', { object: keyOf(obj), err: describeKubeError(err) });
    });
  }
}

/** An update that the reconciler must look at: spec (generation) or deletion changed. */
function specChanged(obj: AnyResource, old: AnyResource | undefined): boolean {
  if (!old) return true;
  return obj.metadata.generation !== old.metadata.generation || !!obj.metadata.deletionTimestamp !== !!old.metadata.deletionTimestamp
    || (obj.metadata.generation === undefined && obj.metadata.resourceVersion !== old.metadata.resourceVersion);
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
