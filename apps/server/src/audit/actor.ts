import type { Context } from 'koa';
import { authOf, type AuthContext } from '../auth/context.js';
import { resourceOf } from '../auth/managed.js';

/**
 * Who makes a change, as every service takes it and the audit log records it: a user (by user id),
 * a machine-access token (by token id), the superadmin key, or the operator's key; `resource` is the
 * Kubernetes resource (`<Kind>/<namespace>/<name>` or `Organization/<name>`) a change came through
 * (X-Tally-Resource, honoured only with the superadmin or operator key). A resource owns what it
 * creates (`managed_by`).
 */
export interface Actor {
  kind: 'user' | 'token' | 'superadmin' | 'operator';
  /** The user's or the machine-access token's id; null for the installation keys. */
  id: number | null;
  resource: string | null;
}

/** The actor of a request already authenticated by its route's auth kind. */
export function actorOf(ctx: Context): Actor {
  const auth = authOf(ctx);
  return actorFromAuth(auth, resourceOf(ctx, auth));
}

export function actorFromAuth(auth: AuthContext, resource: string | null = null): Actor {
  switch (auth.kind) {
    case 'user': return { kind: 'user', id: auth.userId, resource: null };
    case 'token': return { kind: 'token', id: auth.tokenId, resource: null };
    default: return { kind: auth.kind, id: null, resource };
  }
}

/** The user id a created row records as `created_by` (null unless a user acts). */
export const creatorOf = (actor: Actor): number | null => (actor.kind === 'user' ? actor.id : null);
