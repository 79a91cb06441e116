import type { Db } from '../ports/metadata/knex.js';
import { nowMs } from '../ports/metadata/knex.js';
import { isPostgres } from '../ports/metadata/knex.js';
import { ROLES, type Role } from '../auth/roles.js';
import { conflict } from '../http/errors.js';

export interface Organization {
  id: number;
  name: string;
  monthly_event_quota: number | null;
  created_at: number;
  /** The resource (`Organization/<name>`) that owns the organisation, or null. */
  managed_by: string | null;
  /** The resource that owns the invited membership list (hand edits: 409), or null. */
  members_managed_by: string | null;
  /** The Kubernetes namespaces whose resources may act for it (its Organization's spec.namespaces), or null. */
  namespaces: string[] | null;
}

/** Who manages an organisation (`managed_by`) and its invited membership list (`members_managed_by`). */
export type Management = Partial<Pick<Organization, 'managed_by' | 'members_managed_by'>>;

/** A group of the ID token's groups claim mapped to a role in an organisation. */
export interface GroupMapping {
  name: string;
  role: Role;
}

/** How a membership came to be: an invitation (by a person or a resource) or a mapped group at sign-in. */
export type MembershipSource = 'invite' | 'group';

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
  source: MembershipSource;
}

const normEmail = (email: string) => email.trim().toLowerCase();

type Row = Record<string, unknown>;
const num = (v: unknown) => Number(v);
const numOrNull = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const strOrNull = (v: unknown) => (v === null || v === undefined ? null : String(v));

function toOrganization(r: Row): Organization {
  return {
    id: num(r.id), name: String(r.name), monthly_event_quota: numOrNull(r.monthly_event_quota), created_at: num(r.created_at),
    managed_by: strOrNull(r.managed_by), members_managed_by: strOrNull(r.members_managed_by),
    namespaces: r.namespaces === null || r.namespaces === undefined ? null : (JSON.parse(String(r.namespaces)) as string[]),
  };
}

/** The highest role of a list (null when empty). */
export const highestRole = (roles: Role[]): Role | null =>
  roles.reduce<Role | null>((best, r) => (best === null || ROLES.indexOf(r) > ROLES.indexOf(best) ? r : best), null);

/** The role a user's groups give in an organisation (the highest of the mapped ones), or null. */
export function groupRole(mappings: GroupMapping[], groups: readonly string[]): Role | null {
  const held = new Set(groups);
  return highestRole(mappings.filter((m) => held.has(m.name)).map((m) => m.role));
}

/** The e-mail a group-derived membership is keyed by when the user's token carries none. */
const groupEmail = (user: { id: number; email: string | null }) => user.email ?? `user-${user.id}@groups.invalid`;

function toUser(r: Row): User {
  return {
    id: num(r.id), issuer: String(r.issuer), subject: String(r.subject), email: strOrNull(r.email), name: strOrNull(r.name), created_at: num(r.created_at),
  };
}

function toMembership(r: Row): Membership {
  return {
    id: num(r.id), org_id: num(r.org_id), email: String(r.email), user_id: numOrNull(r.user_id), role: r.role as Role, created_at: num(r.created_at),
    source: r.source === 'group' ? 'group' : 'invite',
  };
}

/** Organisations, users and memberships (the metadata store's tenancy tables). */
export class OrgStore {
  constructor(private db: Db) {}

  async createOrg(input: { name: string; monthlyEventQuota?: number | null; managedBy?: string | null; namespaces?: string[] | null }, trx: Db = this.db): Promise<Organization> {
    const row = {
      name: input.name, monthly_event_quota: input.monthlyEventQuota ?? null, created_at: nowMs(), managed_by: input.managedBy ?? null, members_managed_by: null,
      namespaces: input.namespaces ? JSON.stringify(input.namespaces) : null,
    };
    const [{ id }] = await trx('organizations').insert(row).returning('id');
    return toOrganization({ id, ...row });
  }

