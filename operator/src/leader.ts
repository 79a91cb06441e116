import type { V1Lease } from '@kubernetes/client-node';
import { microTime, statusOf, type Kube } from './kube.js';

/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go does it: a candidate takes the
 * Lease when it is free (no holder) or when its record has not changed for leaseDuration as seen
 * on the candidate's own clock (so clocks of replicas need not agree); the leader renews every
 * retryPeriod and steps down when it could not renew for renewDeadline (its renewal calls are cut
 * off at that deadline, so a hung API server connection cannot keep it leading past the Lease's
 * expiry: renewDeadline < leaseDuration, as client-go requires). Writes are replaces
 * guarded by resourceVersion, so two candidates never both win. On stop the leader empties the
 * holder so a standby takes over at its next try instead of waiting for expiry.
 */
export interface LeaderOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  onStartedLeading(): void;
  onStoppedLeading(): void;
  onError?(message: string): void;
}

export class LeaderElector {
  private stopped = false;
  private leading = false;
  private observed = { record: '', at: 0 };
  private lastRenew = 0;
  private loop?: Promise<void>;
  private wake?: () => void;

  constructor(private readonly kube: Kube, private readonly opts: LeaderOptions) {}

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Stops campaigning; `release` false leaves the Lease as a crashed leader would (tests). */
  async stop(release = true): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    if (this.leading) {
      this.leading = false;
      if (release) await this.release().catch(() => undefined);
      this.opts.onStoppedLeading();
    }
  }

  private async sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      t.unref();
      this.wake = () => { clearTimeout(t); resolve(); };
    });
    this.wake = undefined;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let ok = false;
      // While leading, a renewal must succeed before lastRenew + renewDeadline: its calls are cut
      // off then (a hung connection cannot keep this replica leading past the Lease's expiry, when
      // another replica may take it).
      const deadline = this.leading ? this.lastRenew + this.opts.renewDeadlineMs : undefined;
      // The renewal counts from before it was sent (never later than when the API server wrote it).
      const started = Date.now();
      try {
        ok = await this.tryAcquireOrRenew(deadline);
      } catch (err) {
        this.opts.onError?.(`lease ${this.opts.namespace}/${this.opts.name}: ${err instanceof Error ? err.message : String(err)}`);
      }
      if (this.stopped) return;
      if (ok && (deadline === undefined || Date.now() <= deadline)) {
        this.lastRenew = started;
        if (!this.leading) {
          this.leading = true;
          this.opts.onStartedLeading();
        }
      } else if (this.leading && Date.now() >= (deadline ?? 0)) {
        this.leading = false;
        this.opts.onError?.(`lease ${this.opts.namespace}/${this.opts.name}: not renewed within ${this.opts.renewDeadlineMs} ms, stepping down`);
        this.opts.onStoppedLeading();
      }
      const wait = deadline !== undefined && this.leading ? Math.min(this.opts.retryPeriodMs, Math.max(0, this.lastRenew + this.opts.renewDeadlineMs - Date.now())) : this.opts.retryPeriodMs;
      await this.sleep(wait);
    }
  }

  private spec(previous: V1Lease['spec'] | undefined, now: number): NonNullable<V1Lease['spec']> {
    const sameHolder = previous?.holderIdentity === this.opts.identity;
    return {
      holderIdentity: this.opts.identity,
      leaseDurationSeconds: Math.max(1, Math.ceil(this.opts.leaseDurationMs / 1000)),
      acquireTime: sameHolder && previous?.acquireTime ? microTime(new Date(previous.acquireTime).getTime()) : microTime(now),
      renewTime: microTime(now),
      leaseTransitions: (previous?.leaseTransitions ?? 0) + (previous?.holderIdentity && !sameHolder ? 1 : 0),
    };
  }

  /** One round: true when this replica holds the Lease afterwards. `deadline` (ms epoch) bounds its calls. */
  private async tryAcquireOrRenew(deadline?: number): Promise<boolean> {
    const { namespace, name } = this.opts;
    const left = () => (deadline === undefined ? undefined : Math.max(1, deadline - Date.now()));
    const now = Date.now();
    const lease = await this.kube.readLease(namespace, name, left());
    if (!lease) {
      try {
        await this.kube.createLease(namespace, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace }, spec: this.spec(undefined, now) }, left());
        return true;
      } catch (err) {
        if (statusOf(err) === 409) return false;
        throw err;
      }
    }
    const holder = lease.spec?.holderIdentity ?? '';
    const record = `${holder}|${lease.spec?.renewTime ? new Date(lease.spec.renewTime).getTime() : ''}|${lease.metadata?.resourceVersion}`;
    if (record !== this.observed.record) this.observed = { record, at: now };
    const durationMs = (lease.spec?.leaseDurationSeconds ?? Math.ceil(this.opts.leaseDurationMs / 1000)) * 1000;
    const held = holder !== '' && holder !== this.opts.identity && now < this.observed.at + durationMs;
    if (held) return false;
    try {
      await this.kube.replaceLease(namespace, name, { ...lease, spec: this.spec(lease.spec, now) }, left());
      return true;
    } catch (err) {
      if (statusOf(err) === 409) return false;
      throw err;
    }
  }

  private async release(): Promise<void> {
    const { namespace, name } = this.opts;
    const lease = await this.kube.readLease(namespace, name);
    if (!lease || lease.spec?.holderIdentity !== this.opts.identity) return;
    await this.kube.replaceLease(namespace, name, {
      ...lease,
      spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime(Date.now()) },
    });
  }
}
