import { randomUUID } from 'node:crypto';
import type { Db } from '../ports/metadata/knex.js';
import { lockForUpdate } from '../ports/metadata/knex.js';
import { conflict, notFound } from '../http/errors.js';
import { assertOwnedBy } from '../auth/managed.js';
import { isUniqueViolation } from './store.js';
import { sha256Hex } from '../auth/credentials.js';

/** The flag-secret columns of a `projects` row. */
interface SecretRow {
  id: number | string;
  flag_secret_managed_by: string | null;
}

/**
 * A project's flag secret (stored as its SHA-256): minted, set to a given value (superadmin), or
 * revoked, each in one transaction that locks the project row and checks the secret's owner. A
 * secret set through a resource is managed by it until that resource revokes it.
 */
export class FlagSecrets {
  constructor(private db: Db) {}

  /** Locks the project, checks the owner, writes `hash` and the new owner. */
  private async write(projectId: number, resource: string | null, next: (managedBy: string | null) => { hash: string | null; managedBy: string | null }): Promise<void> {
    try {
      await this.db.transaction(async (trx) => {
        const row = await lockForUpdate(trx, trx<SecretRow>('projects').where({ id: projectId }).first('id', 'flag_secret_managed_by'));
        if (!row) throw notFound('project');
        const current = row.flag_secret_managed_by ?? null;
        assertOwnedBy(current, resource);
        const { hash, managedBy } = next(current);
        await trx('projects').where({ id: projectId }).update({ flag_secret_hash: hash, flag_secret_managed_by: managedBy });
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict('flag secret in use', { message: 'another project has this flag secret' });
      throw err;
    }
  }

  /** A new random secret (returned once); the owner, if any, keeps it. */
  async rotate(projectId: number, resource: string | null): Promise<string> {
    const secret = randomUUID();
    await this.write(projectId, resource, (managedBy) => ({ hash: sha256Hex(secret), managedBy }));
    return secret;
  }

  /** Sets the secret to `secret`; with a resource, that resource owns it from now on. */
  async set(projectId: number, secret: string, resource: string | null): Promise<void> {
    await this.write(projectId, resource, (managedBy) => ({ hash: sha256Hex(secret), managedBy: resource ?? managedBy }));
  }

  /** Revokes the secret and releases it (idempotent). */
  async revoke(projectId: number, resource: string | null): Promise<void> {
    await this.write(projectId, resource, () => ({ hash: null, managedBy: null }));
  }
}
