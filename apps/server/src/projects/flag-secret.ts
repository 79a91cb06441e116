import { randomUUID } from 'node:crypto';
import type { Db } from '../ports/metadata/knex.js';
import { isUniqueViolation, lockForUpdate } from '../ports/metadata/knex.js';
import { conflict, notFound } from '../http/errors.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf, requireRole } from '../auth/context.js';
import { assertOwnedBy } from '../auth/managed.js';
import { isLettingGo, type TenancyBoundary } from '../auth/boundary.js';
import { sha256Hex } from '../auth/credentials.js';
import { loadProjectInScope } from '../auth/project-scope.js';
import { actorOf, type Actor } from '../audit/actor.js';
import type { AuditStore } from '../audit/store.js';
import { FlagSecretResponse, SetFlagSecretBody } from '../flags/schema.js';
import { IdParams } from './schema.js';
import type { ProjectStore } from './store.js';

/** The flag-secret columns of a `projects` row. */
interface SecretRow {
  id: number | string;
  org_id: number | string | null;
  flag_secret_hash: string | null;
  flag_secret_managed_by: string | null;
}

/** What the audit log shows of a flag secret: whether there is one and who owns it, never the value or its hash. */
const snapshot = (hash: string | null, managedBy: string | null) => ({ present: hash !== null, managed_by: managedBy });

/**
 * A project's flag secret (stored as its SHA-256): minted or rotated (owner), set to a given value
 * (superadmin or operator key), or revoked, each in one transaction that locks the project row,
 * checks the secret's owner and the boundary between teams, and records the change (`flag_secret.
 * rotated|set|revoked`). A secret set through a resource is managed by it until that resource
 * revokes it.
 */
export class FlagSecretService {
  constructor(private readonly db: Db, private readonly audit: AuditStore, private readonly boundary: TenancyBoundary) {}

  /** Locks the project, checks the owner and the boundary, writes `hash` and the new owner. */
  private async write(actor: Actor, projectId: number, action: string, next: (managedBy: string | null) => { hash: string | null; managedBy: string | null }): Promise<void> {
    try {
      await this.db.transaction(async (trx) => {
        const row = await lockForUpdate(trx, trx<SecretRow>('projects').where({ id: projectId }).first('id', 'org_id', 'flag_secret_hash', 'flag_secret_managed_by'));
        if (!row) throw notFound('project');
        const current = row.flag_secret_managed_by ?? null;
        assertOwnedBy(current, actor.resource);
        const orgId = row.org_id === null ? null : Number(row.org_id);
        const { hash, managedBy } = next(current);
        // The resource that owns the secret may always revoke it (isLettingGo); other writes act within the boundary.
        if (!(hash === null && managedBy === null && isLettingGo(actor, current))) await this.boundary.check(trx, actor, orgId);
        // Revoking no secret changes nothing and has no row.
        if (hash === null && row.flag_secret_hash === null && managedBy === current) return;
        await trx('projects').where({ id: projectId }).update({ flag_secret_hash: hash, flag_secret_managed_by: managedBy });
        await this.audit.record(trx, actor, {
          organizationId: orgId, projectId, action, target: { kind: 'flag_secret', id: projectId },
          before: snapshot(row.flag_secret_hash, current), after: snapshot(hash, managedBy),
        });
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict('flag secret in use', { message: 'another project has this flag secret' });
      throw err;
    }
  }

  /** A new random secret (returned once); the owner, if any, keeps it. */
  async rotate(actor: Actor, projectId: number): Promise<string> {
    const secret = randomUUID();
    await this.write(actor, projectId, 'flag_secret.rotated', (managedBy) => ({ hash: sha256Hex(secret), managedBy }));
    return secret;
  }

  /** Sets the secret to `secret`; with a resource, that resource owns it from now on. */
  async set(actor: Actor, projectId: number, secret: string): Promise<void> {
    await this.write(actor, projectId, 'flag_secret.set', (managedBy) => ({ hash: sha256Hex(secret), managedBy: actor.resource ?? managedBy }));
  }

  /** Revokes the secret and releases it (idempotent). */
  async revoke(actor: Actor, projectId: number): Promise<void> {
    await this.write(actor, projectId, 'flag_secret.revoked', () => ({ hash: null, managedBy: null }));
  }
}

/** `/api/projects/{id}/flag-secret`: the secret the SDK's local evaluation and `/flags/definitions` authenticate with. */
export function flagSecretRoutes(deps: { projects: ProjectStore; flagSecrets: FlagSecretService }): RouteSpec[] {
  const { flagSecrets } = deps;
  /** A project whose flag secret the caller may change (owner; another organisation's: 404). */
  const ownedProject = async (ctx: Parameters<typeof authOf>[0], id: number) => {
    const project = await loadProjectInScope(deps.projects, authOf(ctx), id);
    requireRole(ctx, 'owner');
    return project.id;
  };
  return [
    route({
      method: 'post', path: '/api/projects/{id}/flag-secret', tag: 'Flags', auth: 'api', params: IdParams, response: FlagSecretResponse,
      summary: 'Mints or rotates the project flag secret (owner); returned once, stored as a SHA-256 hash; 409 when managed by a resource',
      handler: async ({ ctx, params }) => ({ secret: await flagSecrets.rotate(actorOf(ctx), await ownedProject(ctx, params.id)) }),
    }),
    route({
      method: 'put', path: '/api/projects/{id}/flag-secret', tag: 'Flags', auth: 'admin', params: IdParams, body: SetFlagSecretBody,
      summary: 'Sets the project flag secret to the given uuid (superadmin key); with X-Tally-Resource that resource owns it',
      handler: async ({ ctx, params, body }) => {
        await flagSecrets.set(actorOf(ctx), await ownedProject(ctx, params.id), body.secret);
        return { ok: true };
      },
    }),
    route({
      method: 'delete', path: '/api/projects/{id}/flag-secret', tag: 'Flags', auth: 'api', params: IdParams,
      summary: 'Revokes the project flag secret (owner); idempotent; the owning resource revokes and releases it',
      handler: async ({ ctx, params }) => {
        await flagSecrets.revoke(actorOf(ctx), await ownedProject(ctx, params.id));
        return { ok: true };
      },
    }),
  ];
}
