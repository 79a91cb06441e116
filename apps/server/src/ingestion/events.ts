import type { Deps } from '../deps.js';
import type { EventStore, StoredEvent } from '../ports/events/index.js';

/** Event writes, deduplicated by the store on (project, event, distinct_id, time, insert_id). */
export async function writeEvents(deps: Deps, projectId: number, rows: StoredEvent[]): Promise<void> {
  await deps.events.writeEvents(projectId, rows);
}

/**
 * Group commit for event writes. The in-process buffer hands the worker one batch at a time;
 * while more batches are already queued behind the current one, its rows are held here and
 * written together with the next ones (one INSERT per project for many request batches, which
 * is what makes the embedded store fast: the per-statement cost dominates). The batch that
 * empties the queue writes everything held, so when the buffer reports idle every accepted event
 * is stored. This only happens with the in-process buffer, where a held batch and a queued batch
 * are equally in process memory; with JetStream every batch is written before it is acknowledged.
 * A failed write keeps the held rows and fails the current batch, which the buffer retries.
 */
const MAX_HELD_ROWS = 10_000;

class GroupWriter {
  private held = new Map<number, StoredEvent[]>();
  private heldRows = 0;

  constructor(private deps: Deps) {}

  hold(projectId: number, rows: StoredEvent[]) {
    if (rows.length === 0) return;
    let list = this.held.get(projectId);
    if (!list) this.held.set(projectId, (list = []));
    for (const r of rows) list.push(r);
    this.heldRows += rows.length;
  }

  get full() {
    return this.heldRows >= MAX_HELD_ROWS;
  }

  async flush(): Promise<void> {
    while (this.held.size > 0) {
      const [projectId, rows] = this.held.entries().next().value as [number, StoredEvent[]];
      await writeEvents(this.deps, projectId, rows); // throws: rows stay held for the retry
      this.held.delete(projectId);
      this.heldRows -= rows.length;
    }
  }
}

const writers = new WeakMap<EventStore, GroupWriter>();

function writerOf(deps: Deps): GroupWriter {
  let w = writers.get(deps.events);
  if (!w) writers.set(deps.events, (w = new GroupWriter(deps)));
  return w;
}

/**
 * Writes a batch's events, or holds them for the next write when the in-process buffer has
 * more batches queued (see GroupWriter). `mustFlush` forces everything held out now (links
 * check what is stored).
 */
export async function storeEvents(deps: Deps, projectId: number, rows: StoredEvent[], mustFlush = false): Promise<void> {
  const w = writerOf(deps);
  w.hold(projectId, rows);
  const queued = deps.buffer.kind === 'memory' ? ((deps.buffer as { depth?: number }).depth ?? 0) : 0;
  if (!mustFlush && queued > 1 && !w.full) return;
  await w.flush();
}

/** Writes out anything held (before reads that need every applied event, and at shutdown). */
export async function flushEvents(deps: Deps): Promise<void> {
  await writerOf(deps).flush();
}
