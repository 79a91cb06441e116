import type { Db } from '../ports/metadata/knex.js';

/**
 * Reads of the identity model (links live in the metadata store's `identity_links`).
 * The ingestion domain owns writing links (/alias, the $device_id/$user_id rule).
 */
export class IdentityStore {
  constructor(private db: Db) {}

  /** The canonical id of the cluster `distinctId` belongs to now (itself when unlinked). */
  async canonicalOf(projectId: number, distinctId: string): Promise<string> {
    const link = await this.db('identity_links').where({ project_id: projectId, distinct_id: distinctId }).first('canonical_id');
    return link?.canonical_id ?? distinctId;
  }

  /** Every distinct_id of the cluster whose canonical id is `canonicalId` (including itself). */
  async clusterOf(projectId: number, canonicalId: string): Promise<string[]> {
    const rows = await this.db('identity_links').where({ project_id: projectId, canonical_id: canonicalId }).select('distinct_id');
    return [canonicalId, ...rows.map((r: { distinct_id: string }) => r.distinct_id).filter((d: string) => d !== canonicalId)];
  }
}
