import os from 'node:os';
import { int, type Env } from '@tally-analytics/server/env';

/** Operator settings, read once from the environment (docs/operator.md, "Configuration"). */
export interface OperatorConfig {
  /** Base URL of the service's API (OPERATOR_API_URL). */
  apiUrl: string;
  /** The service credential: OPERATOR_KEY when set (least privilege), else SUPERADMIN_KEY. */
  apiKey: string;
  /** Namespaces to watch (WATCH_NAMESPACE, comma-separated); empty = all namespaces. */
  watchNamespaces: string[];
  /** Where the tenant config Secret and the leader Lease live. */
  podNamespace: string;
  leaderElect: boolean;
  tenantConfigSecret: string;
  /** Largest tenants.json accepted, in bytes (Kubernetes refuses objects over 1 MiB). */
  tenantConfigMaxBytes: number;
  /** Port of /metrics, /healthz, /readyz (0 = a free port, for tests; -1 = none). */
  metricsPort: number;
  metricsHost: string;
  /** This replica's name in the Lease (the pod name in Kubernetes). */
  identity: string;
  /**
   * TENANCY_ALLOW_UNMANAGED_ORGS: a Project's `organizationId` may name an organisation that no
   * Organization resource manages, from any namespace (the behaviour before the boundary; for a
   * migration only, unsafe between teams). Default false.
   */
  allowUnmanagedOrgs: boolean;
  timing: OperatorTiming;
  logLevel: 'silent' | 'error' | 'info';
}

/** Durations, all in ms; defaults are client-go's, tests shorten them. */
export interface OperatorTiming {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** Server-side watch timeout; the stream is reopened from the last resourceVersion after it. */
  watchTimeoutSeconds: number;
  /** A watch that delivers nothing (not even a bookmark) for this long is restarted. */
  watchSilenceMs: number;
  /** Backoff of failed list/watch calls and failed reconciles. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Every object is reconciled again after this long, even without a change (drift from the API side). */
  resyncMs: number;
  apiTimeoutMs: number;
  /** Every Kubernetes call but the watches is aborted after this long (KUBE_REQUEST_TIMEOUT_MS). */
  kubeRequestTimeoutMs: number;
  /** An Organization's usage is read again at most this often. */
  usageRefreshMs: number;
  /** An Experiment's results (its status) are read again at most this often (EXPERIMENT_STATUS_INTERVAL_MS). */
  experimentStatusIntervalMs: number;
}

export const DEFAULT_TIMING: OperatorTiming = {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
  watchTimeoutSeconds: 300,
  watchSilenceMs: 330_000,
  backoffBaseMs: 500,
  backoffMaxMs: 60_000,
  resyncMs: 600_000,
  apiTimeoutMs: 10_000,
  kubeRequestTimeoutMs: 30_000,
  usageRefreshMs: 60_000,
  experimentStatusIntervalMs: 300_000,
};

export function loadOperatorConfig(env: Env = process.env): OperatorConfig {
  const apiUrl = env.OPERATOR_API_URL;
  if (!apiUrl) throw new Error('OPERATOR_API_URL is required for the operator role (the service API, e.g. http://tally-api:8080)');
  const apiKey = env.OPERATOR_KEY || env.SUPERADMIN_KEY;
  if (!apiKey) throw new Error('OPERATOR_KEY (or SUPERADMIN_KEY) is required for the operator role');
  const leaderElect = env.LEADER_ELECT ?? 'true';
  if (!['true', 'false'].includes(leaderElect)) throw new Error(`LEADER_ELECT must be true or false (got ${leaderElect})`);
  const kubeRequestTimeoutMs = int(env, 'KUBE_REQUEST_TIMEOUT_MS', DEFAULT_TIMING.kubeRequestTimeoutMs);
  if (kubeRequestTimeoutMs < 1) throw new Error('KUBE_REQUEST_TIMEOUT_MS must be a positive number of milliseconds');
  const experimentStatusIntervalMs = int(env, 'EXPERIMENT_STATUS_INTERVAL_MS', DEFAULT_TIMING.experimentStatusIntervalMs);
  if (experimentStatusIntervalMs < 1000) throw new Error('EXPERIMENT_STATUS_INTERVAL_MS must be at least 1000 milliseconds');
  const allowUnmanaged = env.TENANCY_ALLOW_UNMANAGED_ORGS ?? 'false';
  if (!['true', 'false'].includes(allowUnmanaged)) throw new Error(`TENANCY_ALLOW_UNMANAGED_ORGS must be true or false (got ${allowUnmanaged})`);
  return {
    apiUrl: apiUrl.replace(/\/+$/, ''),
    apiKey,
    watchNamespaces: parseNamespaces(env.WATCH_NAMESPACE),
    podNamespace: env.POD_NAMESPACE || 'default',
    leaderElect: leaderElect === 'true',
    tenantConfigSecret: env.TENANT_CONFIG_SECRET || 'tally-tenant-config',
    tenantConfigMaxBytes: int(env, 'TENANT_CONFIG_MAX_BYTES', 1_000_000),
    metricsPort: int(env, 'METRICS_PORT', 8081),
    metricsHost: env.HOST ?? '0.0.0.0',
    identity: env.POD_NAME || `${os.hostname()}-${process.pid}`,
    allowUnmanagedOrgs: allowUnmanaged === 'true',
    timing: { ...DEFAULT_TIMING, kubeRequestTimeoutMs, experimentStatusIntervalMs },
    logLevel: (env.LOG_LEVEL as OperatorConfig['logLevel']) ?? 'info',
  };
}

/** `a, b,,c` → ['a', 'b', 'c']; each must be a namespace name. */
export function parseNamespaces(value: string | undefined): string[] {
  const list = [...new Set((value ?? '').split(',').map((s) => s.trim()).filter(Boolean))];
  for (const ns of list) {
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(ns) || ns.length > 63) throw new Error(`WATCH_NAMESPACE: "${ns}" is not a namespace name`);
  }
  return list;
}
