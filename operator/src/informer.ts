import type { Watch } from '@kubernetes/client-node';
import { statusOf, type ListPage } from './kube.js';

/**
 * A list/watch cache on client-node's Watch, written for what real API servers do (client-node's
 * own ListWatch stops for good on the first error): the stream may close at any moment (reopened
 * from the last resourceVersion), `410 Gone` may come as a status or as an ERROR event, before or
 * in the middle of a stream (relist), a stream may go silent (a watchdog aborts and reopens it;
 * bookmarks keep a healthy quiet stream alive), and list/watch calls may fail (backoff, then go on).
 * A relist diffs against the cache, so objects deleted while we were away are reported as deleted.
 */
export type ChangeType = 'add' | 'update' | 'delete';

export interface InformerTiming {
  watchTimeoutSeconds: number;
  watchSilenceMs: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
}

export interface InformerOptions<S extends { metadata: { namespace?: string; name?: string; resourceVersion?: string } }> {
  name: string;
  list(page: { limit: number; continue?: string }): Promise<ListPage<unknown>>;
  watch: Watch;
  watchPath: string;
  /** Selectors sent with the watch (the list applies its own). */
  watchQuery?: { labelSelector?: string; fieldSelector?: string };
  /** What the cache keeps of an object (e.g. digests of a Secret instead of its data). */
  transform(raw: any): S;
  onChange(type: ChangeType, obj: S, old: S | undefined): void;
  /** Called for each restart of the stream (cause: closed, expired, silent, error, list_error). */
  onRestart?(cause: string): void;
  onError?(message: string): void;
  timing: InformerTiming;
}

type Outcome = { cause: 'closed' | 'expired' | 'silent' | 'error'; err?: unknown; delivered: boolean };

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

export class Informer<S extends { metadata: { namespace?: string; name?: string; resourceVersion?: string } }> {
  private cache = new Map<string, S>();
  private resourceVersion = '';
  private stopped = false;
  private failures = 0;
  private current?: { abort(): void };
  private wake?: () => void;
  private loop?: Promise<void>;
  synced = false;
  /** Time of the last thing heard from the API server (for /healthz). */
  lastHeard = Date.now();

