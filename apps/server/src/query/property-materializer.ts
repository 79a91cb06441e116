import type { EventStore } from '../ports/events/index.js';
import type { Logger } from '../http/errors.js';

/**
 * The organisation charged for the requests of projects outside any organisation: they share one
 * share (organisation ids start at 1).
 */
export const NO_ORGANIZATION = 0;

/**
 * Asks the event store to materialise the event properties that analyses read over and over (an
 * experiment's sum metric, the filters and breakdowns of the boards people view), as PostHog
 * materialises the properties its slow queries use: from a column of its own a property is read
 * in a fraction of the time its key/value lists take on DuckDB (docs/analyses.md "Materialised
 * properties"). Built once per process (services.ts) and shared by experiments and boards.
 *
 * The store keeps at most 20 runtime keys; each organisation may have `maxPerOrganization` of them
 * materialised by its requests (the store counts them in the same transaction it adds a key in,
 * so the share holds across processes' restarts), and a key that already has a column costs
 * nobody anything. A store without `materialize` (ClickHouse, where MATERIALIZED_PROPERTIES is the
 * way) is left alone. Once the store or an organisation's share is full nothing more is asked
 * for it: runtime keys are never given back.
 */
export class PropertyMaterializer {
  private pending = new Map<string, Promise<void>>();
  private storeFull = false;
  private sharesFull = new Set<number>();

  constructor(
    private readonly events: Pick<EventStore, 'materialize' | 'materialized'>,
    private readonly log: Logger,
    private readonly maxPerOrganization: number,
  ) {}

  /**
   * Starts materialising those of `keys` not yet columns, charged to `organizationId` (null: a
   * project outside any organisation); `why` names the asker in the log. Resolves when the
   * materialisations it started or joined are done (the store's outcome logged, never thrown).
   */
  request(organizationId: number | null, keys: Iterable<string>, why: string): Promise<void> {
    const org = organizationId ?? NO_ORGANIZATION;
    const started: Array<Promise<void>> = [];
    for (const key of new Set(keys)) {
      if (this.storeFull || this.sharesFull.has(org) || !this.events.materialize || this.events.materialized.has(key)) continue;
      const id = `${org}\u0000${key}`;
      let job = this.pending.get(id);
      if (!job) {
        const began = Date.now();
        job = this.events.materialize(key, { organizationId: org, maxKeys: this.maxPerOrganization }).then(
          (outcome) => {
            if (outcome === 'materialized') this.log.info('event property materialised', { key, for: why, organizationId: org, ms: Date.now() - began });
            else if (outcome === 'store-full') {
              this.storeFull = true;
              this.log.info('event property not materialised: the store has its limit of runtime materialised properties', { key, for: why });
            } else {
              this.sharesFull.add(org);
              this.log.info("event property not materialised: the organisation has its share of runtime materialised properties", { key, for: why, organizationId: org, share: this.maxPerOrganization });
            }
          },
          (err) => this.log.error('materialising an event property failed', { key, for: why, err: err instanceof Error ? err.message : String(err) }),
        ).finally(() => this.pending.delete(id));
        this.pending.set(id, job);
      }
      started.push(job);
    }
    return Promise.all(started).then(() => undefined);
  }
}