  /** Every organisation; with `managedBy`, those that resource owns. */
  async listOrgs(opts: { managedBy?: string } = {}): Promise<Organization[]> {
    const q = this.db('organizations').select('*').orderBy('id');
    if (opts.managedBy !== undefined) q.where({ managed_by: opts.managedBy });
    return ((await q) as Row[]).map(toOrganization);
  }

  /** Sets who manages the organisation and/or its membership list (the fields given). */
  async setManagement(id: number, management: Management, trx: Db = this.db): Promise<void> {
    if (Object.keys(management).length) await trx('organizations').where({ id }).update(management);
  }

  /**
   * Deletes an organisation (locked by the caller's transaction) with its memberships, group
   * mappings and machine tokens; `409 organization has projects` while it still has any (their
   * events would go too).
   */
  async deleteOrg(trx: Db, id: number): Promise<void> {
    const [{ n }] = await trx('projects').where({ org_id: id }).count({ n: '*' });
    if (Number(n) > 0) throw conflict('organization has projects', { message: 'delete or move its projects first' });
    for (const table of ['memberships', 'org_groups', 'machine_tokens', 'usage_org_monthly']) await trx(table).where({ org_id: id }).delete();
    await trx('users').where({ current_org_id: id }).update({ current_org_id: null });
    await trx('organizations').where({ id }).delete();
  }

  /**
   * The organisation's row, locked until the transaction ends (PostgreSQL `FOR UPDATE`; SQLite runs
   * one writer at a time): membership rules that count then write (last owner, managed lists) hold it.
   */
  async lockOrg(trx: Db, id: number): Promise<Organization | undefined> {
    const q = trx('organizations').where({ id }).first();
    const row: Row | undefined = await (isPostgres(trx) ? q.forUpdate() : q);
    return row && toOrganization(row);
  }

  async getOrg(id: number, trx: Db = this.db): Promise<Organization | undefined> {
    const row: Row | undefined = await trx('organizations').where({ id }).first();
    return row && toOrganization(row);
  }

  async updateOrg(id: number, patch: { name?: string; monthlyEventQuota?: number | null; namespaces?: string[] | null }, trx: Db = this.db): Promise<Organization | undefined> {
    const update: Record<string, unknown> = {};
    if (patch.name !== undefined) update.name = patch.name;
    if (patch.monthlyEventQuota !== undefined) update.monthly_event_quota = patch.monthlyEventQuota;
    if (patch.namespaces !== undefined) update.namespaces = patch.namespaces === null ? null : JSON.stringify(patch.namespaces);
    if (Object.keys(update).length) await trx('organizations').where({ id }).update(update);
    const row: Row | undefined = await trx('organizations').where({ id }).first();
    return row && toOrganization(row);
  }

  /**
   * Invites an email (or changes the role of an existing membership of that email). One upsert on
   * the (org, email) unique index: two invitations of one email at once both land on one row
   * (a read-then-insert let the second hit the index, a 500).
   */
  async upsertMembership(orgId: number, email: string, role: Role, trx: Db = this.db): Promise<Membership> {
    // Bound to a user by the first verified ID token carrying this email (see userFromToken).
    const row = { org_id: orgId, email: normEmail(email), user_id: null, role, created_at: nowMs(), source: 'invite' };
    // An invitation of an email a group gave a membership makes it an invited one.
    const [stored] = await trx('memberships').insert(row).onConflict(['org_id', 'email']).merge(['role', 'source']).returning('*');
    return toMembership(stored as Row);
  }

