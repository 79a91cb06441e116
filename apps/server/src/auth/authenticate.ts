import type { Context } from 'koa';
import { createHash, timingSafeEqual } from 'node:crypto';
import { badRequest, forbidden, noOrganization, unauthorized } from '../http/errors.js';
import { operatorMayCall } from './operator.js';
import { RESOURCE_HEADER } from './managed.js';
import { invalidFlagSecret, type ProjectCredentials, type TokenProject } from './credentials.js';
import type { AuthKind } from '../http/route.js';
import type { OrgStore } from '../orgs/store.js';
import { MACHINE_TOKEN_PREFIX, type MachineTokenStore } from '../orgs/tokens.js';
import type { IdTokenVerifier } from './oidc.js';
import type { AuthContext } from './context.js';

const digest = (s: string) => createHash('sha256').update(s).digest();
const SAFE_METHODS = new Set(['GET', 'HEAD']);

/** `Authorization: Bearer <value>`, or undefined. */
export function bearerToken(ctx: Context): string | undefined {
  const header = ctx.get('authorization');
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

/**
 * Resolves `/api/*` and `/admin/*` credentials: the superadmin key (compared in constant time)
 * or OPERATOR_KEY (on the operator's routes), a machine-access token, or an identity-provider ID
 * token (mapped to a user and the organisation they act in).
 */
export class Authenticator {
  private superadminDigest: Buffer;
  private operatorDigest: Buffer | undefined;

  constructor(
    superadminKey: string,
    private verifier: IdTokenVerifier | undefined,
    private orgs: OrgStore,
    /** Project tokens and flag secrets (in-memory tenant config first, then the database). */
    readonly credentials: ProjectCredentials,
    private machineTokens: MachineTokenStore,
    /** OPERATOR_KEY (unset: no operator credential). */
    operatorKey?: string,
  ) {
    this.superadminDigest = digest(superadminKey);
    this.operatorDigest = operatorKey ? digest(operatorKey) : undefined;
  }

  isSuperadminKey(token: string): boolean {
    return timingSafeEqual(digest(token), this.superadminDigest);
  }

  isOperatorKey(token: string): boolean {
    return this.operatorDigest !== undefined && timingSafeEqual(digest(token), this.operatorDigest);
  }

  /**
   * The auth context of a bearer credential, or undefined when it is neither the key, a live
   * machine-access token nor a valid ID token.
   */
  async resolve(token: string | undefined, organizationHeader?: string): Promise<AuthContext | undefined> {
    if (!token) return undefined;
    if (this.isSuperadminKey(token)) return { kind: 'superadmin' };
    if (this.isOperatorKey(token)) return { kind: 'operator' };
    if (token.startsWith(MACHINE_TOKEN_PREFIX)) {
      const machine = await this.machineTokens.resolve(token);
      return machine && { kind: 'token', tokenId: machine.id, name: machine.name, orgId: machine.orgId, role: machine.role };
    }
    if (!this.verifier) return undefined;
    const claims = await this.verifier.verify(token);
    if (!claims) return undefined;
    const { user, memberships, currentOrgId } = await this.orgs.userFromToken(claims);
    // The organisation a request acts in: the X-Tally-Organization header (the console's tab), else
    // the one the user chose (POST /api/account/current-organization), else the oldest membership.
    let current: (typeof memberships)[number] | undefined = memberships.find((m) => m.org_id === currentOrgId) ?? memberships[0];
    if (organizationHeader) {
      if (!/^\d{1,15}$/.test(organizationHeader)) throw badRequest('X-Tally-Organization: must be an organisation id');
      current = memberships.find((m) => m.org_id === Number(organizationHeader));
      if (!current) throw forbidden();
    }
    return { kind: 'user', userId: user.id, email: user.email, orgId: current?.org_id ?? null, role: current?.role ?? null };
  }

  /**
   * Whether the request's bearer credential may make destructive profile changes (/engage
   * `$delete`, `$unset`) in a project: the superadmin key, or an owner of the project's organisation.
   */
  async ownerCheck(ctx: Context): Promise<(p: TokenProject) => Promise<boolean>> {
    const token = bearerToken(ctx);
    const auth = token ? await this.resolve(token).catch(() => undefined) : undefined;
    const cache = new Map<number, boolean>();
    return async (project) => {
      if (!auth) return false;
      if (auth.kind === 'superadmin') return true;
      if (auth.kind === 'operator' || project.org_id === null) return false;
      if (auth.kind === 'token') return auth.orgId === project.org_id && auth.role === 'owner';
      if (!cache.has(project.org_id)) {
        const m = await this.orgs.membershipOfUser(project.org_id, auth.userId);
        cache.set(project.org_id, m?.role === 'owner');
      }
      return cache.get(project.org_id)!;
    };
  }

  /**
   * The route-level check for an AuthKind (see http/route.ts). `route` (the declaration's method
   * and path) decides whether the operator key may call it (auth/operator.ts).
   */
  async authenticate(ctx: Context, kind: AuthKind, route?: { method: string; path: string }): Promise<void> {
    if (kind === 'none') return;
    if (kind === 'projectToken') {
      ctx.state.projectTokens = this.credentials.forRequest(ctx);
      return;
    }
    const token = bearerToken(ctx);
    if (kind === 'flagSecret') {
      const project = token ? await this.credentials.byFlagSecret(token) : undefined;
      if (!project) throw invalidFlagSecret();
      ctx.state.flagSecretProject = project;
      return;
    }
    if (token && (kind === 'admin' || kind === 'api' || kind === 'account') && this.isOperatorKey(token)) {
      if (!route || !operatorMayCall(route.method, route.path)) throw forbidden();
      // Every change the operator key makes is for a resource, named in the audit log.
      if (!SAFE_METHODS.has(route.method.toUpperCase()) && !ctx.get(RESOURCE_HEADER)) {
        throw badRequest('X-Tally-Resource required', { message: 'the operator key writes only for a resource: send it as X-Tally-Resource' });
      }
      ctx.state.auth = { kind: 'operator' };
      return;
    }
    if (kind === 'admin') {
      if (!token || !this.isSuperadminKey(token)) throw unauthorized();
      ctx.state.auth = { kind: 'superadmin' };
      return;
    }
    const auth = await this.resolve(token, ctx.get('x-tally-organization') || undefined);
    if (!auth) throw unauthorized();
    if (kind === 'api' && auth.kind === 'user' && auth.orgId === null) throw noOrganization();
    ctx.state.auth = auth;
  }
}

