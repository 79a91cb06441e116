import type { V1Secret } from '@kubernetes/client-node';
import { API_VERSION, keyOf, type BaseStatus, type Resource } from '../kinds.js';
import { API_TOKEN } from '../resources/apitoken.js';
import { MANAGED_LABEL, statusOf } from '../kube.js';
import { ApiError } from '../tally-api.js';
import {
  apiFailure, apiTokenSecretName, ensureFinalizer, hasFinalizer, notReady, organizationFor, organizationIdOf, ready, removeFinalizer, type Outcome,
  type ReconcileContext,
} from '../reconcile/context.js';
import { namesOrganization, specChanged, type OperatorKind } from './kind.js';

export interface ApiTokenSpec { organizationRef: { name: string }; role: 'viewer' | 'member' | 'admin'; secretName?: string }
export interface ApiTokenStatus extends BaseStatus { organizationId?: number; tokenId?: number; secretName?: string }
export type ApiTokenResource = Resource<'ApiToken', ApiTokenSpec, ApiTokenStatus>;

declare module '../kinds.js' {
  interface KindResources { ApiToken: ApiTokenResource }
}

/** ApiToken: enqueued by a change of its Organization or of its record, and by a change of its Secret. */
export const apiToken: OperatorKind<'ApiToken'> = {
  definition: API_TOKEN,
  reconciler: (ctx) => ({ reconcile: (obj) => reconcileApiToken(ctx, obj), finalize: (obj) => finalizeApiToken(ctx, obj, keyOf(obj)) }),
  watches: [{
    kind: 'Organization',
    when: (type, obj, old) => type !== 'update' || specChanged(obj, old),
    afterRecordChange: true,
    map: (ctx, org) => ctx.cache('ApiToken').list().filter((t) => t.spec?.organizationRef?.name === org.metadata.name),
  }],
  secretName: (t) => apiTokenSecretName(t),
  actsFor: (_ctx, t, org) => namesOrganization(t.spec, org),
};

/**
 * ApiToken → a machine-access token of its Organization's organisation, minted into the Secret
 * `spec.secretName` (default `<name>-api-token`, key `token`, owned by the ApiToken so it goes with
 * it). The token's value is shown once by the service, so the Secret is the only copy: when the
 * Secret is gone or the token was revoked elsewhere, the operator revokes what is left and mints
 * again (a Normal Event `Rotated`). Deleting the ApiToken revokes the token.
 */
export async function reconcileApiToken(ctx: ReconcileContext, obj: ApiTokenResource): Promise<Outcome> {
  const resource = keyOf(obj);
  const outcome = await reconcileLive(ctx, obj, resource);
  // The record says in which organisation this resource minted (revocation reads it, never status).
  const organizationId = outcome.fields?.organizationId;
  if (outcome.ready?.status === 'True' && typeof organizationId === 'number') ctx.records.apiTokens.set(resource, organizationId);
  return outcome;
}

/** Where this resource's tokens may be: the organisation it minted in, else its Organization's (by the records). */
function tokenOrganization(ctx: ReconcileContext, obj: ApiTokenResource, resource: string): number | undefined {
  const org = ctx.cache('Organization').get('', obj.spec?.organizationRef?.name ?? '');
  return ctx.records.apiTokens.get(resource) ?? (org ? organizationIdOf(ctx, org) : undefined);
}