  /**
   * Replaces the invited membership list (the resource's `members`) in the caller's transaction,
   * which holds the organisation's lock: invites new emails, re-roles listed ones, removes unlisted
   * invited ones; group-derived memberships stay. The list is then owned by `resource`. Answers
   * what changed, each membership before and after (null: absent).
   */
  async replaceInvited(trx: Db, orgId: number, members: Array<{ email: string; role: Role }>, resource: string):
    Promise<Array<{ before: Membership | null; after: Membership | null }>> {
    const changes: Array<{ before: Membership | null; after: Membership | null }> = [];
    const wanted = new Map(members.map((m) => [normEmail(m.email), m.role]));
    const current = ((await trx('memberships').where({ org_id: orgId, source: 'invite' }).select('*')) as Row[]).map(toMembership);
    for (const m of current) {
      if (wanted.has(m.email)) continue;
      await trx('memberships').where({ id: m.id }).delete();
      changes.push({ before: m, after: null });
    }
    for (const [email, role] of wanted) {
      const before = (await this.membershipOfEmail(orgId, email, trx)) ?? null;
      if (before?.role === role && before.source === 'invite') continue;
      changes.push({ before, after: await this.upsertMembership(orgId, email, role, trx) });
    }
    await trx('organizations').where({ id: orgId }).update({ members_managed_by: resource });
    return changes;
  }

  async groups(orgId: number, trx: Db = this.db): Promise<GroupMapping[]> {
    const rows: Row[] = await trx('org_groups').where({ org_id: orgId }).orderBy('name').select('name', 'role');
    return rows.map((r) => ({ name: String(r.name), role: r.role as Role }));
  }

  /**
   * Replaces the organisation's group mapping (in the caller's transaction, which holds the
   * organisation's lock), then brings the group-derived memberships of users already signed in in
   * line with the groups they were last seen with.
   */
  async replaceGroups(trx: Db, orgId: number, groups: GroupMapping[]): Promise<void> {
    await trx('org_groups').where({ org_id: orgId }).delete();
    if (groups.length) await trx('org_groups').insert(groups.map((g) => ({ org_id: orgId, name: g.name, role: g.role })));
    const held: Row[] = await trx('memberships as m').join('users as u', 'u.id', 'm.user_id')
      .where({ 'm.org_id': orgId, 'm.source': 'group' }).select('m.id', 'm.role', 'u.groups');
    for (const r of held) {
      const role = groupRole(groups, parseGroups(r.groups));
      if (role === null) await trx('memberships').where({ id: r.id }).delete();
      else if (role !== r.role) await trx('memberships').where({ id: r.id }).update({ role });
    }
  }

  async listMemberships(orgId: number, trx: Db = this.db): Promise<Array<Membership & { name: string | null }>> {
    const rows: Row[] = await trx('memberships as m')
      .leftJoin('users as u', 'u.id', 'm.user_id')
      .where('m.org_id', orgId)
      .select('m.*', 'u.name')
      .orderBy('m.id');
    return rows.map((r) => ({ ...toMembership(r), name: strOrNull(r.name) }));
  }

  async membershipOfUser(orgId: number, userId: number, trx: Db = this.db): Promise<Membership | undefined> {
    const row: Row | undefined = await trx('memberships').where({ org_id: orgId, user_id: userId }).first();
    return row && toMembership(row);
  }

  async membershipOfEmail(orgId: number, email: string, trx: Db = this.db): Promise<Membership | undefined> {
    const row: Row | undefined = await trx('memberships').where({ org_id: orgId, email: normEmail(email) }).first();
    return row && toMembership(row);
  }

  async setRole(membershipId: number, role: Role, trx: Db = this.db): Promise<void> {
    await trx('memberships').where({ id: membershipId }).update({ role });
  }

  async deleteMembership(membershipId: number, trx: Db = this.db): Promise<void> {
    await trx('memberships').where({ id: membershipId }).delete();
  }

  /** Owners who have signed in (open owner invitations do not count: they may never be taken up). */
  async countOwners(orgId: number, trx: Db = this.db): Promise<number> {
    const [{ n }] = await trx('memberships').where({ org_id: orgId, role: 'owner' }).whereNotNull('user_id').count({ n: '*' });
    return Number(n);
  }

