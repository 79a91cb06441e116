import { z } from 'zod';
import { BaseStatusShape, ObjectName, OrganizationRefSchema, type KindDefinition, type Resource } from './meta.js';

/** Roles a machine-access token may have (never owner). */
export const TOKEN_ROLES = ['viewer', 'member', 'admin'] as const;

/**
 * ApiToken: a machine-access token of an organisation, minted into a Secret of the resource's
 * namespace (key `token`, owned by the ApiToken); deleting the ApiToken revokes the token.
 * Role and Secret name are fixed at creation (a new role is a new token: make a new ApiToken).
 */
export const ApiTokenSpecSchema = z.object({
  organizationRef: OrganizationRefSchema,
  role: z.enum(TOKEN_ROLES).meta({ 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'role is immutable' }] }),
  secretName: ObjectName.meta({ 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'secretName is immutable' }] }).optional(),
}).strict();
export type ApiTokenSpec = z.output<typeof ApiTokenSpecSchema>;

export const ApiTokenStatusSchema = z.object({
  ...BaseStatusShape,
  organizationId: z.number().int().positive().optional(),
  tokenId: z.number().int().positive().optional(),
  secretName: z.string().optional(),
});
export type ApiTokenStatus = z.infer<typeof ApiTokenStatusSchema>;

export type ApiToken = Resource<'ApiToken', ApiTokenSpec, ApiTokenStatus>;

export const API_TOKEN: KindDefinition<'ApiToken'> = {
  kind: 'ApiToken',
  plural: 'apitokens',
  singular: 'apitoken',
  shortNames: ['ttok'],
  spec: ApiTokenSpecSchema,
  status: ApiTokenStatusSchema,
  columns: [
    { name: 'Organization', type: 'string', jsonPath: '.spec.organizationRef.name' },
    { name: 'Role', type: 'string', jsonPath: '.spec.role' },
    { name: 'Secret', type: 'string', jsonPath: '.status.secretName' },
    { name: 'Token ID', type: 'integer', jsonPath: '.status.tokenId', priority: 1 },
  ],
};
