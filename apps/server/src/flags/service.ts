import { badRequest, conflict, notFound } from '../http/errors.js';
import { LIMITS } from '../limits.js';
import { nowMs } from '../ports/metadata/knex.js';
import type { CohortChecker } from './cohorts.js';
import type { LiveFlagsCache } from './live.js';
import { assertOwnedBy } from '../auth/managed.js';
import { isUniqueViolation, type FlagStore } from './store.js';
import type { Actor } from '../audit/actor.js';
import { creatorOf } from '../audit/actor.js';
import type { AuditStore } from '../audit/store.js';
import { isLettingGo, type TenancyBoundary } from '../auth/boundary.js';
import type { Db } from '../ports/metadata/knex.js';
import {
  flagConsistencyError,
  type CreateFlagInput,
  type FeatureFlag,
  type FlagAction,
  type FlagEvent,
  type FlagRule,
  type UpdateFlagInput,
} from './schema.js';

/** The actor columns of a flag's own history (`flag_events`, GET /api/flags/{id}/events). */
const historyActor = (actor: Actor) => ({
  userId: actor.kind === 'user' ? actor.id : null,
  machineTokenId: actor.kind === 'token' ? actor.id : null,
  resource: actor.resource,
});

const keyTaken = (key: string) => conflict('key taken', { message: `a flag with key "${key}" already exists in this project` });

/**
 * The rules of flags: key uniqueness, the per-project limit, cross-field consistency, cohorts of
 * the flag's project, ownership by a resource, and for each change a row of the flag's own history
 * (`flag_events`) and one of the audit log, both written in the same transaction as the change.
 * Creates lock the project row so the key check and the limit cannot both pass for two concurrent
 * requests (the unique (project_id, key) index is the last line).
 * Every write drops the project's live flags.
 */
export class FlagService {
  constructor(private store: FlagStore, private live: LiveFlagsCache, private cohorts: CohortChecker, private auditLog: AuditStore, private boundary: TenancyBoundary) {}

  /** A write through a Kubernetes resource acts only inside the boundary between teams (403, auth/boundary.ts). */
  private async checkBoundary(trx: Db, actor: Actor, projectId: number): Promise<void> {
    await this.boundary.check(trx, actor, await this.store.orgOf(trx, projectId));
  }

  /**
   * The audit log's row of one change (`flag.<verb>`) and, unless `history` is null (a deletion,
   * whose history goes with the flag), the flag's own history row. The history keeps its action
   * names: a release is `updated` there and `flag.released` in the audit log.
   */
  private async record(trx: Db, actor: Actor, e: { flag: FeatureFlag; verb: string; history: FlagAction | null; before: FeatureFlag | null; after: FeatureFlag | null; at: number }): Promise<void> {
    if (e.history) await this.store.audit(trx, { flag: e.flag, action: e.history, actor: historyActor(actor), before: e.before, after: e.after, at: e.at });
    await this.auditLog.recordInProject(trx, actor, e.flag.project_id, { action: `flag.${e.verb}`, target: { kind: 'flag', id: e.flag.id }, before: e.before, after: e.after });
  }

  list(projectId: number, opts: { includeArchived: boolean; managedBy?: string }): Promise<FeatureFlag[]> {
    return this.store.list(projectId, opts);
  }

  get(id: number): Promise<FeatureFlag | undefined> {
    return this.store.get(id);
  }

  events(flagId: number, limit: number): Promise<FlagEvent[]> {
    return this.store.events(flagId, limit);
  }

  /** Every rule's cohort must be a cohort of the flag's project (else 400 naming the rule). */
  private async checkCohorts(projectId: number, rules: FlagRule[] | undefined): Promise<void> {
    for (const [i, rule] of (rules ?? []).entries()) {
      const id = rule.cohortId;
      if (id !== undefined && (await this.cohorts.projectOf(id)) !== projectId) throw badRequest(`rules.${i}.cohortId: cohort ${id} is not a cohort of this project`);
    }
  }

  /** Creates a flag; with a resource the flag is managed by it. */
  async create(projectId: number, body: Omit<CreateFlagInput, 'projectId'>, actor: Actor): Promise<FeatureFlag> {
    const at = nowMs();
    const input: Omit<FeatureFlag, 'id'> = {
      project_id: projectId,
      key: body.key,
      name: body.name,
      description: body.description ?? null,
      active: body.active ?? true,
      type: body.type ?? 'release',
      variants: body.variants ?? [],
      rules: body.rules ?? [],
      created_by: creatorOf(actor),
      managed_by: actor.resource,
      archived_at: null,
      created_at: at,
      updated_at: at,
    };
    const problem = flagConsistencyError(input);
    if (problem) throw badRequest(problem);
    await this.checkCohorts(projectId, input.rules);
    try {
      const flag = await this.store.transaction(async (trx) => {
        const project = await this.store.lockProject(trx, projectId);
        if (!project) throw notFound('project');
        await this.boundary.check(trx, actor, project.orgId);
        if (await this.store.keyTaken(trx, projectId, input.key)) throw keyTaken(input.key);
        if ((await this.store.count(trx, projectId)) >= LIMITS.flagsPerProject) {
          throw conflict('flag limit reached', { message: `a project holds at most ${LIMITS.flagsPerProject} flags (archived ones count); delete archived flags first` });
        }
        const created = await this.store.insert(trx, input);
        await this.record(trx, actor, { flag: created, verb: 'created', history: 'created', before: null, after: created, at });
        return created;
      });
      this.live.invalidate(projectId);
      return flag;
    } catch (err) {
      if (isUniqueViolation(err)) throw keyTaken(input.key);
      throw err;
    }
  }