async function reconcileLive(ctx: ReconcileContext, obj: ApiTokenResource, resource: string): Promise<Outcome> {
  const boundary = organizationFor(ctx, obj.metadata.namespace, { organizationRef: obj.spec?.organizationRef });
  if (!('organizationId' in boundary)) {
    // A namespace taken off the Organization's list loses its tokens too (they are credentials, not data).
    // (tokenId only hints that there may be one: what is revoked is what the service lists as this resource's.)
    if (boundary.ready?.reason === 'NamespaceNotAllowed' && (obj.status?.tokenId || ctx.records.apiTokens.has(resource))) return revokeOutside(ctx, obj, resource, boundary);
    return boundary;
  }
  const { organizationId } = boundary;
  const secretName = apiTokenSecretName(obj);
  const { namespace } = obj.metadata;

  obj = await ensureFinalizer(ctx, obj);
  const secret = await ctx.kube.readSecret(namespace, secretName);
  if (secret && !(secret.metadata?.ownerReferences ?? []).some((o) => o.uid === obj.metadata.uid)) {
    return notReady('Conflict', `Secret ${namespace}/${secretName} exists and is not owned by this ApiToken`, { fields: { organizationId, secretName } });
  }
  let live: number[];
  try {
    live = (await ctx.api.listTokens(organizationId, resource)).filter((t) => t.managed_by === resource).map((t) => t.id);
  } catch (err) {
    return { ...apiFailure(err, `tokens of organization ${organizationId}`), fields: { organizationId, secretName } };
  }
  // The Secret says which token it holds: when that token is live, all is well (whatever a
  // status not yet written says), and any other token of this resource is a leftover to revoke.
  const known = obj.status?.tokenId;
  const held = secret?.data?.token ? Number(secret.metadata?.annotations?.[TOKEN_ID_ANNOTATION]) : NaN;
  if (Number.isSafeInteger(held) && live.includes(held)) {
    try {
      for (const id of live) if (id !== held) await ctx.api.deleteToken(organizationId, id, resource);
    } catch (err) {
      return { ...apiFailure(err, `tokens of organization ${organizationId}`), fields: { organizationId, tokenId: held, secretName } };
    }
    return ready(`token ${held} of organization ${organizationId} in Secret ${secretName}`, { organizationId, tokenId: held, secretName });
  }

  // Mint: revoke whatever this resource still has (its value is lost), then write the new one.
  let minted: { id: number; token: string };
  try {
    for (const id of live) await ctx.api.deleteToken(organizationId, id, resource);
    minted = await ctx.api.createToken(organizationId, resource, obj.spec.role, resource);
  } catch (err) {
    return { ...apiFailure(err, `token of organization ${organizationId}`), fields: { organizationId, secretName } };
  }
  const body: V1Secret = {
    apiVersion: 'v1', kind: 'Secret', type: 'Opaque',
    metadata: {
      name: secretName, namespace,
      labels: { [MANAGED_LABEL]: 'tally-operator' },
      annotations: { [TOKEN_ID_ANNOTATION]: String(minted.id) },
      ownerReferences: [{ apiVersion: API_VERSION, kind: 'ApiToken', name: obj.metadata.name, uid: obj.metadata.uid, controller: true, blockOwnerDeletion: true }],
    },
    data: { token: Buffer.from(minted.token).toString('base64') },
  };
  try {
    if (secret) await ctx.kube.replaceSecret(namespace, secretName, { ...body, metadata: { ...body.metadata, resourceVersion: secret.metadata?.resourceVersion } });
    else await ctx.kube.createSecret(namespace, body);
  } catch (err) {
    // The token cannot be delivered: revoke it now rather than leave a live token nobody holds.
    await ctx.api.deleteToken(organizationId, minted.id, resource).catch(() => undefined);
    if (statusOf(err) === 409) return { fields: { organizationId, secretName }, afterMs: 50 };
    throw err;
  }
  ctx.event(obj, known || secret ? 'Rotated' : 'Created', `token ${minted.id} (${obj.spec.role}) of organization ${organizationId} written to Secret ${secretName}`);
  return ready(`token ${minted.id} of organization ${organizationId} in Secret ${secretName}`, { organizationId, tokenId: minted.id, secretName });
}

async function revokeOutside(ctx: ReconcileContext, obj: ApiTokenResource, resource: string, outcome: Outcome): Promise<Outcome> {
  const organizationId = tokenOrganization(ctx, obj, resource);
  if (organizationId) {
    try {
      const live = (await ctx.api.listTokens(organizationId, resource)).filter((t) => t.managed_by === resource);
      for (const t of live) await ctx.api.deleteToken(organizationId, t.id, resource);
      if (live.length > 0) ctx.event(obj, 'Revoked', `token ${live.map((t) => t.id).join(', ')} revoked: ${outcome.ready?.message}`);
    } catch (err) {
      if (!(err instanceof ApiError && err.kind === 'not_found')) return apiFailure(err, `revoking the token of ${resource}`);
    }
  }
  ctx.records.apiTokens.delete(resource);
  // null removes the member in the status merge-patch.
  return { ...outcome, fields: { tokenId: null } };
}

/** Which token the Secret holds (so a Secret and a token that no longer match are noticed). */
export const TOKEN_ID_ANNOTATION = 'analytics.tally.dev/token-id';

async function finalizeApiToken(ctx: ReconcileContext, obj: ApiTokenResource, resource: string): Promise<Outcome | 'gone'> {
  if (!hasFinalizer(obj)) return 'gone';
  const organizationId = tokenOrganization(ctx, obj, resource);
  if (organizationId) {
    try {
      const live = (await ctx.api.listTokens(organizationId, resource)).filter((t) => t.managed_by === resource);
      for (const t of live) await ctx.api.deleteToken(organizationId, t.id, resource);
      if (live.length > 0) ctx.event(obj, 'Revoked', `token ${live.map((t) => t.id).join(', ')} of organization ${organizationId} revoked`);
    } catch (err) {
      if (!(err instanceof ApiError && (err.kind === 'not_found' || err.kind === 'conflict'))) return apiFailure(err, `revoking the token of ${resource}`);
    }
  }
  await removeFinalizer(ctx, obj);
  return 'gone';
}
