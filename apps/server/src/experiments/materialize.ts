import type { EventStore } from '../ports/events/index.js';
import type { Logger } from '../http/errors.js';
import type { ExperimentMetric } from './schema.js';

/**
 * The property a `sum` metric adds up is read for every event of the metric, spread over the
 * whole table: from the key/value lists that read is most of an experiment's results on DuckDB
 * (bench:experiments, docs/performance.md#experiments), from a column of its own a fraction. So
 * when an experiment with a sum metric is created or changed, its property is materialised
 * (EventStore.materialize) in the background: the API answers at once, results computed before
 * the column is filled read the lists (the same numbers, slower). A store without `materialize`
 * (ClickHouse, where MATERIALIZED_PROPERTIES is the way) is left alone, as is a key that already
 * has a column; once the store refuses for its limit, nothing more is asked.
 */
export class SumPropertyMaterializer {
  private pending = new Map<string, Promise<void>>();
  private full = false;

  constructor(private readonly events: Pick<EventStore, 'materialize' | 'materialized'>, private readonly log: Logger) {}

  /** Starts materialising the sum metrics' properties not yet columns; resolves when those it started are done (tests). */
  request(metrics: readonly ExperimentMetric[]): Promise<void> {
    const started: Array<Promise<void>> = [];
    for (const m of metrics) {
      const key = m.kind === 'sum' ? m.property : undefined;
      if (key === undefined || this.full || !this.events.materialize || this.events.materialized.has(key)) continue;
      let job = this.pending.get(key);
      if (!job) {
        const began = Date.now();
        job = this.events.materialize(key).then(
          (ok) => {
            if (ok) this.log.info('experiments: sum property materialised', { key, ms: Date.now() - began });
            else {
              this.full = true;
              this.log.info('experiments: sum property not materialised, the limit of runtime materialised properties is reached', { key });
            }
          },
          (err) => this.log.error('experiments: materialising a sum property failed', { key, err: err instanceof Error ? err.message : String(err) }),
        ).finally(() => this.pending.delete(key));
        this.pending.set(key, job);
      }
      started.push(job);
    }
    return Promise.all(started).then(() => undefined);
  }
}
