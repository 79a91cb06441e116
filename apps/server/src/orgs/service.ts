import { isDeepStrictEqual } from 'node:util';
import type { Db } from '../ports/metadata/knex.js';
import { conflict, forbidden, notFound } from '../http/errors.js';
import type { OrgActor } from '../auth/context.js';
import { assertOwnedBy } from '../auth/managed.js';
import { isOrganizationResource, operatorResource, type TenancyBoundary } from '../auth/boundary.js';
import type { Role } from '../auth/roles.js';
import type { Actor } from '../audit/actor.js';
import type { AuditStore } from '../audit/store.js';
import { publicProject, type Project, type ProjectStore } from '../projects/store.js';
import type { GroupMapping, Management, Membership, Organization, OrgStore } from './store.js';
import { checkOwnerChange } from './members.js';

/** What `POST /admin/orgs` and `PATCH /admin/orgs/{id}` set. */
export interface OrgFields {
  name?: string;
  monthlyEventQuota?: number | null;
  namespaces?: string[] | null;
}

/**
 * Organisations, their memberships and group mappings: every write in one transaction that holds
 * the organisation's row lock (PostgreSQL `SELECT … FOR UPDATE`; SQLite runs one writer at a time),
 * checks who may make it (the owning resource, the boundary between teams, the owner role) and
 * records it in the audit log. The rules that count then write cannot race: the last signed-in
 * owner stays owner (two owners demoting each other at once: one wins, the other gets 409
 * `last owner`), and a list a resource owns (`members_managed_by`) refuses hand edits with 409
 * `managed by resource`.
 */
export class OrgService {
  constructor(
    private readonly db: Db,
    private readonly orgs: OrgStore,
    private readonly projects: ProjectStore,
    private readonly audit: AuditStore,
    private readonly boundary: TenancyBoundary,
  ) {}

  /** Creates an organisation, managed by the actor's resource when it has one. */
  create(actor: Actor, fields: OrgFields & { name: string }): Promise<Organization> {
    const resource = operatorResource(actor);
    // The operator key brings organisations into being only for an Organization resource.
    if (actor.kind === 'operator' && !isOrganizationResource(resource)) {
      throw forbidden('NotManaged', 'the operator key creates organisations only for an Organization resource (X-Tally-Resource: Organization/<name>)');
    }
    return this.db.transaction(async (trx) => {
      const org = await this.orgs.createOrg({ ...fields, managedBy: resource }, trx);
      await this.record(trx, actor, org.id, 'organization.created', null, org);
      return org;
    });
  }

  /**
   * Onboarding of a signed-in user without an organisation: the organisation, the user as its
   * owner and a first project, in one transaction.
   */
  onboard(actor: Actor & { kind: 'user'; id: number }, name: string, email: string): Promise<{ organization: Organization; project: Project }> {
    return this.db.transaction(async (trx) => {
      const organization = await this.orgs.createOrg({ name }, trx);
      const invited = await this.orgs.upsertMembership(organization.id, email, 'owner', trx);
      await trx('memberships').where({ id: invited.id }).update({ user_id: actor.id });
      const project = await this.projects.create({ orgId: organization.id, name: 'Default project' }, trx);
      await this.record(trx, actor, organization.id, 'organization.created', null, organization);
      await this.recordMembership(trx, actor, null, { ...invited, user_id: actor.id });
      await this.audit.record(trx, actor, {
        organizationId: organization.id, projectId: project.id, action: 'project.created', target: { kind: 'project', id: project.id }, after: publicProject(project),
      });
      return { organization, project };
    });
  }

  /** Renames, changes the quota or the recorded namespaces; a managed organisation only through its resource (409). */
  update(actor: Actor, id: number, fields: OrgFields): Promise<Organization> {
    return this.writable(actor, id, async (trx, before) => {
      const after = (await this.orgs.updateOrg(id, fields, trx))!;
      await this.record(trx, actor, id, 'organization.updated', before, after);
      return after;
    });
  }

