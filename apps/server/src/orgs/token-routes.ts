import { z } from 'zod';
import type { Deps } from '../deps.js';
import { notFound } from '../http/errors.js';
import { route, type RouteSpec } from '../http/route.js';
import { actorUserId, requireRole } from '../auth/context.js';
import { RoleSchema } from '../auth/roles.js';
import { checkOwnerChange, orgActor } from '../account/routes.js';
import { MachineTokenStore, type MachineToken } from './tokens.js';

export const MachineTokenSchema = z
  .object({
    id: z.number().int(),
    name: z.string(),
    role: RoleSchema,
    token: z.string().nullable().openapi({ description: 'the token value: on creation only, null in lists' }),
    created_at: z.number().int(),
    last_used_at: z.number().int().nullable(),
  })
  .openapi('MachineToken');

const CreateTokenBody = z.object({ name: z.string().trim().min(1).max(200), role: RoleSchema }).strict();
const TokenIdParams = z.object({ id: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER) });

const publicToken = (t: MachineToken, token: string | null = null) => ({
  id: t.id, name: t.name, role: t.role, token, created_at: t.createdAt, last_used_at: t.lastUsedAt,
});

/**
 * Machine-access tokens (service accounts) of the caller's organisation: admin or owner only; only
 * an owner mints an owner token (as with member roles). The superadmin has no organisation here.
 */
export function machineTokenRoutes(deps: Deps): RouteSpec[] {
  const tokens = new MachineTokenStore(deps.db);
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
        const auth = requireRole(ctx, 'admin');
        const actor = orgActor(auth);
        checkOwnerChange(actor, null, body.role);
        const created = await tokens.create({ orgId: actor.orgId, name: body.name, role: body.role, createdBy: actorUserId(auth) });
        return publicToken(created, created.token);
      },
    }),
    route({
      method: 'delete', path: '/api/org/tokens/{id}', tag: 'Account', auth: 'api', params: TokenIdParams,
      summary: 'Revokes a machine-access token at once (admin); another organisation’s id is 404',
      handler: async ({ ctx, params }) => {
        const actor = orgActor(requireRole(ctx, 'admin'));
        if (!(await tokens.revoke(actor.orgId, params.id))) throw notFound('token');
        return { ok: true };
      },
    }),
  ];
}
