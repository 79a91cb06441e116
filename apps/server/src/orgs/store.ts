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

/** Organisations, users and memberships (the metadata store's tenancy tables). */
export class OrgStore {
  constructor(private db: Db) {}

  async createOrg(input: { name: string; monthlyEventQuota?: number | null }, trx: Db = this.db): Promise<Organization> {
    const row = { name: input.name, monthly_event_quota: input.monthlyEventQuota ?? null, created_at: nowMs() };
    const [{ id }] = await trx('organizations').insert(row).returning('id');
    return { id, ...row };
  }

  async listOrgs(): Promise<Organization[]> {
    return this.db('organizations').select('*').orderBy('id');
  }

  async getOrg(id: number): Promise<Organization | undefined> {
    return this.db('organizations').where({ id }).first();
  }

  async updateOrg(id: number, patch: { name?: string; monthlyEventQuota?: number | null }): Promise<Organization | undefined> {
    const update: Record<string, unknown> = {};
    if (patch.name !== undefined) update.name = patch.name;
    if (patch.monthlyEventQuota !== undefined) update.monthly_event_quota = patch.monthlyEventQuota;
    if (Object.keys(update).length) await this.db('organizations').where({ id }).update(update);
    return this.getOrg(id);
  }

  /** Invites an email (or changes the role of an existing membership of that email). */
  async upsertMembership(orgId: number, email: string, role: Role, trx: Db = this.db): Promise<Membership> {
    const e = normEmail(email);
    const existing: Membership | undefined = await trx('memberships').where({ org_id: orgId, email: e }).first();
    if (existing) {
      await trx('memberships').where({ id: existing.id }).update({ role });
      return { ...existing, role };
    }
    // Bound to a user by the first verified ID token carrying this email (see userFromToken).
    const row = { org_id: orgId, email: e, user_id: null, role, created_at: nowMs() };
    const [{ id }] = await trx('memberships').insert(row).returning('id');
    return { id, ...row };
  }

  async listMemberships(orgId: number): Promise<Array<Membership & { name: string | null }>> {
    return this.db('memberships as m')
      .leftJoin('users as u', 'u.id', 'm.user_id')
      .where('m.org_id', orgId)
      .select('m.*', 'u.name')
      .orderBy('m.id');
  }

  async membershipOfUser(orgId: number, userId: number): Promise<Membership | undefined> {
    return this.db('memberships').where({ org_id: orgId, user_id: userId }).first();
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
      let user: User | undefined = await trx('users').where({ issuer: claims.issuer, subject: claims.subject }).first();
      const email = claims.email ? normEmail(claims.email) : null;
      if (!user) {
        const row = { issuer: claims.issuer, subject: claims.subject, email, name: claims.name ?? null, created_at: now, last_seen_at: now };
        const inserted = await trx('users').insert(row).onConflict(['issuer', 'subject']).ignore().returning('id');
        user = inserted.length
          ? { id: inserted[0].id, ...row }
          : await trx('users').where({ issuer: claims.issuer, subject: claims.subject }).first();
      } else if (user.email !== email || (claims.name && user.name !== claims.name)) {
        await trx('users').where({ id: user.id }).update({ email, name: claims.name ?? user.name, last_seen_at: now });
      }
      if (email && claims.emailVerified) {
        await trx('memberships').where({ email }).whereNull('user_id').update({ user_id: user!.id });
      }
      const memberships: Membership[] = await trx('memberships').where({ user_id: user!.id }).orderBy('id');
      return { user: user!, memberships };
    });
  }

  async getUser(id: number): Promise<User | undefined> {
    return this.db('users').where({ id }).first();
  }
}
