import type { KubeObject, ResourceType } from './types.js';
import type { Selector } from './selectors.js';

/**
 * Storage with one resourceVersion counter for everything (as etcd has), a bounded history of
 * changes for watches to resume from, and the live watchers. It knows nothing of REST semantics
 * (api.ts) or HTTP (server.ts).
 */

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface Change {
  rv: number;
  typeKey: string;
  type: EventType;
  object: KubeObject;
  /** The object before a MODIFIED change (a selector watch turns a change in or out of it into ADDED or DELETED). */
  previous?: KubeObject;
}

export interface WatchOptions {
  namespace?: string;
  /** undefined or '0': start with ADDED for every current object. */
  resourceVersion?: string;
  select: Selector;
}

export interface Watcher {
  typeKey: string;
  options: WatchOptions;
  send(type: EventType | 'BOOKMARK' | 'ERROR', object: Record<string, unknown>): void;
  close(): void;
  /** A hung watcher keeps its connection but never hears anything again. */
  hung: boolean;
}

export const typeKeyOf = (t: Pick<ResourceType, 'group' | 'plural'>) => `${t.group}/${t.plural}`;
const itemKey = (namespace: string | undefined, name: string) => `${namespace ?? ''}/${name}`;

export class Store {
  private rv = 1;
  private readonly objects = new Map<string, Map<string, KubeObject>>();
  private readonly uids = new Set<string>();
  private history: Change[] = [];
  /** Changes at or below this resourceVersion are no longer in the history. */
  private compactedThrough = 1;
  readonly watchers = new Set<Watcher>();
  private readonly listeners = new Set<(change: Change) => void>();

  constructor(public historyLimit: number) {}

  get resourceVersion(): number {
    return this.rv;
  }

  private bucket(typeKey: string): Map<string, KubeObject> {
    let b = this.objects.get(typeKey);
    if (!b) this.objects.set(typeKey, (b = new Map()));
    return b;
  }

  get(typeKey: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const obj = this.objects.get(typeKey)?.get(itemKey(namespace, name));
    return obj && structuredClone(obj);
  }

  list(typeKey: string, namespace?: string): KubeObject[] {
    const out: [string, KubeObject][] = [];
    for (const [key, obj] of this.objects.get(typeKey) ?? []) {
      if (namespace === undefined || obj.metadata.namespace === namespace) out.push([key, obj]);
    }
    return out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, obj]) => structuredClone(obj));
  }

  /** Objects of any type that name `uid` among their owners. */
  dependentsOf(uid: string): { typeKey: string; object: KubeObject }[] {
    const out: { typeKey: string; object: KubeObject }[] = [];
    for (const [typeKey, bucket] of this.objects) {
      for (const obj of bucket.values()) {
        if (obj.metadata.ownerReferences?.some((r) => r.uid === uid)) out.push({ typeKey, object: structuredClone(obj) });
      }
    }
    return out;
  }

  hasUid(uid: string): boolean {
    return this.uids.has(uid);
  }

  typeKeys(): string[] {
    return [...this.objects.keys()];
  }

  /** Stores a write (or removes on DELETED), stamps its resourceVersion, tells watchers. */
  commit(typeKey: string, type: EventType, object: KubeObject): KubeObject {
    const stored = structuredClone(object);
    stored.metadata.resourceVersion = String(++this.rv);
    const key = itemKey(stored.metadata.namespace, stored.metadata.name!);
    const previous = type === 'MODIFIED' ? this.objects.get(typeKey)?.get(key) : undefined;
    if (type === 'DELETED') {
      this.bucket(typeKey).delete(key);
      if (stored.metadata.uid) this.uids.delete(stored.metadata.uid);
    } else {
      this.bucket(typeKey).set(key, stored);
      if (stored.metadata.uid) this.uids.add(stored.metadata.uid);
    }
    const change: Change = { rv: this.rv, typeKey, type, object: stored, previous };
    this.history.push(change);
    if (this.history.length > this.historyLimit) {
      const dropped = this.history.splice(0, this.history.length - this.historyLimit);
      this.compactedThrough = dropped[dropped.length - 1].rv;
    }
    for (const w of this.watchers) this.deliver(w, change);
    for (const l of this.listeners) l(change);
    return structuredClone(stored);
  }

  /** Drops every object of a type (its CRD went away), telling watchers. */
  dropType(typeKey: string): void {
    for (const obj of [...(this.objects.get(typeKey)?.values() ?? [])]) this.commit(typeKey, 'DELETED', obj);
    this.objects.delete(typeKey);
  }

  onChange(listener: (change: Change) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The event this watcher sees for a change, if any (selectors: moving in is ADDED, out is DELETED). */
  private eventFor(w: Watcher, change: Change): EventType | undefined {
    if (change.typeKey !== w.typeKey) return undefined;
    if (w.options.namespace !== undefined && change.object.metadata.namespace !== w.options.namespace) return undefined;
    const now = w.options.select(change.object);
    if (change.type !== 'MODIFIED' || !change.previous) return now ? change.type : undefined;
    const before = w.options.select(change.previous);
    if (now && before) return 'MODIFIED';
    if (now) return 'ADDED';
    if (before) return 'DELETED';
    return undefined;
  }

  private deliver(w: Watcher, change: Change): void {
    if (w.hung) return;
    const type = this.eventFor(w, change);
    if (type) w.send(type, structuredClone(change.object));
  }

  /**
   * Starts a watch: replays what the watcher missed since its resourceVersion, or sends
   * `410 Expired` and closes when that part of the history is gone.
   */
  watch(w: Watcher): void {
    const rv = w.options.resourceVersion;
    if (rv === undefined || rv === '' || rv === '0') {
      for (const obj of this.list(w.typeKey, w.options.namespace)) if (w.options.select(obj)) w.send('ADDED', obj);
    } else {
      const from = Number(rv);
      if (!Number.isInteger(from) || from < 0) {
        w.send('ERROR', status(400, 'BadRequest', `invalid resource version: ${rv}`));
        w.close();
        return;
      }
      if (from < this.compactedThrough) {
        w.send('ERROR', status(410, 'Expired', `too old resource version: ${from} (${this.compactedThrough + 1})`));
        w.close();
        return;
      }
      for (const change of this.history) if (change.rv > from) this.deliver(w, change);
    }
    this.watchers.add(w);
  }

  /** Forgets the whole history: every resume from an older resourceVersion gets 410. */
  expireHistory(): void {
    this.history = [];
    this.compactedThrough = this.rv;
  }
}

export function status(code: number, reason: string, message: string): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}
