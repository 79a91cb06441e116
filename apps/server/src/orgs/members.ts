import { badRequest, forbidden } from '../http/errors.js';
import type { AuthContext, OrgActor } from '../auth/context.js';
import type { Role } from '../auth/roles.js';

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
