import type { Db } from '../ports/metadata/knex.js';
import { badRequest, forbidden } from '../http/errors.js';
import type { Actor } from '../audit/actor.js';
import type { Organization, OrgStore } from '../orgs/store.js';

/**
 * The service's side of the boundary between teams (docs/auth.md, "The boundary between teams").
 * `X-Tally-Resource` is the caller's claim, so what a resource may touch is decided here from what
 * the service records: a namespaced resource (`<Kind>/<namespace>/<name>`) acts only on an
 * organisation an Organization resource manages and whose recorded `namespaces` list its
 * namespace; the operator key acts only on organisations a resource manages (it creates or adopts
 * the others with an Organization). TENANCY_ALLOW_UNMANAGED_ORGS reopens the organisations nobody
 * manages, for a migration.
 */
export type BoundaryOrg = Pick<Organization, 'id' | 'name' | 'managed_by' | 'namespaces'>;
type Acting = Pick<Actor, 'kind' | 'resource'>;

/** The namespace of `<Kind>/<namespace>/<name>`; null for `Organization/<name>` (cluster-scoped). */
export function namespaceOf(resource: string): string | null {
  const parts = resource.split('/');
  return parts.length === 3 ? parts[1] : null;
}

export const isOrganizationResource = (resource: string | null): boolean => resource !== null && namespaceOf(resource) === null;

const managedByOrganization = (org: BoundaryOrg | null) => org !== null && isOrganizationResource(org.managed_by);
const orgName = (org: BoundaryOrg | null) => (org ? `organisation ${org.id} (${org.name})` : 'a project without organisation');

/** The operator key's writes name the resource they act for. */
export function operatorResource(actor: Acting): string | null {
  if (actor.kind === 'operator' && actor.resource === null) {
    throw badRequest('X-Tally-Resource required', { message: 'the operator key writes only for a resource: send it as X-Tally-Resource' });
  }
  return actor.resource;
}

/**
 * Whether `actor` may change something of `org` (null: a project without organisation). Users,
 * machine tokens and the superadmin key without a resource pass (their own rules apply); otherwise
 * `403 {error: "forbidden", reason: "NamespaceNotAllowed" | "NotManaged", message}`.
 */
export function assertResourceMayAct(org: BoundaryOrg | null, actor: Acting, opts: { allowUnmanagedOrgs: boolean }): void {
  const resource = operatorResource(actor);
  if (resource === null) return;
  const unmanagedOpen = opts.allowUnmanagedOrgs && org !== null && org.managed_by === null;
  const ns = namespaceOf(resource);
  if (ns !== null) {
    if (managedByOrganization(org) && (org!.namespaces ?? []).includes(ns)) return;
    if (unmanagedOpen) return;
    throw forbidden('NamespaceNotAllowed', managedByOrganization(org)
      ? `namespace ${ns} is not listed in the namespaces of ${org!.managed_by}, which manages ${orgName(org)}`
      : `${orgName(org)} is managed by no Organization resource, so no namespace (${ns} included) may act for it; adopt it with an Organization listing ${ns}`);
  }
  // An Organization resource: the superadmin key may use it anywhere; the operator key only on the
  // organisation that resource manages.
  if (actor.kind !== 'operator' || unmanagedOpen || (org !== null && org.managed_by === resource)) return;
  throw forbidden('NotManaged', `the operator key acts only for the Organization that manages ${orgName(org)}, and ${resource} does not`);
}

/**
 * Adoption of a project by a namespaced resource: only inside an organisation an Organization
 * manages and whose namespaces list the resource's (TENANCY_ALLOW_UNMANAGED_ORGS does not open
 * this: adopt the organisation with an Organization first). Else `403 AdoptionRefused`.
 */
export function assertMayAdoptProject(org: BoundaryOrg | null, actor: Acting, opts: { allowUnmanagedOrgs: boolean }): void {
  const resource = operatorResource(actor);
  const ns = resource === null ? null : namespaceOf(resource);
  if (ns === null) return assertResourceMayAct(org, actor, opts);
  if (managedByOrganization(org) && (org!.namespaces ?? []).includes(ns)) return;
  throw forbidden('AdoptionRefused', managedByOrganization(org)
    ? `${resource} may not adopt a project of ${orgName(org)}: ${org!.managed_by} does not list namespace ${ns}`
    : `${resource} may not adopt a project of ${orgName(org)}, which no Organization resource manages; adopt the organisation with an Organization listing ${ns} first`);
}

/**
 * Letting go of what a resource manages (a release, a revocation) only takes access away, so the
 * resource that manages the object may always do it, even once its namespace left the
 * Organization's list: removing a namespace (or a CRD) must not leave a token live or an object
 * managed by a resource that can no longer act. Only the ownership check (409) applies then.
 */
export const isLettingGo = (actor: Acting, managedBy: string | null): boolean => actor.resource !== null && managedBy === actor.resource;

/** The boundary checks with the organisation read from the metadata store (inside the change's transaction). */
export class TenancyBoundary {
  constructor(private readonly orgs: OrgStore, readonly allowUnmanagedOrgs: boolean) {}

  /** The organisation of `orgId` as the boundary sees it (null: none). */
  private async org(trx: Db, orgId: number | null): Promise<BoundaryOrg | null> {
    return orgId === null ? null : (await this.orgs.getOrg(orgId, trx)) ?? null;
  }

  /** assertResourceMayAct for the organisation of `orgId` (null: a project without organisation). */
  async check(trx: Db, actor: Acting, orgId: number | null): Promise<void> {
    if (actor.resource === null && actor.kind !== 'operator') return;
    assertResourceMayAct(await this.org(trx, orgId), actor, this);
  }

  async checkAdoptProject(trx: Db, actor: Acting, orgId: number | null): Promise<void> {
    assertMayAdoptProject(await this.org(trx, orgId), actor, this);
  }
}
