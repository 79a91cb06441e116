import { KubeConfig } from '@kubernetes/client-node';
import { createLogger, type Logger } from '@tally-analytics/server/logging';
import type { OperatorConfig } from './config.js';
import { Controller } from './controller.js';
import { Kube } from './kube.js';
import { LeaderElector } from './leader.js';
import { OperatorMetrics, startProbeServer } from './metrics.js';
import { LEASE_NAME } from './kinds.js';
import { operatorKinds } from './registry.js';
import { TallyApi } from './tally-api.js';

/**
 * The `operator` role: leader election (unless LEADER_ELECT=false), then the controller while
 * this replica leads; /metrics, /healthz and /readyz on METRICS_PORT all along.
 */
export interface OperatorDeps {
  config: OperatorConfig;
  kube: Kube;
  api: TallyApi;
  log: Logger;
  metrics: OperatorMetrics;
}

export interface RunningOperator {
  /** URL of the probe/metrics listener ('' when METRICS_PORT is -1). */
  url: string;
  readonly isLeader: boolean;
  /** The controller while leading (tests look at its queue and tenant config writer). */
  readonly controller: Controller | undefined;
  metrics: OperatorMetrics;
  /** Stops; `releaseLease: false` leaves the Lease held, as a replica that died would. */
  close(opts?: { releaseLease?: boolean }): Promise<void>;
}

export async function startOperator(config: OperatorConfig, opts: { kubeConfig?: KubeConfig; log?: Logger; defaultMetrics?: boolean } = {}): Promise<RunningOperator> {
  const kc = opts.kubeConfig ?? defaultKubeConfig();
  const log = opts.log ?? createLogger(config.logLevel);
  const metrics = new OperatorMetrics(opts.defaultMetrics ?? false);
  metrics.tenantConfigMaxBytes.set(config.tenantConfigMaxBytes);
  const api = new TallyApi(config.apiUrl, config.apiKey, config.timing.apiTimeoutMs);
  api.onRequest = (method, status) => metrics.apiRequests.inc({ method, status: String(status) });
  const deps: OperatorDeps = { config, kube: new Kube(kc, config.timing.kubeRequestTimeoutMs, operatorKinds().map((k) => k.definition)), api, log, metrics };

  let controller: Controller | undefined;
  let transition: Promise<void> = Promise.resolve();
  metrics.resourcesSource = () => controller?.resourceCaches;
  const lead = () => {
    transition = transition.then(async () => {
      if (controller) return;
      log.info('leading: starting the controller', { identity: config.identity });
      metrics.leader.set(1);
      controller = new Controller(deps);
      await controller.start();
    });
  };
  const follow = () => {
    transition = transition.then(async () => {
      metrics.leader.set(0);
      const c = controller;
      controller = undefined;
      if (c) {
        log.info('lost the lease: stopping the controller', { identity: config.identity });
        await c.stop();
      }
    });
  };

  const elector = config.leaderElect
    ? new LeaderElector(deps.kube, {
      namespace: config.podNamespace, name: LEASE_NAME, identity: config.identity,
      leaseDurationMs: config.timing.leaseDurationMs, renewDeadlineMs: config.timing.renewDeadlineMs, retryPeriodMs: config.timing.retryPeriodMs,
      onStartedLeading: lead, onStoppedLeading: follow,
      onError: (message) => log.error('leader election', { message }),
    })
    : undefined;

  const probes = {
    healthy: () => {
      const silence = controller?.silenceMs ?? 0;
      const limit = config.timing.watchSilenceMs * 2 + 60_000;
      return silence > limit ? { ok: false, detail: `no word from the Kubernetes API for ${Math.round(silence / 1000)} s` } : { ok: true, detail: controller ? 'leading' : 'standby' };
    },
    ready: () => {
      if (!controller) return { ok: true, detail: 'standby: waiting for the lease' };
      return controller.synced ? { ok: true, detail: 'leading, caches synced' } : { ok: false, detail: 'leading, caches not synced yet' };
    },
  };
  const server = config.metricsPort >= 0 ? await startProbeServer(metrics, probes, config.metricsHost, config.metricsPort) : undefined;

  if (elector) elector.start();
  else lead();

  return {
    url: server?.url ?? '',
    get isLeader() { return controller !== undefined; },
    get controller() { return controller; },
    metrics,
    async close(closeOpts = {}) {
      if (elector) await elector.stop(closeOpts.releaseLease ?? true);
      else follow();
      await transition;
      await server?.close();
    },
  };
}

function defaultKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}
