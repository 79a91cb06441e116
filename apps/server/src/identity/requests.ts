import type { LinkRequest } from './links.js';

/** What the identity rules read of a tracked event. */
export interface TrackedForIdentity {
  event: string;
  distinct_id: string;
  properties: Record<string, unknown>;
}

/**
 * The identity links a unit of ingestion asks for, from its records in the order the clients sent
 * them (ingestion/apply.ts feeds it batch by batch), by Mixpanel's rules:
 * - `$create_alias` and /alias: a link retroactive or not depending on the events stored under
 *   the alias, those sent earlier in the unit counting as stored (`aliasHasPendingEvents`);
 * - an event whose `$device_id` and `$user_id` differ, sent as the user: the device's history
 *   joins the user's identity (always retroactive);
 * - mixpanel-browser's `$identify` (original ID merge): the `$anon_distinct_id`'s history joins the user.
 * linkIdentities (links.ts) then makes, finds or refuses each request in this order.
 */
export class LinkRequests {
  readonly requests: LinkRequest[] = [];
  /** distinct_ids of the events sent before the current record, in the unit. */
  private readonly earlier = new Set<string>();
  /**
   * SDKs send $device_id/$user_id on every identified event (bench:ingest's traffic: 186,000
   * requests for 36,000 links). A retroactive request seen before in the unit is a no-op (the
   * first one made the link, found it, or was refused for a reason that still holds), so only the
   * first of each is kept.
   */
  private readonly askedAlways = new Set<string>();

  get length(): number {
    return this.requests.length;
  }

  /** A `$create_alias` record (at its own time, else its batch's) or an /alias request (at its batch's accept time). */
  alias(alias: string, distinctId: string, at: number): void {
    this.requests.push({ alias, distinctId, retroactive: 'auto', at, aliasHasPendingEvents: this.earlier.has(alias) });
  }

  /** A tracked event of a batch accepted at `acceptedAt`: the links its properties ask for. */
  event(r: TrackedForIdentity, acceptedAt: number): void {
    this.earlier.add(r.distinct_id);
    const device = r.properties.$device_id;
    const user = r.properties.$user_id;
    if (typeof device === 'string' && typeof user === 'string' && device && device !== user && r.distinct_id === user) {
      this.always(device, user, acceptedAt);
    }
    const anon = r.properties.$anon_distinct_id;
    if (r.event === '$identify' && typeof anon === 'string' && anon && anon !== r.distinct_id) {
      this.always(anon, r.distinct_id, acceptedAt);
    }
  }

  private always(alias: string, distinctId: string, at: number): void {
    const key = `${alias}\u0000${distinctId}`;
    if (this.askedAlways.has(key)) return;
    this.askedAlways.add(key);
    this.requests.push({ alias, distinctId, retroactive: 'always', at });
  }
}
