import { ADOPT_ANNOTATION, keyOf, type AnyResource, type BaseStatus, type DeletionPolicy, type KindName, type Resource } from '../kinds.js';
import { ORGANIZATION } from '../resources/organization.js';
import { ApiError, type ApiOrg } from '../tally-api.js';
import { adoptId, apiFailure, deletionPolicyNow, ensureFinalizer, hasFinalizer, notReady, ready, removeFinalizer, type Outcome, type ReconcileContext } from '../reconcile/context.js';
import { adoptByAnnotation } from '../reconcile/adopt.js';
import type { KindReconciler, OperatorKind, OrganizationRef } from './kind.js';

export interface OrganizationSpec {
  displayName: string;
  namespaces: string[];
  monthlyEventQuota?: number;
  members?: { email: string; role: string }[];
  groups?: { name: string; role: string }[];
  deletionPolicy?: DeletionPolicy;
}
export interface OrganizationUsage { month: string; events: number; monthlyEventQuota?: number }
export interface OrganizationStatus extends BaseStatus { organizationId?: number; usage?: OrganizationUsage }
export type OrganizationResource = Resource<'Organization', OrganizationSpec, OrganizationStatus>;

declare module '../kinds.js' {
  interface KindResources { Organization: OrganizationResource }
}

/** Organization (cluster-scoped): nothing enqueues it but its own changes; Projects and ApiTokens watch it. */
export const organization: OperatorKind<'Organization'> = {
  definition: ORGANIZATION,
  reconciler: (ctx) => new OrganizationReconciler(ctx),
  feedsTenantConfig: true,
  // Organizations do not act for one another.
  actsFor: () => false,
};

const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7);
const canonicalList = (list: { role: string }[], key: 'email' | 'name') =>
  JSON.stringify([...list].map((x) => [String((x as Record<string, unknown>)[key]).toLowerCase(), x.role]).sort());

/**
 * Organization ↔ an organisation of the service, managed by `Organization/<name>`: found again by
 * `managed_by`, adopted (adopt-id annotation, `Conflict` when another resource manages it) or
 * created; name and quota follow the spec; `members`, when given, is the whole invited membership
 * list (the service then refuses hand edits); `groups`, when given, is the group→role mapping. Status shows
 * this month's usage, read at most once a minute. Deletion: `Retain` releases, `Delete` deletes
 * (refused by the service while the organisation still has projects: the resource waits).
 */
class OrganizationReconciler implements KindReconciler<OrganizationResource> {
  /** When each Organization's usage was last read (uid → ms); kept here so status changes only with the figures. */
  private readonly usageReadAt = new Map<string, number>();

  constructor(private readonly ctx: ReconcileContext) {}

  async reconcile(obj: OrganizationResource): Promise<Outcome | 'gone'> {
    return this.withRecordedId(obj, await reconcileOrganization(this.ctx, obj, this.usageReadAt));
  }

  async finalize(obj: OrganizationResource): Promise<Outcome | 'gone'> {
    this.usageReadAt.delete(obj.metadata.uid);
    return this.withRecordedId(obj, await finalizeOrganization(this.ctx, obj, keyOf(obj)));
  }

  private withRecordedId(obj: OrganizationResource, outcome: Outcome | 'gone'): Outcome | 'gone' {
    if (outcome === 'gone') return outcome;
    // Status is output only: organizationId is the record's (null removes a value written by anyone else).
    return { ...outcome, fields: { ...outcome.fields, organizationId: this.ctx.records.organizations.get(keyOf(obj)) ?? null } };
  }
}

