import type { Db } from '../ports/metadata/knex.js';
import { notFound } from '../http/errors.js';
import { assertOwnedBy } from '../auth/managed.js';
import { isLettingGo, type TenancyBoundary } from '../auth/boundary.js';
import type { Role } from '../auth/roles.js';
import { creatorOf, type Actor } from '../audit/actor.js';
import type { AuditStore } from '../audit/store.js';
import type { OrgStore } from './store.js';
import type { MachineToken, MachineTokenStore } from './tokens.js';

/** A token as the API and the audit log show it: never its value. */
export const tokenSnapshot = (t: MachineToken) => ({
  id: t.id, name: t.name, role: t.role, created_at: t.createdAt, managed_by: t.managedBy,
});

/**
 * Machine-access tokens: minted and revoked in one transaction with their audit row, inside the
 * boundary between teams when a resource acts (an ApiToken's namespace must be listed by the
 * Organization that manages the organisation). A token a resource minted is revoked only through it.
 */
export class MachineTokenService {
  constructor(
    private readonly db: Db,
    private readonly tokens: MachineTokenStore,
    private readonly orgs: OrgStore,
    private readonly audit: AuditStore,
    private readonly boundary: TenancyBoundary,
  ) {}

  /** Mints a token of the organisation (managed by the actor's resource, if any); its value is returned once. */
  create(actor: Actor, orgId: number, input: { name: string; role: Role }): Promise<MachineToken & { token: string }> {
    return this.db.transaction(async (trx) => {
      await this.orgInBoundary(trx, actor, orgId);
      const created = await this.tokens.create({ orgId, ...input, createdBy: creatorOf(actor), managedBy: actor.resource }, trx);
      await this.audit.record(trx, actor, { organizationId: orgId, action: 'token.created', target: { kind: 'token', id: created.id }, after: tokenSnapshot(created) });
      return created;
    });
  }

  /** Revokes a live token at once: 404 absent (or another organisation's), 409 managed by another resource. */
  revoke(actor: Actor, orgId: number, id: number): Promise<void> {
    return this.db.transaction(async (trx) => {
      if (!(await this.orgs.getOrg(orgId, trx))) throw notFound('organization');
      const token = await this.tokens.lockLive(trx, orgId, id);
      // The ApiToken that minted it may always revoke it (isLettingGo); anyone else acts within the boundary.
      if (!token || !isLettingGo(actor, token.managedBy)) await this.boundary.check(trx, actor, orgId);
      if (!token) throw notFound('token');
      assertOwnedBy(token.managedBy, actor.resource);
      await this.tokens.revoke(trx, id);
      await this.audit.record(trx, actor, { organizationId: orgId, action: 'token.revoked', target: { kind: 'token', id }, before: tokenSnapshot(token) });
    });
  }

  /** 404 for an unknown organisation; 403 when the actor's resource may not act for it. */
  private async orgInBoundary(trx: Db, actor: Actor, orgId: number): Promise<void> {
    if (!(await this.orgs.getOrg(orgId, trx))) throw notFound('organization');
    await this.boundary.check(trx, actor, orgId);
  }
}
