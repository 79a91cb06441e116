import type { Db } from '../ports/metadata/knex.js';
import { nowMs } from '../ports/metadata/knex.js';
import type { Role } from '../auth/roles.js';

export interface Organization {
  id: number;
  name: string;
  monthly_event_quota: number | null;
  created_at: number;
}

export interface User {
  id: number;
  issuer: string;
  subject: string;
  email: string | null;
  name: string | null;
  created_at: number;
}

export interface Membership {
  id: number;
  org_id: number;
  email: string;
  user_id: number | null;
  role: Role;
  created_at: number;
}

const normEmail = (email: string) => email.trim().toLowerCase();

type Row = Record<string, unknown>;
const num = (v: unknown) => Number(v);
const numOrNull = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const strOrNull = (v: unknown) => (v === null || v === undefined ? null : String(v));

function toOrganization(r: Row): Organization {
  return { id: num(r.id), name: String(r.name), monthly_event_quota: numOrNull(r.monthly_event_quota), created_at: num(r.created_at) };
}

function toUser(r: Row): User {
  return {
    id: num(r.id), issuer: String(r.issuer), subject: String(r.subject), email: strOrNull(r.email), name: strOrNull(r.name), created_at: num(r.created_at),
  };
}

function toMembership(r: Row): Membership {
  return { id: num(r.id), org_id: num(r.org_id), email: String(r.email), user_id: numOrNull(r.user_id), role: r.role as Role, created_at: num(r.created_at) };
}

/** Organisations, users and memberships (the metadata store's tenancy tables). */
export class OrgStore {
  constructor(private db: Db) {}

  async createOrg(input: { name: string; monthlyEventQuota?: number | null }, trx: Db = this.db): Promise<Organization> {
    const row = { name: input.name, monthly_event_quota: input.monthlyEventQuota ?? null, created_at: nowMs() };
    const [{ id }] = await trx('organizations').insert(row).returning('id');
    return { id, ...row };
  }

  async listOrgs(): Promise<Organization[]> {
    return ((await this.db('organizations').select('*').orderBy('id')) as Row[]).map(toOrganization);
  }

  async getOrg(id: number): Promise<Organization | undefined> {
    const row: Row | undefined = await this.db('organizations').where({ id }).first();
    return row && toOrganization(row);
  }

  async updateOrg(id: number, patch: { name?: string; monthlyEventQuota?: number | null }): Promise<Organization | undefined> {
    const update: Record<string, unknown> = {};
    if (patch.name !== undefined) update.name = patch.name;
    if (patch.monthlyEventQuota !== undefined) update.monthly_event_quota = patch.monthlyEventQuota;
    if (Object.keys(update).length) await this.db('organizations').where({ id }).update(update);
    return this.getOrg(id);
  }

  /**
   * Invites an email (or changes the role of an existing membership of that email). One upsert on
   * the (org, email) unique index: two invitations of one email at once both land on one row
   * (a read-then-insert let the second hit the index, a 500).
   */
  async upsertMembership(orgId: number, email: string, role: Role, trx: Db = this.db): Promise<Membership> {
    // Bound to a user by the first verified ID token carrying this email (see userFromToken).
    const row = { org_id: orgId, email: normEmail(email), user_id: null, role, created_at: nowMs() };
    const [stored] = await trx('memberships').insert(row).onConflict(['org_id', 'email']).merge(['role']).returning('*');
    return toMembership(stored as Row);
  }

  async listMemberships(orgId: number): Promise<Array<Membership & { name: string | null }>> {
    const rows: Row[] = await this.db('memberships as m')
      .leftJoin('users as u', 'u.id', 'm.user_id')
      .where('m.org_id', orgId)
      .select('m.*', 'u.name')
      .orderBy('m.id');
    return rows.map((r) => ({ ...toMembership(r), name: strOrNull(r.name) }));
  }

  async membershipOfUser(orgId: number, userId: number): Promise<Membership | undefined> {
    const row: Row | undefined = await this.db('memberships').where({ org_id: orgId, user_id: userId }).first();
    return row && toMembership(row);
  }

  async setRole(membershipId: number, role: Role): Promise<void> {
    await this.db('memberships').where({ id: membershipId }).update({ role });
  }

  async deleteMembership(membershipId: number): Promise<void> {
    await this.db('memberships').where({ id: membershipId }).delete();
  }

  /** Owners who have signed in (open owner invitations do not count: they may never be taken up). */
  async countOwners(orgId: number): Promise<number> {
    const [{ n }] = await this.db('memberships').where({ org_id: orgId, role: 'owner' }).whereNotNull('user_id').count({ n: '*' });
    return Number(n);
  }

  /**
   * Finds or creates the user of an ID token's (iss, sub), refreshing email and name, and binds
   * any open invitation for a verified email. Returns the user and their memberships, oldest first.
   */
  async userFromToken(claims: { issuer: string; subject: string; email?: string; emailVerified: boolean; name?: string }) {
    return this.db.transaction(async (trx) => {
      const now = nowMs();
      const found: Row | undefined = await trx('users').where({ issuer: claims.issuer, subject: claims.subject }).first();
      let user: User | undefined = found && toUser(found);
      const email = claims.email ? normEmail(claims.email) : null;
      if (!user) {
        const row = { issuer: claims.issuer, subject: claims.subject, email, name: claims.name ?? null, created_at: now, last_seen_at: now };
        const inserted = await trx('users').insert(row).onConflict(['issuer', 'subject']).ignore().returning('id');
        user = inserted.length
          ? toUser({ id: inserted[0].id, ...row })
          : toUser(await trx('users').where({ issuer: claims.issuer, subject: claims.subject }).first());
      } else if (user.email !== email || (claims.name && user.name !== claims.name)) {
        await trx('users').where({ id: user.id }).update({ email, name: claims.name ?? user.name, last_seen_at: now });
      }
      if (email && claims.emailVerified) {
        await trx('memberships').where({ email }).whereNull('user_id').update({ user_id: user!.id });
      }
      const memberships = ((await trx('memberships').where({ user_id: user!.id }).orderBy('id')) as Row[]).map(toMembership);
      return { user: user!, memberships };
    });
  }

  async getUser(id: number): Promise<User | undefined> {
    const row: Row | undefined = await this.db('users').where({ id }).first();
    return row && toUser(row);
  }
}
