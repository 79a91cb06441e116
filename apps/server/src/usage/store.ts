import { isPostgres, type Db } from '../ports/metadata/knex.js';
import { groupCommit } from '../ports/metadata/group-commit.js';
import { sqlInt } from '../ports/events/port.js';

/** `YYYY-MM` of a Unix-ms instant, in UTC. */
export const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7);

export interface OrgUsage {
  org_id: number;
  name: string;
  month: string;
  events: number;
  monthly_event_quota: number | null;
}

function toOrgUsage(r: Record<string, unknown>, month: string): OrgUsage {
  return {
    org_id: Number(r.org_id),
    name: String(r.name),
    month,
    events: Number(r.events),
    monthly_event_quota: r.monthly_event_quota === null || r.monthly_event_quota === undefined ? null : Number(r.monthly_event_quota),
  };
}

/** Events a request wants to count: one entry per project. */
export interface UsageCount {
  orgId: number | null;
  projectId: number;
  n: number;
}

/** One count per project (the sum of its counts). */
function sumByProject(counts: UsageCount[]): UsageCount[] {
  const sum = new Map<number, UsageCount>();
  for (const c of counts) {
    const had = sum.get(c.projectId);
    sum.set(c.projectId, had ? { ...had, n: had.n + c.n } : { ...c });
  }
  return [...sum.values()];
}

/**
 * Accepted events per UTC month: per organisation (`usage_org_monthly`, what quotas compare
 * against and what the usage routes report) and per project (`usage_monthly`, the breakdown).
 */
export class UsageStore {
  /** Quotas known in memory (the tenant config's organisations); undefined: read in the statement. */
  private quotas: ((orgId: number) => number | null | undefined) | undefined;

  constructor(private db: Db) {}

  /** Plugs in an in-memory quota source (TENANT_CONFIG_PATH): a listed organisation's quota costs no read. */
  useQuotas(source: ((orgId: number) => number | null | undefined) | undefined): void {
    this.quotas = source;
  }

  /**
   * Checks the monthly quota and counts, atomically, without a lock held across the caller's
   * publish: for each organisation one conditional upsert `events = events + n WHERE events + n
   * <= quota` (the quota read in the same statement, so a changed quota applies at once); the
   * statement's row lock serialises concurrent requests of an organisation only for its own
   * duration, and a request that does not fit changes nothing. Returns false (nothing counted)
   * when any organisation would exceed its quota. Several organisations in one request are
   * counted in one transaction. PostgreSQL: one statement (CTE) per organisation and project set.
   */
  admit(counts: UsageCount[], month: string): Promise<boolean> {
    return this.admitGrouped({ counts, month });
  }

  /**
   * Group commit (ports/metadata/group-commit.ts): the requests that arrived while an admit ran
   * are admitted together, in one statement per organisation instead of one each (under
   * concurrent ingestion most of the metadata round trips were these). The group's sum fits only
   * if each request fits in arrival order, so all pass; a group that does not fit is admitted
   * request by request in that order, so a request is never refused because of the others.
   */
  private admitGrouped = groupCommit<{ counts: UsageCount[]; month: string }, boolean>(
    ({ counts, month }) => this.admitNow(counts, month),
    async (group) => {
      const out = new Array<PromiseSettledResult<boolean>>(group.length);
      for (const month of new Set(group.map((w) => w.month))) {
        const of = [...group.keys()].filter((i) => group[i].month === month);
        if (of.length > 1 && (await this.admitNow(sumByProject(of.flatMap((i) => group[i].counts)), month).catch(() => false))) {
          for (const i of of) out[i] = { status: 'fulfilled', value: true };
          continue;
        }
        for (const i of of) {
          out[i] = await this.admitNow(group[i].counts, month).then(
            (value): PromiseSettledResult<boolean> => ({ status: 'fulfilled', value }),
            (reason): PromiseSettledResult<boolean> => ({ status: 'rejected', reason }),
          );
        }
      }
      return out;
    },
    { gather: () => !isPostgres(this.db) },
  );

  private async admitNow(counts: UsageCount[], month: string): Promise<boolean> {
    const perOrg = new Map<number | null, UsageCount[]>();
    for (const c of counts) {
      if (c.n <= 0) continue;
      let list = perOrg.get(c.orgId);
      if (!list) perOrg.set(c.orgId, (list = []));
      list.push(c);
    }
    if (perOrg.size === 0) return true;
    const groups = [...perOrg].sort((a, b) => (a[0] ?? -1) - (b[0] ?? -1)); // a fixed lock order
    if (groups.length === 1 && isPostgres(this.db)) return this.admitOrg(this.db, month, groups[0][0], groups[0][1]);
    const refused = new Error('quota');
    try {
      await this.db.transaction(async (trx) => {
        for (const [orgId, list] of groups) if (!(await this.admitOrg(trx, month, orgId, list))) throw refused;
      });
      return true;
    } catch (err) {
      if (err === refused) return false;
      throw err;
    }
  }

