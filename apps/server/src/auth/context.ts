import type { Context } from 'koa';
import { forbidden, noOrganization, unauthorized } from '../http/errors.js';
import { roleAtLeast, type Role } from './roles.js';

/**
 * Who is calling an `/api/*` or `/admin/*` route: the superadmin key, a user (ID token), or a
 * machine-access token acting with its role inside its organisation (`tokenId` names it in audit rows).
 */
export type AuthContext =
  | { kind: 'superadmin' }
  /** OPERATOR_KEY: the operator's own credential, accepted only on the routes auth/operator.ts lists. */
  | { kind: 'operator' }
  | { kind: 'user'; userId: number; email: string | null; orgId: number | null; role: Role | null }
  | MachineActor;

export type MachineActor = { kind: 'token'; tokenId: number; name: string; orgId: number; role: Role };

/** A user inside an organisation. */
export type OrgUser = { kind: 'user'; userId: number; email: string | null; orgId: number; role: Role };

/** A user or machine-access token inside an organisation (what most `/api/*` routes act for). */
export type OrgActor = OrgUser | MachineActor;

declare module 'koa' {
  interface DefaultState {
    auth?: AuthContext;
  }
}

export function authOf(ctx: Context): AuthContext {
  const auth = ctx.state.auth;
  if (!auth) throw unauthorized();
  return auth;
}

/** The installation-wide credentials (superadmin key, operator key): no organisation of their own. */
export type InstallationAuth = Extract<AuthContext, { kind: 'superadmin' | 'operator' }>;
export const isInstallation = (auth: AuthContext): auth is InstallationAuth => auth.kind === 'superadmin' || auth.kind === 'operator';

/** Superadmin (and the operator, on the routes it may call) passes; a user needs at least `min` in their organisation. */
export function requireRole(ctx: Context, min: Role): AuthContext {
  const auth = authOf(ctx);
  if (isInstallation(auth)) return auth;
  if (auth.orgId === null || auth.role === null) throw noOrganization();
  if (!roleAtLeast(auth.role, min)) throw forbidden();
  return auth;
}

/** The caller's organisation id, or null for the superadmin (who sees every organisation). */
export function orgScope(auth: AuthContext): number | null {
  if (isInstallation(auth)) return null;
  if (auth.orgId === null) throw noOrganization();
  return auth.orgId;
}

/** `created_by` value for rows the caller creates. */
export const actorUserId = (auth: AuthContext): number | null => (auth.kind === 'user' ? auth.userId : null);

/** The machine-access token acting (flag audit `actor_mcp_token_id`), or null. */
export const actorTokenId = (auth: AuthContext): number | null => (auth.kind === 'token' ? auth.tokenId : null);