async function reconcileOrganization(ctx: ReconcileContext, obj: OrganizationResource, usageReadAt: Map<string, number>): Promise<Outcome | 'gone'> {
  const resource = keyOf(obj);
  // organizationId comes from the service (findOrg, adopt, create), never from status.
  const spec = obj.spec;
  const adopt = adoptId(obj, ADOPT_ANNOTATION);
  if (typeof adopt === 'object') return adopt;
  obj = await ensureFinalizer(ctx, obj);
  const quota = spec.monthlyEventQuota ?? null;
  const namespaces = [...new Set(spec.namespaces ?? [])].sort();
  let org: ApiOrg | undefined;
  try {
    org = await ctx.api.findOrg(resource);
    if (!org && adopt !== undefined) {
      const taken = await adoptByAnnotation(ctx, obj, 'organization', adopt, (id) => ctx.api.adoptOrg(id, resource));
      if ('outcome' in taken) return forgotten(ctx, resource, taken.outcome);
      org = taken.adopted;
    }
    if (!org) {
      org = await createOrg(ctx, spec.displayName, quota, namespaces, resource);
      ctx.event(obj, 'Created', `organization ${org.id} created`);
    }
    ctx.records.organizations.set(resource, org.id);
    const changes: { name?: string; monthlyEventQuota?: number | null; namespaces?: string[] } = {};
    if (org.name !== spec.displayName) changes.name = spec.displayName;
    if ((org.monthly_event_quota ?? null) !== quota) changes.monthlyEventQuota = quota;
    // The service enforces the same boundary from its copy of the namespaces (a service that does
    // not return them does not know them: nothing to compare).
    if (org.namespaces !== undefined && JSON.stringify([...(org.namespaces ?? [])].sort()) !== JSON.stringify(namespaces)) changes.namespaces = namespaces;
    if (Object.keys(changes).length > 0) org = { ...org, ...(await ctx.api.updateOrg(org.id, changes, resource)) };

    if (spec.members) {
      const invited = (await ctx.api.listMembers(org.id)).filter((m) => (m.source ?? 'invite') === 'invite');
      if (org.members_managed_by !== resource || canonicalList(invited, 'email') !== canonicalList(spec.members, 'email')) {
        await ctx.api.putMembers(org.id, spec.members, resource);
      }
    } else if (org.members_managed_by === resource) {
      await ctx.api.releaseMembers(org.id, resource);
    }
    // Absent `groups` leaves the mappings as they are (an adopted organisation keeps its own); an
    // empty list means none.
    if (spec.groups) {
      const mapped = await ctx.api.listGroups(org.id);
      if (canonicalList(mapped, 'name') !== canonicalList(spec.groups, 'name')) await ctx.api.putGroups(org.id, spec.groups, resource);
    }
  } catch (err) {
    const outcome = apiFailure(err, `organization of ${resource}`);
    return org ? outcome : forgotten(ctx, resource, outcome);
  }

  const usage = await readUsage(ctx, obj, org.id, quota, usageReadAt);
  const fields: Record<string, unknown> = { organizationId: org.id };
  if (usage) fields.usage = usage;
  // Usage in status is read again at most once per usageRefreshMs (GET /admin/usage counts a month of events).
  return { ...ready(`organization ${org.id}`, fields), afterMs: ctx.config.timing.usageRefreshMs };
}

/** This month's usage: the status's when read under a minute ago for the same month and quota. */
async function readUsage(ctx: ReconcileContext, obj: OrganizationResource, orgId: number, quota: number | null, readAt: Map<string, number>): Promise<OrganizationUsage | undefined> {
  const now = Date.now();
  const month = monthOf(now);
  const current = obj.status?.usage;
  const fresh = current && now - (readAt.get(obj.metadata.uid) ?? 0) < ctx.config.timing.usageRefreshMs && current.month === month
    && (current.monthlyEventQuota ?? null) === quota && ctx.records.organizations.get(keyOf(obj)) === orgId;
  if (fresh) return current;
  try {
    const row = (await ctx.api.usage(month)).find((u) => u.org_id === orgId);
    const usage: OrganizationUsage = { month, events: row?.events ?? 0 };
    readAt.set(obj.metadata.uid, now);
    if (quota !== null) usage.monthlyEventQuota = quota;
    return usage;
  } catch (err) {
    // Usage is informative: an outage of /admin/usage keeps the last figure and the Ready state.
    ctx.log.error('usage not read', { resource: keyOf(obj), err: err instanceof Error ? err.message : String(err) });
    return current;
  }
}

/** No organisation found for the resource: its record goes unless the failure is transient (an outage keeps it). */
function forgotten(ctx: ReconcileContext, resource: string, outcome: Outcome): Outcome {
  if (!outcome.retry) ctx.records.organizations.delete(resource);
  return outcome;
}

