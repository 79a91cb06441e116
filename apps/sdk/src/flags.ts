import { evaluateFlag, type FlagDefinition, type FlagResult } from '@tally-analytics/flag-evaluation';
import { TallyHttpError, type Transport } from './transport.js';

export type { FlagDefinition, FlagResult } from '@tally-analytics/flag-evaluation';

/** A flag result and where it was computed. */
export interface EvaluatedFlag extends FlagResult {
  source: 'local' | 'remote';
}

export interface FlagsOptions {
  /** The project flag secret: enables local evaluation. Without it every evaluation is remote. */
  flagSecret?: string;
  /** How often definitions are re-fetched (ETag: unchanged definitions cost a 304). Default 30 s. */
  pollIntervalMs?: number;
}

/**
 * Flags: polls the project's definitions with the flag secret (If-None-Match / 304) and
 * evaluates locally with the server's own evaluator, hashing the raw distinct_id. Falls back to
 * `POST /flags/evaluate` (project token) for flags that are not locally evaluable (cohort rules),
 * for keys the definitions do not know yet, and for everything while definitions are unavailable
 * (no secret, revoked secret, never loaded).
 */
export class FlagsClient {
  private definitions: Map<string, FlagDefinition> | undefined;
  private etag: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private firstLoad: Promise<void> | undefined;
  /** Counters, for tests and diagnostics. */
  readonly stats = { polls: 0, notModified: 0, local: 0, remote: 0 };
  lastPollError: unknown;

  constructor(private transport: Transport, private token: string, private opts: FlagsOptions = {}) {}

  /** Starts polling (when a flag secret is set); resolves after the first attempt. */
  start(): Promise<void> {
    if (!this.opts.flagSecret) return Promise.resolve();
    if (!this.firstLoad) {
      this.firstLoad = this.refresh();
      this.timer = setInterval(() => void this.refresh(), this.opts.pollIntervalMs ?? 30_000);
      this.timer.unref();
    }
    return this.firstLoad;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** True while local definitions are loaded. */
  get hasDefinitions(): boolean {
    return this.definitions !== undefined;
  }

  definitionList(): FlagDefinition[] {
    return this.definitions ? [...this.definitions.values()] : [];
  }

  /** Fetches definitions once. A 401 (secret revoked or rotated) drops them; other failures keep the last good set. */
  async refresh(): Promise<void> {
    if (!this.opts.flagSecret) return;
    this.stats.polls++;
    try {
      const headers: Record<string, string> = { authorization: `Bearer ${this.opts.flagSecret}` };
      if (this.etag && this.definitions) headers['if-none-match'] = this.etag;
      const reply = await this.transport.once('GET', '/flags/local-evaluation', { headers });
      if (reply.status === 304) {
        this.stats.notModified++;
        return;
      }
      if (reply.status === 200 && reply.body && Array.isArray(reply.body.flags)) {
        this.definitions = new Map((reply.body.flags as FlagDefinition[]).map((d) => [d.key, d]));
        this.etag = reply.headers.get('etag') ?? undefined;
        this.lastPollError = undefined;
        return;
      }
      if (reply.status === 401) {
        this.definitions = undefined;
        this.etag = undefined;
      }
      this.lastPollError = new TallyHttpError(reply.status, reply.body);
    } catch (err) {
      this.lastPollError = err;
    }
  }

  /** Local evaluation only: undefined when the flag cannot be evaluated in process. */
  evaluateLocal(key: string, distinctId: string): FlagResult | undefined {
    const def = this.definitions?.get(key);
    if (!def || !def.localEvaluable) return undefined;
    this.stats.local++;
    return evaluateFlag(def, { bucketingId: distinctId, overrideIds: [distinctId] });
  }

  /** Remote evaluation of `keys` (all non-archived flags when omitted). */
  async evaluateRemote(distinctId: string, keys?: string[]): Promise<Record<string, FlagResult>> {
    this.stats.remote++;
    const body: Record<string, unknown> = { distinct_id: distinctId };
    if (keys) body.flag_keys = keys;
    const reply = await this.transport.send('POST', '/flags/evaluate', { body, headers: { 'x-service-token': this.token } });
    return reply.body.flags as Record<string, FlagResult>;
  }

  /** One flag: in process when possible, otherwise remote. Rejects when the remote call fails. */
  async getFlag(key: string, distinctId: string): Promise<EvaluatedFlag> {
    const local = this.evaluateLocal(key, distinctId);
    if (local) return { ...local, source: 'local' };
    const remote = await this.evaluateRemote(distinctId, [key]);
    return { ...remote[key], source: 'remote' };
  }

  /** Every flag of the project: the locally evaluable ones in process, the rest in one remote call. */
  async getAllFlags(distinctId: string): Promise<Record<string, EvaluatedFlag>> {
    if (!this.definitions) {
      const remote = await this.evaluateRemote(distinctId);
      return Object.fromEntries(Object.entries(remote).map(([k, r]) => [k, { ...r, source: 'remote' as const }]));
    }
    const out: Record<string, EvaluatedFlag> = {};
    const remoteKeys: string[] = [];
    for (const def of this.definitions.values()) {
      const local = this.evaluateLocal(def.key, distinctId);
      if (local) out[def.key] = { ...local, source: 'local' };
      else remoteKeys.push(def.key);
    }
    if (remoteKeys.length > 0) {
      const remote = await this.evaluateRemote(distinctId, remoteKeys);
      for (const k of remoteKeys) out[k] = { ...remote[k], source: 'remote' };
    }
    return out;
  }
}
