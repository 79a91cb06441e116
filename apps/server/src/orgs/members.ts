import type { Db } from '../ports/metadata/knex.js';
import { badRequest, conflict, forbidden, notFound } from '../http/errors.js';
import type { AuthContext, OrgActor } from '../auth/context.js';
import { assertOwnedBy } from '../auth/managed.js';
import type { Role } from '../auth/roles.js';
import type { Membership, OrgStore } from './store.js';

/** Member management acts inside one organisation: the superadmin and the operator have none and use /admin instead. */
export function orgActor(auth: AuthContext): OrgActor {
  if (auth.kind === 'superadmin' || auth.kind === 'operator') {
    throw badRequest('no organization context', { resolution: 'the superadmin manages members through /admin/orgs/{id}/members' });
  }
  if (auth.kind === 'user' && (auth.orgId === null || auth.role === null)) throw badRequest('no organization context');
  return auth as OrgActor;
}

/** Only an owner may grant, change or remove the owner role (a person or a token acting for one). */
export function checkOwnerChange(actor: OrgActor | null, from: Role | null, to: Role | null) {
  if (actor && (from === 'owner' || to === 'owner') && actor.role !== 'owner') throw forbidden();
}

/**
 * Membership writes of people (and the superadmin's invitations), each one transaction holding the
 * organisation's row lock (PostgreSQL `SELECT … FOR UPDATE`; SQLite runs one writer at a time), so
 * the rules that count and then write cannot race: the last signed-in owner stays owner (two
 * owners demoting each other at once: one wins, the other gets 409 `last owner`), and a list a
 * resource owns (`members_managed_by`) refuses hand edits with 409 `managed by resource`.
 * `actor` null: the superadmin (no owner-role check); `resource`: the X-Tally-Resource of the call.
 */
export class MembershipService {
  constructor(private db: Db, private orgs: OrgStore) {}

  /** Invites an email with a role, or changes the role of that email's membership. */
  invite(orgId: number, email: string, role: Role, actor: OrgActor | null, resource: string | null = null): Promise<Membership> {
    return this.locked(orgId, resource, async (trx) => {
      const existing = await this.orgs.membershipOfEmail(orgId, email, trx);
      checkOwnerChange(actor, existing?.role ?? null, role);
      await this.keepAnOwner(trx, orgId, existing, role);
      return this.orgs.upsertMembership(orgId, email, role, trx);
    });
  }

  /** Changes a signed-in member's role. */
  changeRole(orgId: number, userId: number, role: Role, actor: OrgActor | null): Promise<Membership> {
    return this.locked(orgId, null, async (trx) => {
      const m = await this.orgs.membershipOfUser(orgId, userId, trx);
      if (!m) throw notFound('member');
      checkOwnerChange(actor, m.role, role);
      await this.keepAnOwner(trx, orgId, m, role);
      await this.orgs.setRole(m.id, role, trx);
      return { ...m, role };
    });
  }

  /** Removes a signed-in member. */
  remove(orgId: number, userId: number, actor: OrgActor | null): Promise<void> {
    return this.locked(orgId, null, async (trx) => {
      const m = await this.orgs.membershipOfUser(orgId, userId, trx);
      if (!m) throw notFound('member');
      checkOwnerChange(actor, m.role, null);
      await this.keepAnOwner(trx, orgId, m, null);
      await this.orgs.deleteMembership(m.id, trx);
    });
  }

  /** `409 last owner` when `m` is the organisation's last signed-in owner and would stop being one. */
  private async keepAnOwner(trx: Db, orgId: number, m: Membership | undefined, to: Role | null): Promise<void> {
    if (!m || m.role !== 'owner' || to === 'owner' || m.user_id === null) return;
    if ((await this.orgs.countOwners(orgId, trx)) <= 1) throw conflict('last owner');
  }

  private locked<T>(orgId: number, resource: string | null, write: (trx: Db) => Promise<T>): Promise<T> {
    return this.db.transaction(async (trx) => {
      const org = await this.orgs.lockOrg(trx, orgId);
      if (!org) throw notFound('organization');
      assertOwnedBy(org.members_managed_by, resource);
      return write(trx);
    });
  }
}