  /** The user's memberships with their organisations' names, oldest first. */
  async membershipsOfUser(userId: number): Promise<Array<{ org_id: number; org_name: string; role: Role; source: MembershipSource }>> {
    const rows: Row[] = await this.db('memberships as m').join('organizations as o', 'o.id', 'm.org_id')
      .where('m.user_id', userId).orderBy('m.id').select('m.org_id', 'o.name as org_name', 'm.role', 'm.source');
    return rows.map((r) => ({ org_id: num(r.org_id), org_name: String(r.org_name), role: r.role as Role, source: r.source === 'group' ? 'group' : 'invite' }));
  }

  /** Persists the organisation a user works in (null: the oldest membership). */
  async setCurrentOrg(userId: number, orgId: number | null): Promise<void> {
    await this.db('users').where({ id: userId }).update({ current_org_id: orgId });
  }

  /**
   * Finds or creates the user of an ID token's (iss, sub), refreshing email and name, and binds
   * any open invitation for a verified email. Returns the user and their memberships, oldest first.
   */
  async userFromToken(claims: { issuer: string; subject: string; email?: string; emailVerified: boolean; name?: string; groups?: string[] }) {
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
      const current = await trx('users').where({ id: user!.id }).first('current_org_id', 'groups');
      // A token without the claim holds no groups; a user never seen with any has nothing to sync.
      const groups = claims.groups ?? [];
      if (groups.length > 0 || (current?.groups ?? '[]') !== '[]') await this.syncGroups(trx, { id: user!.id, email }, groups, current?.groups);
      const memberships = ((await trx('memberships').where({ user_id: user!.id }).orderBy('id')) as Row[]).map(toMembership);
      return { user: user!, memberships, currentOrgId: numOrNull(current?.current_org_id) };
    });
  }

  /**
   * The group-derived memberships of a user from the groups claim of this sign-in: a mapped group
   * gives its role (the highest of the matches) where the user has no invited membership; one whose
   * group or mapping is gone is removed. The claim is kept for later mapping changes. Writes only
   * when something changed (a sign-in is every request with an ID token).
   */
  private async syncGroups(trx: Db, user: { id: number; email: string | null }, groups: string[], lastSeen: unknown): Promise<void> {
    const sorted = [...new Set(groups)].sort();
    const text = JSON.stringify(sorted);
    const mapped: Row[] = sorted.length ? await trx('org_groups').whereIn('name', sorted).select('org_id', 'name', 'role') : [];
    const held: Row[] = await trx('memberships').where({ user_id: user.id }).select('id', 'org_id', 'role', 'source');
    const want = new Map<number, Role>();
    for (const m of mapped) {
      const org = num(m.org_id);
      const best = highestRole([...(want.has(org) ? [want.get(org)!] : []), m.role as Role]);
      want.set(org, best!);
    }
    const byOrg = new Map(held.map((h) => [num(h.org_id), h]));
    for (const h of held) {
      if (h.source !== 'group') continue;
      const role = want.get(num(h.org_id));
      if (role === undefined) await trx('memberships').where({ id: h.id }).delete();
      else if (role !== h.role) await trx('memberships').where({ id: h.id }).update({ role });
    }
    for (const [orgId, role] of want) {
      if (byOrg.has(orgId)) continue;
      await trx('memberships').insert({ org_id: orgId, email: groupEmail(user), user_id: user.id, role, created_at: nowMs(), source: 'group' })
        .onConflict(['org_id', 'email']).ignore();
    }
    if (lastSeen !== text) await trx('users').where({ id: user.id }).update({ groups: text });
  }

  async getUser(id: number): Promise<User | undefined> {
    // (current_org_id and groups are read where needed: userFromToken, the account routes)
    const row: Row | undefined = await this.db('users').where({ id }).first();
    return row && toUser(row);
  }
}

/** The groups claim kept in `users.groups` (JSON text), or none. */
function parseGroups(text: unknown): string[] {
  if (typeof text !== 'string') return [];
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? v.filter((g): g is string => typeof g === 'string') : [];
  } catch {
    return [];
  }
}
