import type { Entry, SizedLru } from './lru.js';
import type { SharedEntries } from './shared-store.js';

/** Where a read found its entry: this process's memory, or the table every process shares. */
export type Found = { entry: Entry<object>; from: 'memory' | 'shared' };

/**
 * This process's memory in front of the shared table (RESULTS_CACHE=shared; none with `process`):
 * a read takes memory's entry when `usable` accepts it, else the table's, which then fills memory;
 * a write goes to both before the answer is given. Whole answers and closed days' parts are kept
 * the same way. A failure of the table is reported and costs only its hits.
 */
export class LayeredEntries {
  constructor(readonly memory: SizedLru<object>, readonly shared: SharedEntries | undefined, private onError: (err: unknown) => void) {}

  async get(id: string, projectId: number, usable: (e: Entry<object> | undefined) => boolean): Promise<Found | undefined> {
    const e = this.memory.get(id);
    if (usable(e)) return { entry: e!, from: 'memory' };
    if (!this.shared) return undefined;
    const s = await this.shared.get(id, projectId).catch((err) => { this.onError(err); return undefined; });
    if (!usable(s)) return undefined;
    this.memory.set(id, s!);
    return { entry: s!, from: 'shared' };
  }

  /** `get` for many ids at once: memory first, the rest from the table in one statement; in order, undefined where none is usable. */
  async getMany(ids: readonly string[], projectId: number, usable: (e: Entry<object> | undefined, i: number) => boolean): Promise<Array<Entry<object> | undefined>> {
    const out = ids.map((id, i) => {
      const e = this.memory.get(id);
      return usable(e, i) ? e : undefined;
    });
    const rest = ids.filter((_, i) => out[i] === undefined);
    if (!this.shared || !rest.length) return out;
    const stored = await this.shared.getMany(rest, projectId).catch((err) => { this.onError(err); return new Map<string, Entry<object>>(); });
    return ids.map((id, i) => {
      if (out[i] !== undefined) return out[i];
      const s = stored.get(id);
      if (!usable(s, i)) return undefined;
      this.memory.set(id, s!);
      return s;
    });
  }

  async set(id: string, projectId: number, entry: Entry<object>): Promise<void> {
    this.memory.set(id, entry);
    await this.shared?.set(id, projectId, entry).catch(this.onError);
  }

  async setMany(entries: ReadonlyArray<readonly [string, Entry<object>]>, projectId: number): Promise<void> {
    for (const [id, e] of entries) this.memory.set(id, e);
    await this.shared?.setMany(entries, projectId).catch(this.onError);
  }
}