/**
 * Creates the organisation with its namespaces; a service that predates them (400 naming the
 * member) gets it without, as before.
 */
async function createOrg(ctx: ReconcileContext, name: string, quota: number | null, namespaces: string[], resource: string): Promise<ApiOrg> {
  try {
    return await ctx.api.createOrg(name, quota, namespaces, resource);
  } catch (err) {
    if (!(err instanceof ApiError && err.kind === 'invalid' && /namespaces/.test(err.message))) throw err;
    ctx.log.info('the service does not take namespaces yet: organisation created without them', { resource });
    return ctx.api.createOrg(name, quota, undefined, resource);
  }
}

/**
 * The resources acting for this Organization's organisation that are going too (being deleted, or
 * of a kind whose CRD is being deleted): once the organisation is released the service no longer
 * lets them act for it, so they could not release what they manage. The Organization goes last.
 * Every registered kind says what acts for an organisation (`actsFor`), so none is left out.
 */
async function leavingDependents(ctx: ReconcileContext, obj: OrganizationResource): Promise<string[]> {
  const org: OrganizationRef = { name: obj.metadata.name, id: ctx.records.organizations.get(keyOf(obj)) };
  const acting = ctx.kinds().flatMap((k) => actingFor(ctx, k as OperatorKind<KindName>, org)).filter(hasFinalizer);
  const leaving: string[] = [];
  const kindLeaving = new Map<string, boolean>();
  for (const r of acting) {
    if (!r.metadata.deletionTimestamp && !kindLeaving.has(r.kind)) kindLeaving.set(r.kind, await ctx.crdBeingDeleted(r.kind));
    if (r.metadata.deletionTimestamp || kindLeaving.get(r.kind)) leaving.push(keyOf(r));
  }
  return leaving;
}

const actingFor = <K extends KindName>(ctx: ReconcileContext, kind: OperatorKind<K>, org: OrganizationRef): AnyResource[] =>
  ctx.cache(kind.definition.kind).list().filter((o) => kind.actsFor(ctx, o, org));

async function finalizeOrganization(ctx: ReconcileContext, obj: OrganizationResource, resource: string): Promise<Outcome | 'gone'> {
  if (!hasFinalizer(obj)) return 'gone';
  const leaving = await leavingDependents(ctx, obj);
  if (leaving.length > 0) {
    return notReady('Deleting', `waiting for ${leaving.length} resource(s) acting for it to go first (${leaving.slice(0, 3).join(', ')}${leaving.length > 3 ? ', …' : ''})`, { afterMs: 1_000 });
  }
  const policy = await deletionPolicyNow(ctx, obj, obj.spec?.deletionPolicy ?? 'Retain');
  try {
    const org = await ctx.api.findOrg(resource);
    if (org && org.managed_by === resource) {
      if (policy === 'Delete') {
        try {
          await ctx.api.deleteOrg(org.id, resource);
        } catch (err) {
          // The service keeps an organisation that still has projects: wait for them to go.
          if (err instanceof ApiError && err.kind === 'conflict' && !(err.body as { resource?: unknown } | undefined)?.resource) {
            return notReady('Conflict', `organization ${org.id} still has projects: it is deleted once they are gone`, { afterMs: 5_000 });
          }
          throw err;
        }
      } else {
        if (org.members_managed_by === resource) await ctx.api.releaseMembers(org.id, resource);
        await ctx.api.releaseOrg(org.id, resource);
      }
      ctx.event(obj, policy === 'Delete' ? 'Deleted' : 'Released', `organization ${org.id} ${policy === 'Delete' ? 'deleted' : 'released (kept, no longer managed)'}`);
    }
  } catch (err) {
    if (!(err instanceof ApiError && (err.kind === 'not_found' || err.kind === 'conflict'))) return apiFailure(err, `${policy === 'Delete' ? 'deleting' : 'releasing'} organization of ${resource}`);
  }
  ctx.records.organizations.delete(resource);
  await removeFinalizer(ctx, obj);
  return 'gone';
}
