import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../ports/metadata/knex.js';
import { lockForUpdate, nowMs } from '../ports/metadata/knex.js';
import { ROLES, type Role } from '../auth/roles.js';

/** A machine-access token (service account) of an organisation. The secret itself is never stored. */
export interface MachineToken {
  id: number;
  orgId: number;
  name: string;
  role: Role;
  createdBy: number | null;
  createdAt: number;
  lastUsedAt: number | null;
  /** The ApiToken resource (`ApiToken/<namespace>/<name>`) that minted it, or null. */
  managedBy: string | null;
}

/** Prefix of every machine-access token: tells it apart from the superadmin key and ID tokens (JWTs). */
export const MACHINE_TOKEN_PREFIX = 'tly_';

/** last_used_at is written at most this often per token (one write per request would be a write per read). */
const LAST_USED_RESOLUTION_MS = 60_000;

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

interface MachineTokenRow {
  id: number | string;
  org_id: number | string;
  name: string;
  role: string;
  created_by: number | string | null;
  created_at: number | string;
  last_used_at: number | string | null;
  managed_by: string | null;
}

function toMachineToken(r: MachineTokenRow): MachineToken {
  if (!(ROLES as readonly string[]).includes(r.role)) throw new Error(`machine token ${r.id}: unknown role ${r.role}`);
  return {
    id: Number(r.id),
    orgId: Number(r.org_id),
    name: r.name,
    role: r.role as Role,
    createdBy: r.created_by === null ? null : Number(r.created_by),
    createdAt: Number(r.created_at),
    lastUsedAt: r.last_used_at === null ? null : Number(r.last_used_at),
    managedBy: r.managed_by ?? null,
  };
}

const COLUMNS = ['id', 'org_id', 'name', 'role', 'created_by', 'created_at', 'last_used_at', 'managed_by'];

export class MachineTokenStore {
  constructor(private db: Db) {}

  /** Mints a token; the returned `token` is the only time its value exists outside the caller. */
  async create(input: { orgId: number; name: string; role: Role; createdBy: number | null; managedBy?: string | null }, trx: Db = this.db): Promise<MachineToken & { token: string }> {
    const token = MACHINE_TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const row = {
      org_id: input.orgId, name: input.name, role: input.role, token_hash: hashOf(token), created_by: input.createdBy, created_at: nowMs(), managed_by: input.managedBy ?? null,
    };
    const [{ id }] = await trx('machine_tokens').insert(row).returning('id');
    return { ...toMachineToken({ id, ...row, last_used_at: null }), token };
  }

  /** Live (not revoked) tokens of an organisation, oldest first; with `managedBy`, those that resource minted. */
  async list(orgId: number, opts: { managedBy?: string } = {}): Promise<MachineToken[]> {
    const q = this.db('machine_tokens').where({ org_id: orgId }).whereNull('revoked_at').orderBy('id').select(COLUMNS);
    if (opts.managedBy !== undefined) q.where({ managed_by: opts.managedBy });
    return ((await q) as MachineTokenRow[]).map(toMachineToken);
  }

  /** The live (not revoked) token `id` of the organisation, locked until the transaction ends. */
  async lockLive(trx: Db, orgId: number, id: number): Promise<MachineToken | undefined> {
    const row: MachineTokenRow | undefined = await lockForUpdate(trx, trx('machine_tokens').where({ id, org_id: orgId }).whereNull('revoked_at').first(COLUMNS));
    return row && toMachineToken(row);
  }

  async revoke(trx: Db, id: number): Promise<void> {
    await trx('machine_tokens').where({ id }).update({ revoked_at: nowMs() });
  }

  /** The live token with this value (and marks it used), or undefined. */
  async resolve(token: string): Promise<MachineToken | undefined> {
    if (!token.startsWith(MACHINE_TOKEN_PREFIX) || token.length > 200) return undefined;
    const row: MachineTokenRow | undefined = await this.db('machine_tokens').where({ token_hash: hashOf(token) }).whereNull('revoked_at').first(COLUMNS);
    if (!row) return undefined;
    const found = toMachineToken(row);
    const now = nowMs();
    if (found.lastUsedAt === null || now - found.lastUsedAt >= LAST_USED_RESOLUTION_MS) {
      await this.db('machine_tokens').where({ id: found.id }).update({ last_used_at: now });
      found.lastUsedAt = now;
    }
    return found;
  }
}
