import {
  ApiException, ApiextensionsV1Api, CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, Observable, PatchStrategy, V1MicroTime, Watch,
  setHeaderMiddleware, type ConfigurationOptions, type ObservableMiddleware, type V1Lease, type V1Secret,
} from '@kubernetes/client-node';
import { API_VERSION, FIELD_MANAGER, GROUP, VERSION, type AnyResource, type KindName } from './kinds.js';
import type { KindDefinition } from './resources/meta.js';

/**
 * The Kubernetes calls the operator makes, on @kubernetes/client-node's generated clients. Every
 * call here has its RBAC rule in permissions.ts (the chart and the tests' RBAC enforcement read
 * that list). PATCH goes out as merge-patch: client-node 1.x sends json-patch unless told otherwise.
 * Every call but the watches (which have their own watchdog) is aborted after `requestTimeoutMs`
 * (KUBE_REQUEST_TIMEOUT_MS): a hung API server connection must not hold a reconcile or the Lease
 * renewal forever.
 */
const MERGE = setHeaderMiddleware('Content-Type', PatchStrategy.MergePatch);

/** Aborts the request (and the reading of its body) after `ms`. */
function timeoutMiddleware(ms: number): ObservableMiddleware {
  return {
    pre: (request) => {
      request.setSignal(AbortSignal.timeout(ms) as never);
      return new Observable(Promise.resolve(request));
    },
    post: (response) => new Observable(Promise.resolve(response)),
  };
}

/** A call's options: the timeout, and merge-patch for PATCH. */
function callOptions(ms: number, patch = false): ConfigurationOptions<ObservableMiddleware> {
  return { middleware: patch ? [MERGE, timeoutMiddleware(ms)] : [timeoutMiddleware(ms)], middlewareMergeStrategy: 'append' };
}

export interface SecretSelector { labelSelector?: string; fieldSelector?: string }

/** The label on every Secret the operator makes (the only Secrets it watches besides referenced ones). */
export const MANAGED_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_SELECTOR = `${MANAGED_LABEL}=tally-operator`;

export interface ListPage<T> { items: T[]; metadata?: { resourceVersion?: string; continue?: string } }

export class Kube {
  readonly custom: CustomObjectsApi;
  readonly core: CoreV1Api;
  readonly coordination: CoordinationV1Api;
  readonly apiextensions: ApiextensionsV1Api;
  readonly watcher: Watch;

  private readonly definitions: Map<string, KindDefinition>;

  /** `kinds`: the definitions of the registry's kinds (plural and scope of each). */
  constructor(readonly kc: KubeConfig, readonly requestTimeoutMs: number, kinds: readonly KindDefinition[]) {
    this.definitions = new Map(kinds.map((d) => [d.kind, d]));
    this.custom = kc.makeApiClient(CustomObjectsApi);
    this.core = kc.makeApiClient(CoreV1Api);
    this.coordination = kc.makeApiClient(CoordinationV1Api);
    this.apiextensions = kc.makeApiClient(ApiextensionsV1Api);
    this.watcher = new Watch(kc);
  }

  /** Options of one call: `timeoutMs` (at most the configured timeout) bounds it. */
  private opts(patch = false, timeoutMs?: number): ConfigurationOptions<ObservableMiddleware> {
    return callOptions(Math.max(1, Math.min(timeoutMs ?? this.requestTimeoutMs, this.requestTimeoutMs)), patch);
  }

  // --- custom resources ---

  private definition(kind: KindName): KindDefinition {
    const d = this.definitions.get(kind);
    if (!d) throw new Error(`unknown kind ${kind}`);
    return d;
  }

  pluralOf(kind: KindName): string {
    return this.definition(kind).plural;
  }

  isClusterScoped(kind: KindName): boolean {
    return this.definition(kind).scope === 'Cluster';
  }

  /** The name of a kind's CustomResourceDefinition (`<plural>.<group>`). */
  crdName(kind: KindName): string {
    return `${this.pluralOf(kind)}.${GROUP}`;
  }

  async listResources(kind: KindName, namespace: string | undefined, opts: { limit?: number; continue?: string }): Promise<ListPage<AnyResource>> {
    const plural = this.pluralOf(kind);
    const common = { group: GROUP, version: VERSION, plural, limit: opts.limit, _continue: opts.continue };
    const list = namespace && !this.isClusterScoped(kind)
      ? await this.custom.listNamespacedCustomObject({ ...common, namespace }, this.opts())
      : await this.custom.listClusterCustomObject(common, this.opts());
    for (const item of list.items ?? []) item.kind ??= kind;
    return list;
  }

  resourceWatchPath(kind: KindName, namespace: string | undefined): string {
    const plural = this.pluralOf(kind);
    return namespace && !this.isClusterScoped(kind) ? `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${plural}` : `/apis/${GROUP}/${VERSION}/${plural}`;
  }

