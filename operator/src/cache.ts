import type { Informer } from './informer.js';

/** What reconcilers read of a cache: one informer, or several (one per watched namespace). */
export interface Cache<S> {
  get(namespace: string, name: string): S | undefined;
  list(): S[];
  readonly synced: boolean;
  readonly lastHeard: number;
}

/**
 * Informers of one kind over several namespaces (WATCH_NAMESPACE=a,b: a list/watch per namespace,
 * which is what a Role per namespace allows), read as one cache.
 */
export class InformerSet<S extends { metadata: { namespace?: string; name?: string; resourceVersion?: string } }> implements Cache<S> {
  constructor(readonly informers: Informer<S>[]) {}

  get(namespace: string, name: string): S | undefined {
    for (const i of this.informers) {
      const o = i.get(namespace, name);
      if (o) return o;
    }
    return undefined;
  }

  list(): S[] {
    return this.informers.flatMap((i) => i.list());
  }

  get synced(): boolean {
    return this.informers.every((i) => i.synced);
  }

  get lastHeard(): number {
    return Math.min(...this.informers.map((i) => i.lastHeard));
  }
}