  constructor(private readonly opts: InformerOptions<S>) {}

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.abort();
    this.wake?.();
    await this.loop;
  }

  get(namespace: string, name: string): S | undefined {
    return this.cache.get(`${namespace}/${name}`);
  }

  list(): S[] {
    return [...this.cache.values()];
  }

  /** Resolves once the first list has filled the cache. */
  async waitForSync(timeoutMs = 60_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!this.synced) {
      if (Date.now() > end) throw new Error(`informer ${this.opts.name}: not synced after ${timeoutMs} ms`);
      await sleep(20);
    }
  }

  private key(obj: S): string {
    return `${obj.metadata.namespace ?? ''}/${obj.metadata.name ?? ''}`;
  }

  private async pause(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      t.unref();
      this.wake = () => { clearTimeout(t); resolve(); };
    });
    this.wake = undefined;
  }

  private backoff(): number {
    const ms = Math.min(this.opts.timing.backoffMaxMs, this.opts.timing.backoffBaseMs * 2 ** this.failures);
    this.failures++;
    return Math.round(ms * (0.9 + Math.random() * 0.2));
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (!this.resourceVersion) {
        try {
          await this.relist();
        } catch (err) {
          if (this.stopped) return;
          this.opts.onRestart?.('list_error');
          this.opts.onError?.(`list ${this.opts.name}: ${describe(err)}`);
          await this.pause(this.backoff());
          continue;
        }
      }
      const outcome = await this.watchOnce();
      if (this.stopped) return;
      this.opts.onRestart?.(outcome.cause);
      if (outcome.cause === 'expired') this.resourceVersion = '';
      if (outcome.delivered) this.failures = 0;
      if (outcome.cause === 'error') {
        this.opts.onError?.(`watch ${this.opts.name}: ${describe(outcome.err)}`);
        await this.pause(this.backoff());
      } else if (!outcome.delivered && outcome.cause === 'closed') {
        // A stream that closes at once again and again must not spin.
        await this.pause(Math.min(this.backoff(), 1_000));
      }
    }
  }

  private async relist(): Promise<void> {
    const fresh = new Map<string, S>();
    let cont: string | undefined;
    let rv = '';
    do {
      const page = await this.opts.list({ limit: 500, continue: cont });
      for (const raw of page.items) {
        const obj = this.opts.transform(raw);
        fresh.set(this.key(obj), obj);
      }
      cont = page.metadata?.continue || undefined;
      rv = page.metadata?.resourceVersion ?? '';
    } while (cont);
    this.lastHeard = Date.now();
    const old = this.cache;
    this.cache = fresh;
    this.resourceVersion = rv;
    for (const [key, obj] of fresh) {
      const before = old.get(key);
      if (!before) this.opts.onChange('add', obj, undefined);
      else if (before.metadata.resourceVersion !== obj.metadata.resourceVersion) this.opts.onChange('update', obj, before);
    }
    for (const [key, obj] of old) if (!fresh.has(key)) this.opts.onChange('delete', obj, undefined);
    this.synced = true;
  }

  private watchOnce(): Promise<Outcome> {
    return new Promise<Outcome>((resolve) => {
      let settled = false;
      let delivered = false;
      let expired = false;
      let controller: AbortController | undefined;
      let abandoned = false;
      const settle = (cause: Outcome['cause'], err?: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(watchdog);
        this.current = undefined;
        abandoned = true;
        controller?.abort();
        resolve({ cause: expired ? 'expired' : cause, err, delivered });
      };
      let watchdog = setTimeout(() => settle('silent'), this.opts.timing.watchSilenceMs);
      watchdog.unref();
      const heard = () => {
        this.lastHeard = Date.now();
        clearTimeout(watchdog);
        watchdog = setTimeout(() => settle('silent'), this.opts.timing.watchSilenceMs);
        watchdog.unref();
      };
      this.current = { abort: () => settle('closed') };
      const onEvent = (type: string, raw: any) => {
        if (settled) return;
        heard();
        if (type === 'ERROR') {
          if (raw?.code === 410) expired = true;
          settle('error', Object.assign(new Error(raw?.message ?? 'watch error'), { statusCode: raw?.code }));
          return;
        }
        const rv = raw?.metadata?.resourceVersion;
        if (type === 'BOOKMARK') {
          if (rv) this.resourceVersion = rv;
          return;
        }
        delivered = true;
        const obj = this.opts.transform(raw);
        const key = this.key(obj);
        const before = this.cache.get(key);
        if (type === 'DELETED') {
          this.cache.delete(key);
          if (rv) this.resourceVersion = rv;
          this.opts.onChange('delete', obj, before);
          return;
        }
        if (type === 'ADDED' || type === 'MODIFIED') {
          this.cache.set(key, obj);
          if (rv) this.resourceVersion = rv;
          if (!before) this.opts.onChange('add', obj, undefined);
          else if (before.metadata.resourceVersion !== obj.metadata.resourceVersion) this.opts.onChange('update', obj, before);
        }
      };
      const onDone = (err: unknown) => {
        if (settled) return;
        if (err && statusOf(err) === 410) expired = true;
        if (err && !(err instanceof Error && err.name === 'AbortError')) settle('error', err);
        else settle('closed');
      };
      const query = {
        ...this.opts.watchQuery,
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: this.opts.timing.watchTimeoutSeconds,
      };
      this.opts.watch.watch(this.opts.watchPath, query, onEvent, onDone).then(
        (c) => {
          controller = c;
          if (abandoned) c.abort();
          else heard();
        },
        (err) => onDone(err ?? new Error('watch failed')),
      );
    });
  }
}

function describe(err: unknown): string {
  const status = statusOf(err);
  const msg = err instanceof Error ? err.message : String(err);
  return status ? `HTTP ${status}: ${msg}` : msg;
}