  /** Deletes an organisation with its memberships, group mappings and machine tokens; 409 while it has projects. */
  delete(actor: Actor, id: number): Promise<void> {
    return this.writable(actor, id, async (trx, before) => {
      await this.orgs.deleteOrg(trx, id);
      // The row keeps the organisation's id so its admins' and the superadmin's filters still find it.
      await this.record(trx, actor, id, 'organization.deleted', before, null);
    });
  }

  /** The actor's resource takes over an organisation (409 when another manages it). */
  adopt(actor: Actor, id: number, by: string): Promise<Organization> {
    // The operator key adopts only for an Organization (the way an organisation made by hand joins the boundary).
    if (actor.kind === 'operator' && !isOrganizationResource(by)) {
      throw forbidden('NotManaged', 'the operator key adopts organisations only for an Organization resource (X-Tally-Resource: Organization/<name>)');
    }
    return this.changeManagement(actor, id, 'managed_by', 'organization.adopted', () => ({ managed_by: by }), by);
  }

  /** The owning resource lets go of its organisation (and of its membership list); idempotent. */
  release(actor: Actor, id: number, by: string): Promise<Organization> {
    return this.changeManagement(actor, id, 'managed_by', 'organization.released', (org) => (
      org.members_managed_by === by ? { managed_by: null, members_managed_by: null } : { managed_by: null }), by);
  }

  /** The resource that owns the membership list gives it back to people; idempotent. */
  releaseMembers(actor: Actor, id: number, by: string): Promise<Organization> {
    return this.changeManagement(actor, id, 'members_managed_by', 'organization.updated', () => ({ members_managed_by: null }), by);
  }

  /**
   * Adopt, release and members-management: `by` must own `owned` (or it is unset), then `next` says
   * who manages what; only the fields that change are written, and only a change has an audit row.
   */
  private changeManagement(
    actor: Actor, id: number, owned: keyof Management, action: string, next: (org: Organization) => Management, by: string,
  ): Promise<Organization> {
    return this.locked(id, async (trx, org) => {
      assertOwnedBy(org[owned], by);
      const changed = Object.fromEntries(Object.entries(next(org)).filter(([k, v]) => org[k as keyof Management] !== v)) as Management;
      if (Object.keys(changed).length === 0) return org;
      await this.orgs.setManagement(org.id, changed, trx);
      const after = { ...org, ...changed };
      await this.record(trx, actor, id, action, org, after);
      return after;
    });
  }

  /** Invites an email with a role, or changes the role of that email's membership. `by`: the person or token acting, null for the installation keys. */
  invite(actor: Actor, orgId: number, email: string, role: Role, by: OrgActor | null): Promise<Membership> {
    return this.membersWrite(actor, orgId, async (trx) => {
      const existing = await this.orgs.membershipOfEmail(orgId, email, trx);
      checkOwnerChange(by, existing?.role ?? null, role);
      await this.keepAnOwner(trx, orgId, existing, role);
      const after = await this.orgs.upsertMembership(orgId, email, role, trx);
      await this.recordMembership(trx, actor, existing ?? null, after);
      return after;
    });
  }

  /** Changes a signed-in member's role. */
  changeRole(actor: Actor, orgId: number, userId: number, role: Role, by: OrgActor): Promise<Membership> {
    return this.membersWrite(actor, orgId, async (trx) => {
      const m = await this.orgs.membershipOfUser(orgId, userId, trx);
      if (!m) throw notFound('member');
      checkOwnerChange(by, m.role, role);
      await this.keepAnOwner(trx, orgId, m, role);
      await this.orgs.setRole(m.id, role, trx);
      const after = { ...m, role };
      await this.recordMembership(trx, actor, m, after);
      return after;
    });
  }

  /** Removes a signed-in member. */
  remove(actor: Actor, orgId: number, userId: number, by: OrgActor): Promise<void> {
    return this.membersWrite(actor, orgId, async (trx) => {
      const m = await this.orgs.membershipOfUser(orgId, userId, trx);
      if (!m) throw notFound('member');
      checkOwnerChange(by, m.role, null);
      await this.keepAnOwner(trx, orgId, m, null);
      await this.orgs.deleteMembership(m.id, trx);
      await this.recordMembership(trx, actor, m, null);
    });
  }

