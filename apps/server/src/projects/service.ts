import { isDeepStrictEqual } from 'node:util';
import type { Db } from '../ports/metadata/knex.js';
import type { EventStore } from '../ports/events/index.js';
import type { Logger } from '../http/errors.js';
import { notFound } from '../http/errors.js';
import { assertOwnedBy } from '../auth/managed.js';
import type { TenancyBoundary } from '../auth/boundary.js';
import type { Actor } from '../audit/actor.js';
import type { AuditStore } from '../audit/store.js';
import type { OrgStore } from '../orgs/store.js';
import { publicProject, type Project, type ProjectLimits, type ProjectStore } from './store.js';

/**
 * Projects: created, changed (name, retentionDays, rateLimit), deleted, adopted and released, each
 * in one transaction holding the project's row lock, with its audit row. A project a resource
 * manages refuses writes without that resource (409); a resource acts only inside the boundary
 * between teams (403, auth/boundary.ts).
 */
export class ProjectService {
  constructor(
    private readonly db: Db,
    private readonly projects: ProjectStore,
    private readonly orgs: OrgStore,
    private readonly audit: AuditStore,
    private readonly boundary: TenancyBoundary,
    private readonly events: EventStore,
    private readonly log: Logger,
  ) {}

  /**
   * A project in organisation `orgId` (null: the superadmin's project without organisation, which
   * touches no tenant), managed by the actor's resource when it has one.
   */
  create(actor: Actor, orgId: number | null, fields: { name: string } & ProjectLimits): Promise<Project> {
    return this.db.transaction(async (trx) => {
      if (orgId !== null) {
        if (!(await this.orgs.getOrg(orgId, trx))) throw notFound('organization');
        await this.boundary.check(trx, actor, orgId);
      }
      const project = await this.projects.create({ orgId, managedBy: actor.resource, ...fields }, trx);
      await this.record(trx, actor, project, 'project.created', null, project);
      return project;
    });
  }

  /** Renames and/or sets retentionDays and rateLimit; a retention change shows in the row's before and after. */
  update(actor: Actor, id: number, patch: { name?: string } & ProjectLimits): Promise<Project> {
    return this.writable(actor, id, async (trx, before) => {
      const after = (await this.projects.update(id, patch, trx))!;
      await this.record(trx, actor, after, 'project.updated', before, after);
      return after;
    }).finally(() => this.projects.forgetTokens());
  }

  /** Deletes the project and its metadata; its events, links and profiles go asynchronously (gone for reads at once). */
  async delete(actor: Actor, id: number): Promise<void> {
    await this.writable(actor, id, async (trx, before) => {
      await this.projects.delete(id, trx);
      await this.record(trx, actor, before, 'project.deleted', before, null);
    }).finally(() => this.projects.forgetTokens());
    this.events.deleteProject(id)
      .catch((err) => this.log.error('project delete: event store cleanup failed', { projectId: id, err: String(err) }));
  }

  /**
   * The resource `by` takes over an existing project: refused (403 AdoptionRefused) unless the
   * project's organisation is managed by an Organization listing the resource's namespace; 409
   * when another resource manages it.
   */
  adopt(actor: Actor, id: number, by: string): Promise<Project> {
    return this.locked(id, async (trx, project) => {
      await this.boundary.checkAdoptProject(trx, actor, project.org_id);
      assertOwnedBy(project.managed_by, by);
      if (project.managed_by === by) return project;
      await this.projects.setManagedBy(id, by, trx);
      const after = { ...project, managed_by: by };
      await this.record(trx, actor, after, 'project.adopted', project, after);
      return after;
    });
  }

  /** The owning resource lets go of its project: managed_by becomes null; idempotent (only a change has a row). */
  release(actor: Actor, id: number): Promise<Project> {
    return this.locked(id, async (trx, project) => {
      assertOwnedBy(project.managed_by, actor.resource);
      if (project.managed_by === null) return project;
      await this.projects.setManagedBy(id, null, trx);
      const after = { ...project, managed_by: null };
      await this.record(trx, actor, after, 'project.released', project, after);
      return after;
    });
  }

  private locked<T>(id: number, write: (trx: Db, project: Project) => Promise<T>): Promise<T> {
    return this.db.transaction(async (trx) => {
      const project = await this.projects.lock(trx, id);
      if (!project) throw notFound('project');
      return write(trx, project);
    });
  }

  /** A project the actor may change: unmanaged or managed by the actor's resource (409), within the boundary (403). */
  private writable<T>(actor: Actor, id: number, write: (trx: Db, project: Project) => Promise<T>): Promise<T> {
    return this.locked(id, async (trx, project) => {
      assertOwnedBy(project.managed_by, actor.resource);
      await this.boundary.check(trx, actor, project.org_id);
      return write(trx, project);
    });
  }

  private async record(trx: Db, actor: Actor, p: Project, action: string, before: Project | null, after: Project | null): Promise<void> {
    if (before && after && isDeepStrictEqual(before, after)) return;
    await this.audit.record(trx, actor, {
      organizationId: p.org_id, projectId: p.id, action, target: { kind: 'project', id: p.id },
      before: before && publicProject(before), after: after && publicProject(after),
    });
  }
}
