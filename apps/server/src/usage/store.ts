import type { Db } from '../ports/metadata/knex.js';

/** `YYYY-MM` of a Unix-ms instant, in UTC. */
export const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7);

export interface OrgUsage {
  org_id: number;
  name: string;
  month: string;
  events: number;
  monthly_event_quota: number | null;
}

/** Accepted events per organisation and UTC month; ingestion counts, quotas compare against it. */
export class UsageStore {
  constructor(private db: Db) {}

  /** Adds accepted events (inside the caller's transaction when given one). */
  async add(orgId: number | null, projectId: number, month: string, events: number, trx: Db = this.db): Promise<void> {
    await trx('usage_monthly')
      .insert({ org_id: orgId, project_id: projectId, month, events })
      .onConflict(['project_id', 'month'])
      .merge({ events: trx.raw('usage_monthly.events + ?', [events]) });
  }

  async orgEvents(orgId: number, month: string, trx: Db = this.db): Promise<number> {
    const row = await trx('usage_monthly').where({ org_id: orgId, month }).sum({ n: 'events' }).first();
    return Number(row?.n ?? 0);
  }

  /** Every organisation with its events in `month` and its quota. */
  async allOrgs(month: string): Promise<OrgUsage[]> {
    const rows = await this.db('organizations as o')
      .leftJoin('usage_monthly as u', (j) => j.on('u.org_id', '=', 'o.id').andOn('u.month', '=', this.db.raw('?', [month])))
      .groupBy('o.id', 'o.name', 'o.monthly_event_quota')
      .orderBy('o.id')
      .select('o.id as org_id', 'o.name', 'o.monthly_event_quota', this.db.raw('coalesce(sum(u.events), 0) as events'));
    return rows.map((r: any) => ({ ...r, month, events: Number(r.events) }));
  }
}