  /** The resource `by` replaces the invited membership list and owns it from then on (one row per membership that changed). */
  replaceMembers(actor: Actor, orgId: number, members: Array<{ email: string; role: Role }>, by: string): Promise<void> {
    return this.locked(orgId, async (trx, org) => {
      assertOwnedBy(org.members_managed_by, by);
      await this.boundary.check(trx, actor, orgId);
      for (const { before, after } of await this.orgs.replaceInvited(trx, orgId, members, by)) await this.recordMembership(trx, actor, before, after);
      if (org.members_managed_by !== by) await this.record(trx, actor, orgId, 'organization.updated', org, { ...org, members_managed_by: by });
    });
  }

  /** Replaces the group mapping; group-derived memberships follow at once. */
  replaceGroups(actor: Actor, orgId: number, groups: GroupMapping[]): Promise<void> {
    return this.writable(actor, orgId, async (trx) => {
      const before = await this.orgs.groups(orgId, trx);
      await this.orgs.replaceGroups(trx, orgId, groups);
      const after = await this.orgs.groups(orgId, trx);
      if (isDeepStrictEqual(before, after)) return;
      await this.audit.record(trx, actor, {
        organizationId: orgId, action: 'group_mapping.replaced', target: { kind: 'group_mapping', id: null }, before: { groups: before }, after: { groups: after },
      });
    });
  }

  /** `409 last owner` when `m` is the organisation's last signed-in owner and would stop being one. */
  private async keepAnOwner(trx: Db, orgId: number, m: Membership | undefined, to: Role | null): Promise<void> {
    if (!m || m.role !== 'owner' || to === 'owner' || m.user_id === null) return;
    if ((await this.orgs.countOwners(orgId, trx)) <= 1) throw conflict('last owner');
  }

  /** The organisation locked for `write` (404 when absent). */
  private locked<T>(id: number, write: (trx: Db, org: Organization) => Promise<T>): Promise<T> {
    return this.db.transaction(async (trx) => {
      const org = await this.orgs.lockOrg(trx, id);
      if (!org) throw notFound('organization');
      return write(trx, org);
    });
  }

  /** An organisation the actor may write: unmanaged or managed by the actor's resource (409), within the boundary (403). */
  private writable<T>(actor: Actor, id: number, write: (trx: Db, org: Organization) => Promise<T>): Promise<T> {
    return this.locked(id, async (trx, org) => {
      assertOwnedBy(org.managed_by, actor.resource);
      await this.boundary.check(trx, actor, id);
      return write(trx, org);
    });
  }

  /** A membership write: the list is not owned by another resource (409), within the boundary (403). */
  private membersWrite<T>(actor: Actor, orgId: number, write: (trx: Db) => Promise<T>): Promise<T> {
    return this.locked(orgId, async (trx, org) => {
      assertOwnedBy(org.members_managed_by, actor.resource);
      await this.boundary.check(trx, actor, orgId);
      return write(trx);
    });
  }

  /** An organisation's row; a write that changes nothing has none. */
  private async record(trx: Db, actor: Actor, orgId: number, action: string, before: Organization | null, after: Organization | null): Promise<void> {
    if (before && after && isDeepStrictEqual(before, after)) return;
    await this.audit.record(trx, actor, { organizationId: orgId, action, target: { kind: 'organization', id: orgId }, before, after });
  }

  /** membership.invited (new), .role_changed (same email, other role or an invitation of a group-derived one), .removed. */
  private async recordMembership(trx: Db, actor: Actor, before: Membership | null, after: Membership | null): Promise<void> {
    if (before && after && before.role === after.role && before.source === after.source) return;
    const action = before === null ? 'membership.invited' : after === null ? 'membership.removed' : 'membership.role_changed';
    const m = (after ?? before)!;
    await this.audit.record(trx, actor, { organizationId: m.org_id, action, target: { kind: 'membership', id: m.id }, before, after });
  }
}
