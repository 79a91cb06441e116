import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import type { Backend } from './backends.js';
import { startTestService, type TestService } from './service.js';
import { FakeKube, projectSecret, type Grant, type SecretProjection } from './kube/index.js';
import { DEFAULT_TIMING, type OperatorConfig, type OperatorTiming } from '../../operator/src/config.js';
import { startOperator, type RunningOperator } from '../../operator/src/operator.js';
import { OPERATOR_PERMISSIONS } from '../../operator/src/permissions.js';
import type { AnyResource, KindName } from '../../operator/src/kinds.js';
import { pluralOf } from '../../operator/src/registry.js';

/**
 * The operator's scenario world: the fake Kubernetes API (RBAC enforced for the operator's user
 * from permissions.ts), a real service whose API reads the tenant config from a directory that
 * the Secret is projected into as kubelet does, an organisation, and operators started in-process.
 */
export const POD_NS = 'tally-system';
export const NS = 'team-a';
export const OPERATOR_USER = 'system:serviceaccount:tally-system:tally-operator';
/** The Organization that adopts the world's organisation (`orgId`) for namespace NS. */
export const PLATFORM_ORG = 'platform';

/** Short timings so that faults and handovers play out in seconds. */
export const TEST_TIMING: OperatorTiming = {
  ...DEFAULT_TIMING,
  leaseDurationMs: 2_000,
  renewDeadlineMs: 1_500,
  retryPeriodMs: 200,
  watchTimeoutSeconds: 30,
  watchSilenceMs: 2_500,
  backoffBaseMs: 50,
  backoffMaxMs: 1_000,
  apiTimeoutMs: 5_000,
  usageRefreshMs: 500,
};

/** The Role/ClusterRole grants permissions.ts describes. */
export function grantsFromPermissions(podNamespace: string, watchNamespaces?: string[]): Grant[] {
  return OPERATOR_PERMISSIONS.flatMap((p): Grant[] => {
    const rules = [{ apiGroups: p.apiGroups, resources: p.resources, verbs: p.verbs, resourceNames: p.resourceNames }];
    if (p.scope === 'own-namespace') return [{ namespace: podNamespace, rules }];
    if (p.scope === 'cluster-scoped' || !watchNamespaces?.length) return [{ namespace: undefined, rules }];
    return watchNamespaces.map((namespace) => ({ namespace, rules }));
  });
}

export interface World {
  fake: FakeKube;
  svc: TestService;
  orgId: number;
  tenantDir: string;
  projection: SecretProjection;
  custom: CustomObjectsApi;
  core: CoreV1Api;
  operators: RunningOperator[];
  startOperator(overrides?: Partial<OperatorConfig>): Promise<RunningOperator>;
  apply(kind: KindName, name: string, spec: Record<string, unknown>, namespace?: string): Promise<AnyResource>;
  patchSpec(kind: KindName, name: string, spec: Record<string, unknown>, namespace?: string): Promise<AnyResource>;
  remove(kind: KindName, name: string, namespace?: string): Promise<void>;
  get(kind: KindName, name: string, namespace?: string): Promise<AnyResource | undefined>;
  /** The tenant config as the Secret holds it now. */
  tenantConfig(): Promise<{ version: number; generation: number; projects: any[] } | undefined>;
  close(): Promise<void>;
}