  private async admitOrg(db: Db, month: string, orgId: number | null, list: UsageCount[]): Promise<boolean> {
    const n = list.reduce((s, c) => s + c.n, 0);
    if (orgId === null) {
      for (const c of list) await this.addProject(db, null, c.projectId, month, c.n);
      return true;
    }
    const known = this.quotas?.(orgId);
    const quota = known === undefined ? undefined : known === null ? null : sqlInt(known);
    // A quota from memory goes in as a literal; otherwise it is read in the same statement.
    const orgUpsert = `INSERT INTO usage_org_monthly AS u (org_id, month, events)
      SELECT CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS BIGINT)
      WHERE ${quota === undefined ? 'NOT EXISTS (SELECT 1 FROM organizations o WHERE o.id = ? AND o.monthly_event_quota < ?)' : quota === null ? '1 = 1' : `${quota} >= ?`}
      ON CONFLICT (org_id, month) DO UPDATE SET events = u.events + excluded.events
      WHERE ${quota === undefined
        ? 'u.events + excluded.events <= coalesce((SELECT q.monthly_event_quota FROM organizations q WHERE q.id = u.org_id), u.events + excluded.events)'
        : quota === null ? '1 = 1' : `u.events + excluded.events <= ${quota}`}`;
    const orgBindings = quota === undefined ? [orgId, month, n, orgId, n] : quota === null ? [orgId, month, n] : [orgId, month, n, n];
    if (isPostgres(db)) {
      const values = list.map(() => '(?::integer, ?::bigint)').join(', ');
      const res = await db.raw(
        `WITH admitted AS (${orgUpsert} RETURNING 1)
         INSERT INTO usage_monthly AS p (org_id, project_id, month, events)
         SELECT CAST(? AS INTEGER), v.project_id, CAST(? AS TEXT), v.n FROM (VALUES ${values}) v(project_id, n) WHERE EXISTS (SELECT 1 FROM admitted)
         ON CONFLICT (project_id, month) DO UPDATE SET events = p.events + excluded.events
         RETURNING 1`,
        [...orgBindings, orgId, month, ...list.flatMap((c) => [c.projectId, c.n])],
      );
      return (res.rows?.length ?? 0) > 0;
    }
    // SQLite (inside the caller's transaction; SQLite serialises writers).
    const res = await db.raw(orgUpsert, orgBindings);
    if (!((res as { changes?: number })?.changes ?? 0)) return false;
    for (const c of list) await this.addProject(db, orgId, c.projectId, month, c.n);
    return true;
  }

  /** Takes counted events back out (a batch the buffer refused after `admit`). */
  async uncount(counts: UsageCount[], month: string): Promise<void> {
    await this.db.transaction(async (trx) => {
      for (const c of counts) {
        if (c.n <= 0) continue;
        if (c.orgId !== null) await trx('usage_org_monthly').where({ org_id: c.orgId, month }).update({ events: trx.raw('events - ?', [c.n]) });
        await this.addProject(trx, c.orgId, c.projectId, month, -c.n);
      }
    });
  }

  private async addProject(db: Db, orgId: number | null, projectId: number, month: string, events: number): Promise<void> {
    await db('usage_monthly')
      .insert({ org_id: orgId, project_id: projectId, month, events })
      .onConflict(['project_id', 'month'])
      .merge({ events: db.raw('usage_monthly.events + ?', [events]) });
  }

  async orgEvents(orgId: number, month: string, trx: Db = this.db): Promise<number> {
    const row = await trx('usage_org_monthly').where({ org_id: orgId, month }).first('events');
    return Number(row?.events ?? 0);
  }

  /** Every organisation with its events in `month` and its quota. */
  async allOrgs(month: string): Promise<OrgUsage[]> {
    const rows = await this.db('organizations as o')
      .leftJoin('usage_org_monthly as u', (j) => j.on('u.org_id', '=', 'o.id').andOn('u.month', '=', this.db.raw('?', [month])))
      .orderBy('o.id')
      .select('o.id as org_id', 'o.name', 'o.monthly_event_quota', this.db.raw('coalesce(u.events, 0) as events'));
    return (rows as Array<Record<string, unknown>>).map((r) => toOrgUsage(r, month));
  }
}
