import type { Context } from 'koa';
import type { AuthContext } from './context.js';
import { badRequest, conflict } from '../http/errors.js';

/**
 * Ownership by a Kubernetes resource (docs/decisions.md, "Kubernetes contract"). The operator writes with the
 * superadmin key and `X-Tally-Resource: <Kind>/<namespace>/<name>`; an object it created (or a
 * flag secret it set) is managed by that resource and refuses writes that do not carry the same
 * header with the superadmin key.
 */
export const RESOURCE_HEADER = 'x-tally-resource';
/** `<Kind>/<namespace>/<name>` (namespaced kinds) or `Organization/<name>` (the cluster-scoped kind). */
const RESOURCE_PATTERN = /^(?:Organization\/[a-z0-9][-.a-z0-9]*|[A-Za-z][A-Za-z0-9]*\/[a-z0-9][-a-z0-9]*\/[a-z0-9][-.a-z0-9]*)$/;
const RESOURCE_MAX = 400;

/** The resource a request acts for: the header counts only with the superadmin or operator key (else null). */
export function resourceOf(ctx: Context, auth: AuthContext): string | null {
  if (auth.kind !== 'superadmin' && auth.kind !== 'operator') return null;
  const value = ctx.get(RESOURCE_HEADER);
  if (!value) return null;
  if (value.length > RESOURCE_MAX || !RESOURCE_PATTERN.test(value)) {
    throw badRequest(`X-Tally-Resource: must be <Kind>/<namespace>/<name> or Organization/<name> (at most ${RESOURCE_MAX} characters)`);
  }
  return value;
}

/** `409 {error: "managed by resource", resource}` unless the object is unmanaged or `resource` owns it. */
export function assertOwnedBy(managedBy: string | null, resource: string | null): void {
  if (managedBy !== null && managedBy !== resource) throw conflict('managed by resource', { body: { resource: managedBy } });
}

/** The X-Tally-Resource of a call that only makes sense for a resource (adopt, release, a managed list): 400 without it. */
export function requireResource(ctx: Context): string {
  const auth = ctx.state.auth;
  const resource = auth ? resourceOf(ctx, auth) : null;
  if (!resource) throw badRequest('X-Tally-Resource required', { message: 'send the managing resource as X-Tally-Resource' });
  return resource;
}