const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export async function startWorld(backend: Backend, opts: { historyLimit?: number; serviceEnv?: Record<string, string> } = {}): Promise<World> {
  const fake = await FakeKube.start({ historyLimit: opts.historyLimit ?? 1000, bookmarkIntervalMs: 500 });
  fake.enforceRbac(OPERATOR_USER, grantsFromPermissions(POD_NS));
  const tenantDir = await mkdtemp(join(tmpdir(), 'tenant-config-'));
  const projection = await projectSecret(fake, POD_NS, 'tally-tenant-config', tenantDir);
  const svc = await startTestService(backend, { TENANT_CONFIG_PATH: tenantDir, ...opts.serviceEnv });
  const org = (await svc.admin.post('/admin/orgs', { name: 'platform' })).body;
  const admin = fake.kubeConfig();
  const custom = admin.makeApiClient(CustomObjectsApi);
  // `organizationId` reaches only an organisation that an Organization manages and whose namespaces
  // list the resource's: the platform organisation is adopted by one listing team-a.
  await custom.createClusterCustomObject({
    group: 'analytics.tally.dev', version: 'v1', plural: 'organizations',
    body: {
      apiVersion: 'analytics.tally.dev/v1', kind: 'Organization',
      metadata: { name: PLATFORM_ORG, annotations: { 'analytics.tally.dev/adopt-id': String(org.id) } },
      spec: { displayName: 'platform', namespaces: [NS] },
    },
  });
  const core = admin.makeApiClient(CoreV1Api);
  const operators: RunningOperator[] = [];
  let n = 0;
  const plural = (kind: KindName) => pluralOf(kind);
  const world: World = {
    fake, svc, orgId: org.id, tenantDir, projection, custom, core, operators,
    async startOperator(overrides = {}) {
      const config: OperatorConfig = {
        apiUrl: svc.url,
        apiKey: 'test-superadmin-key',
        watchNamespaces: [],
        podNamespace: POD_NS,
        leaderElect: true,
        tenantConfigSecret: 'tally-tenant-config',
        tenantConfigMaxBytes: 1_000_000,
        allowUnmanagedOrgs: false,
        metricsPort: 0,
        metricsHost: '127.0.0.1',
        identity: `operator-${++n}`,
        timing: TEST_TIMING,
        logLevel: process.env.OPERATOR_TEST_LOG ? 'info' : 'silent',
        ...overrides,
      };
      const kc: KubeConfig = fake.kubeConfig(OPERATOR_USER, POD_NS);
      const op = await startOperator(config, { kubeConfig: kc });
      operators.push(op);
      return op;
    },
    async apply(kind, name, spec, namespace = NS) {
      return retryInjected(() => custom.createNamespacedCustomObject({
        group: 'analytics.tally.dev', version: 'v1', namespace, plural: plural(kind),
        body: { apiVersion: 'analytics.tally.dev/v1', kind, metadata: { name, namespace }, spec },
      }));
    },
    async patchSpec(kind, name, spec, namespace = NS) {
      return retryInjected(() => custom.patchNamespacedCustomObject({ group: 'analytics.tally.dev', version: 'v1', namespace, plural: plural(kind), name, body: { spec } }, MERGE));
    },
    async remove(kind, name, namespace = NS) {
      await retryInjected(() => custom.deleteNamespacedCustomObject({ group: 'analytics.tally.dev', version: 'v1', namespace, plural: plural(kind), name }));
    },
    async get(kind, name, namespace = NS) {
      try {
        return await retryInjected(() => custom.getNamespacedCustomObject({ group: 'analytics.tally.dev', version: 'v1', namespace, plural: plural(kind), name }));
      } catch (err) {
        if ((err as { code?: number }).code === 404) return undefined;
        throw err;
      }
    },
    async tenantConfig() {
      const s = fake.api.store.get('/secrets', POD_NS, 'tally-tenant-config');
      const raw = (s as { data?: Record<string, string> } | undefined)?.data?.['tenants.json'];
      return raw ? JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) : undefined;
    },
    async close() {
      await Promise.all(operators.map((o) => o.close()));
      projection.stop();
      await projection.settled().catch(() => undefined); // a projection still writing would race the rm
      await svc.close();
      await fake.stop();
      await rm(tenantDir, { recursive: true, force: true, maxRetries: 5 });
    },
  };
  return world;
}

/** The test's own calls go on through injected 5xx failures (those are meant for the operator). */
/**
 * Registers a suite's before/after hooks for a world whose service holds `operatorKey` as
 * OPERATOR_KEY and whose operator runs with that key only; returns the world once started.
 */
export function useKeyedOperatorWorld(backend: Backend, operatorKey: string): () => World {
  let w: World | undefined;
  before(async function () {
    this.timeout(60_000);
    w = await startWorld(backend, { serviceEnv: { OPERATOR_KEY: operatorKey } });
    await w.startOperator({ apiKey: operatorKey });
  });
  after(async function () {
    this.timeout(30_000);
    await w?.close();
  });
  return () => {
    if (!w) throw new Error('the operator world is not started: use it inside a test or hook');
    return w;
  };
}

async function retryInjected<T>(fn: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i > 20 || ![500, 503].includes((err as { code?: number }).code ?? 0)) throw err;
    }
  }
}

/** Polls `fn` until it returns a truthy value; fails with the last value seen. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as T;
      last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const readyOf = (o: AnyResource | undefined) => o?.status?.conditions?.find((c) => c.type === 'Ready');

/** Waits until the resource's Ready condition has `reason` (and is current for its generation). */
export async function waitReady(w: World, kind: KindName, name: string, reason = 'Reconciled', timeoutMs = 15_000): Promise<AnyResource> {
  return waitFor(`${kind} ${name} Ready reason ${reason}`, async () => {
    const o = await w.get(kind, name);
    const c = readyOf(o);
    return o && c?.reason === reason && o.status?.observedGeneration === o.metadata.generation ? o : undefined;
  }, timeoutMs);
}

/**
 * The service's API behind a switch: `down` answers 503 (an API outage) without reaching it;
 * `unavailable`, when set, answers 503 to the requests it picks (an outage of one route).
 */
export async function startApiProxy(target: string): Promise<{ url: string; down: boolean; unavailable?: (method: string, url: string) => boolean; close(): Promise<void> }> {
  const http = await import('node:http');
  const state: { down: boolean; unavailable?: (method: string, url: string) => boolean } = { down: false };
  const server = http.createServer(async (req, res) => {
    if (state.down || state.unavailable?.(req.method ?? 'GET', req.url ?? '/')) {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{"error":"service unavailable"}');
      return;
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && k !== 'host' && k !== 'content-length') headers[k] = v;
    try {
      const r = await fetch(target + req.url, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
      const body = Buffer.from(await r.arrayBuffer());
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
      res.end(body);
    } catch {
      res.writeHead(502);
      res.end();
    }
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.address() as { port: number }).port;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((ok) => { server.closeAllConnections(); server.close(() => ok()); }),
  });
}
