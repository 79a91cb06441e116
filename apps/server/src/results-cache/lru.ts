/** One cached answer and what decides whether it may still be served. */
export interface Entry<V> {
  value: V;
  /** The data versions' sum over the days it read, taken before it ran (versions.ts). */
  signature: string;
  /** When its computation started (Unix ms): the age bound counts from here. */
  at: number;
  /** Its range reaches today: served only until `at` + the fresh bound. */
  live: boolean;
  bytes: number;
}

/**
 * A least-recently-used map bounded by the estimated bytes of its values (their JSON length,
 * two bytes a character as V8 keeps most strings), not by their number: one breakdown result can
 * weigh as much as a thousand totals.
 */
export class SizedLru<V> {
  private map = new Map<string, Entry<V>>();
  private total = 0;

  constructor(private maxBytes: number) {}

  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.map.size;
  }

  get(key: string): Entry<V> | undefined {
    const e = this.map.get(key);
    if (!e) return undefined;
    // Map keeps insertion order: re-inserting makes it the most recent.
    this.map.delete(key);
    this.map.set(key, e);
    return e;
  }

  set(key: string, entry: Entry<V>): void {
    this.delete(key);
    // An answer larger than a quarter of the budget would evict most of the others for itself.
    if (entry.bytes > this.maxBytes / 4) return;
    this.map.set(key, entry);
    this.total += entry.bytes;
    for (const [k, e] of this.map) {
      if (this.total <= this.maxBytes) break;
      this.map.delete(k);
      this.total -= e.bytes;
    }
  }

  delete(key: string): void {
    const e = this.map.get(key);
    if (!e) return;
    this.map.delete(key);
    this.total -= e.bytes;
  }
}