  /** Merge-patch of metadata/spec; with `resourceVersion` in the patch it fails with 409 on a stale object. */
  async patchResource(kind: KindName, namespace: string, name: string, body: object): Promise<AnyResource> {
    if (this.isClusterScoped(kind)) {
      return this.custom.patchClusterCustomObject({ group: GROUP, version: VERSION, plural: this.pluralOf(kind), name, body, fieldManager: FIELD_MANAGER }, this.opts(true));
    }
    return this.custom.patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, namespace, plural: this.pluralOf(kind), name, body, fieldManager: FIELD_MANAGER },
      this.opts(true),
    );
  }

  async patchStatus(kind: KindName, namespace: string, name: string, status: object): Promise<AnyResource> {
    if (this.isClusterScoped(kind)) {
      return this.custom.patchClusterCustomObjectStatus(
        { group: GROUP, version: VERSION, plural: this.pluralOf(kind), name, body: { status }, fieldManager: FIELD_MANAGER }, this.opts(true));
    }
    return this.custom.patchNamespacedCustomObjectStatus(
      { group: GROUP, version: VERSION, namespace, plural: this.pluralOf(kind), name, body: { status }, fieldManager: FIELD_MANAGER },
      this.opts(true),
    );
  }

  // --- secrets ---

  /**
   * Secrets matching a selector: never all of them (the operator's memory must not grow with
   * the cluster's unrelated Secrets): the labelled ones it made, or one by name.
   */
  async listSecrets(namespace: string | undefined, selector: SecretSelector, opts: { limit?: number; continue?: string }): Promise<ListPage<V1Secret>> {
    const common = { limit: opts.limit, _continue: opts.continue, labelSelector: selector.labelSelector, fieldSelector: selector.fieldSelector };
    return namespace ? this.core.listNamespacedSecret({ ...common, namespace }, this.opts()) : this.core.listSecretForAllNamespaces(common, this.opts());
  }

  secretWatchPath(namespace: string | undefined): string {
    return namespace ? `/api/v1/namespaces/${namespace}/secrets` : '/api/v1/secrets';
  }

  async readSecret(namespace: string, name: string): Promise<V1Secret | undefined> {
    try {
      return await this.core.readNamespacedSecret({ namespace, name }, this.opts());
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  createSecret(namespace: string, body: V1Secret): Promise<V1Secret> {
    return this.core.createNamespacedSecret({ namespace, body, fieldManager: FIELD_MANAGER }, this.opts());
  }

  /** Full replace guarded by metadata.resourceVersion (409 when someone wrote in between). */
  replaceSecret(namespace: string, name: string, body: V1Secret): Promise<V1Secret> {
    return this.core.replaceNamespacedSecret({ namespace, name, body, fieldManager: FIELD_MANAGER }, this.opts());
  }

  // --- events ---

  /** An Event about `involved`; cluster-scoped objects' Events go to `namespace` (the caller picks it). */
  async createEvent(namespace: string, involved: AnyResource, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const now = new Date();
    const involvedNs = this.isClusterScoped(involved.kind) ? undefined : namespace;
    await this.core.createNamespacedEvent({
      namespace,
      body: {
        metadata: { generateName: `${involved.metadata.name}.`, namespace },
        involvedObject: {
          apiVersion: API_VERSION, kind: involved.kind, name: involved.metadata.name, namespace: involvedNs,
          uid: involved.metadata.uid, resourceVersion: involved.metadata.resourceVersion,
        },
        type, reason, message: message.slice(0, 1024),
        firstTimestamp: now, lastTimestamp: now, count: 1,
        source: { component: FIELD_MANAGER },
        reportingComponent: FIELD_MANAGER,
      },
    }, this.opts());
  }

  // --- CRDs ---

  /**
   * Whether the CRD of `kind` is being deleted (deletionTimestamp set) or gone: Kubernetes then
   * deletes every resource of the kind, which must not delete what they manage in the service.
   */
  async crdBeingDeleted(kind: KindName): Promise<boolean> {
    try {
      const crd = await this.apiextensions.readCustomResourceDefinition({ name: this.crdName(kind) }, this.opts());
      return !!crd.metadata?.deletionTimestamp;
    } catch (err) {
      if (statusOf(err) === 404) return true;
      throw err;
    }
  }

  // --- leases (`timeoutMs`: the leader bounds its renewal by its renew deadline) ---

  async readLease(namespace: string, name: string, timeoutMs?: number): Promise<V1Lease | undefined> {
    try {
      return await this.coordination.readNamespacedLease({ namespace, name }, this.opts(false, timeoutMs));
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  createLease(namespace: string, body: V1Lease, timeoutMs?: number): Promise<V1Lease> {
    return this.coordination.createNamespacedLease({ namespace, body }, this.opts(false, timeoutMs));
  }

  replaceLease(namespace: string, name: string, body: V1Lease, timeoutMs?: number): Promise<V1Lease> {
    return this.coordination.replaceNamespacedLease({ namespace, name, body }, this.opts(false, timeoutMs));
  }
}

export const microTime = (ms: number) => new V1MicroTime(ms);


/** The HTTP status of a failed Kubernetes call (ApiException or Watch error), undefined for network errors. */
export function statusOf(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const e = err as { statusCode?: unknown; code?: unknown } | null;
  if (e && typeof e.statusCode === 'number') return e.statusCode;
  if (e && typeof e.code === 'number') return e.code;
  return undefined;
}

/** A short text for logs and conditions (ApiException's message carries the whole body). */
export function describeKubeError(err: unknown): string {
  if (err instanceof ApiException) {
    const body = typeof err.body === 'string' ? safeJson(err.body) : err.body;
    const message = body && typeof body === 'object' && 'message' in body ? String((body as { message: unknown }).message) : '';
    return `HTTP ${err.code}${message ? ': ' + message : ''}`;
  }
  if (err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError')) return `no answer from the Kubernetes API in time (${err.message})`;
  return err instanceof Error ? err.message : String(err);
}

function safeJson(s: string): unknown {
  try { return JSON.parse(s); } catch { return s; }
}