  /**
   * One change to one flag: locks it, checks ownership, lets `change` compute the new flag and its
   * action (null: nothing to do, no event), then saves it with its audit row.
   */
  private async mutate(id: number, actor: Actor, change: (before: FeatureFlag, at: number) => { after: FeatureFlag; action: FlagAction; verb?: string } | null): Promise<FeatureFlag> {
    const flag = await this.store.transaction(async (trx) => {
      const before = await this.store.lock(trx, id);
      if (!before) throw notFound('flag');
      const at = Math.max(nowMs(), before.updated_at);
      const changed = change(before, at);
      // The resource that manages the flag may always release it (isLettingGo); other writes act within the boundary.
      if (!(changed?.verb === 'released' && isLettingGo(actor, before.managed_by))) await this.checkBoundary(trx, actor, before.project_id);
      assertOwnedBy(before.managed_by, actor.resource);
      if (!changed) return before;
      await this.store.save(trx, changed.after);
      await this.record(trx, actor, { flag: changed.after, verb: changed.verb ?? changed.action, history: changed.action, before, after: changed.after, at });
      return changed.after;
    });
    this.live.invalidate(flag.project_id);
    return flag;
  }

  /**
   * Applies a partial update after re-checking the merged flag (new variants against the kept
   * rules and the other way round): `activated`/`deactivated` when `active` flips, `updated`
   * otherwise. The key is immutable.
   */
  async update(flag: FeatureFlag, body: UpdateFlagInput, actor: Actor): Promise<FeatureFlag> {
    // the boundary (403) and the owner (409) before the body's checks, as mutate does them again under the lock
    await this.store.transaction((trx) => this.checkBoundary(trx, actor, flag.project_id));
    assertOwnedBy(flag.managed_by, actor.resource);
    if (body.key !== undefined && body.key !== flag.key) throw badRequest(`key: is immutable (cannot change "${flag.key}" to "${body.key}")`);
    await this.checkCohorts(flag.project_id, body.rules);
    return this.mutate(flag.id, actor, (before, at) => {
      const merged: FeatureFlag = { ...before, updated_at: at };
      for (const k of ['name', 'description', 'active', 'type', 'variants', 'rules'] as const) {
        if (body[k] !== undefined) (merged as Record<string, unknown>)[k] = body[k];
      }
      const problem = flagConsistencyError(merged);
      if (problem) throw badRequest(problem);
      return { after: merged, action: merged.active === before.active ? 'updated' : merged.active ? 'activated' : 'deactivated' };
    });
  }

  /** Sets or clears `archived_at`; a flag already in the wanted state is returned with no event. */
  setArchived(id: number, archived: boolean, actor: Actor): Promise<FeatureFlag> {
    return this.mutate(id, actor, (before, at) => {
      if ((before.archived_at !== null) === archived) return null;
      return { after: { ...before, archived_at: archived ? at : null, updated_at: at }, action: archived ? 'archived' : 'revived' };
    });
  }

  /** The owning resource lets go of the flag (Retain); an unmanaged flag is returned as is. */
  release(id: number, actor: Actor): Promise<FeatureFlag> {
    return this.mutate(id, actor, (before, at) => (before.managed_by === null ? null : { after: { ...before, managed_by: null, updated_at: at }, action: 'updated', verb: 'released' }));
  }

  /**
   * Deletes an archived flag with its own history (`flag_events`); `409 not archived` otherwise.
   * The audit log keeps its rows and gains `flag.deleted`.
   */
  async delete(id: number, actor: Actor): Promise<void> {
    const projectId = await this.store.transaction(async (trx) => {
      const flag = await this.store.lock(trx, id);
      if (!flag) throw notFound('flag');
      await this.checkBoundary(trx, actor, flag.project_id);
      assertOwnedBy(flag.managed_by, actor.resource);
      if (flag.archived_at === null) throw conflict('not archived', { message: 'archive the flag before deleting it' });
      await this.store.delete(trx, id);
      await this.record(trx, actor, { flag, verb: 'deleted', history: null, before: flag, after: null, at: nowMs() });
      return flag.project_id;
    });
    this.live.invalidate(projectId);
  }
}
