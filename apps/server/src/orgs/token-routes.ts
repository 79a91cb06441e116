import { z } from 'zod';
import { notFound } from '../http/errors.js';
import { route, type RouteSpec } from '../http/route.js';
import { requireRole } from '../auth/context.js';
import { RoleSchema } from '../auth/roles.js';
import { actorOf } from '../audit/actor.js';
import { IdParams } from '../projects/schema.js';
import { checkOwnerChange, orgActor } from './members.js';
import { ManagedByQuery } from './schema.js';
import type { OrgStore } from './store.js';
import type { MachineTokenStore, MachineToken } from './tokens.js';
import type { MachineTokenService } from './token-service.js';

export const MachineTokenSchema = z
  .object({
    id: z.number().int(),
    name: z.string(),
    role: RoleSchema,
    token: z.string().nullable().openapi({ description: 'the token value: on creation only, null in lists' }),
    created_at: z.number().int(),
    last_used_at: z.number().int().nullable(),
    managed_by: z.string().nullable().openapi({ description: 'the ApiToken resource that minted it (revoked only through it), or null' }),
  })
  .openapi('MachineToken');

const CreateTokenBody = z.object({ name: z.string().trim().min(1).max(200), role: RoleSchema }).strict();
const TokenIdParams = z.object({ id: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER) });
const OrgTokenParams = z.object({ id: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER), tokenId: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER) });
/** A resource mints tokens acting up to admin: an owner token stays a person's decision. */
const CreateManagedTokenBody = z.object({ name: z.string().trim().min(1).max(200), role: z.enum(['viewer', 'member', 'admin']) }).strict();

const publicToken = (t: MachineToken, token: string | null = null) => ({
  id: t.id, name: t.name, role: t.role, token, created_at: t.createdAt, last_used_at: t.lastUsedAt, managed_by: t.managedBy,
});

/**
 * Machine-access tokens (service accounts) of the caller's organisation: admin or owner only; only
 * an owner mints an owner token (as with member roles). The superadmin has no organisation here.
 */
export function machineTokenRoutes(deps: { orgs: OrgStore; machineTokens: MachineTokenStore; tokenService: MachineTokenService }): RouteSpec[] {
  const { machineTokens: tokens, tokenService } = deps;
  const orgOr404 = async (id: number) => {
    if (!(await deps.orgs.getOrg(id))) throw notFound('organization');
  };
  return [
    route({
      method: 'get', path: '/api/org/tokens', tag: 'Account', auth: 'api', response: z.array(MachineTokenSchema),
      summary: "The organisation's live machine-access tokens (admin; values are never shown again)",
      handler: async ({ ctx }) => {
        const actor = orgActor(requireRole(ctx, 'admin'));
        return (await tokens.list(actor.orgId)).map((t) => publicToken(t));
      },
    }),
    route({
      method: 'post', path: '/api/org/tokens', tag: 'Account', auth: 'api', body: CreateTokenBody, response: MachineTokenSchema, status: 201,
      summary: 'Mints a machine-access token acting with `role` in the organisation (admin; owner role: owner only); the value is shown once',
      handler: async ({ ctx, body }) => {
        const actor = orgActor(requireRole(ctx, 'admin'));
        checkOwnerChange(actor, null, body.role);
        const created = await tokenService.create(actorOf(ctx), actor.orgId, body);
        return publicToken(created, created.token);
      },
    }),
    route({
      method: 'delete', path: '/api/org/tokens/{id}', tag: 'Account', auth: 'api', params: TokenIdParams,
      summary: 'Revokes a machine-access token at once (admin); another organisation’s id is 404',
      handler: async ({ ctx, params }) => {
        const actor = orgActor(requireRole(ctx, 'admin'));
        await tokenService.revoke(actorOf(ctx), actor.orgId, params.id);
        return { ok: true };
      },
    }),
    route({
      method: 'get', path: '/admin/orgs/{id}/tokens', tag: 'Admin', auth: 'admin', params: IdParams, query: ManagedByQuery, response: z.array(MachineTokenSchema),
      summary: "An organisation's live machine-access tokens (no values); `managedBy` keeps those a resource minted",
      handler: async ({ params, query }) => {
        await orgOr404(params.id);
        return (await tokens.list(params.id, { managedBy: query.managedBy })).map((t) => publicToken(t));
      },
    }),
    route({
      method: 'post', path: '/admin/orgs/{id}/tokens', tag: 'Admin', auth: 'admin', params: IdParams, body: CreateManagedTokenBody, response: MachineTokenSchema, status: 201,
      summary: 'Mints a machine-access token of an organisation (viewer, member or admin), managed by X-Tally-Resource when sent; the value is shown once',
      handler: async ({ ctx, params, body }) => {
        const created = await tokenService.create(actorOf(ctx), params.id, body);
        return publicToken(created, created.token);
      },
    }),
    route({
      method: 'delete', path: '/admin/orgs/{id}/tokens/{tokenId}', tag: 'Admin', auth: 'admin', params: OrgTokenParams,
      summary: 'Revokes a machine-access token; one a resource manages only with that X-Tally-Resource (else 409)',
      handler: async ({ ctx, params }) => {
        await tokenService.revoke(actorOf(ctx), params.id, params.tokenId);
        return { ok: true };
      },
    }),
  ];
}
