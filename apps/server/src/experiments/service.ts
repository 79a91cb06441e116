import type { Db } from '../ports/metadata/knex.js';
import { isUniqueViolation, nowMs } from '../ports/metadata/knex.js';
import { badRequest, conflict, notFound } from '../http/errors.js';
import type { Actor } from '../audit/actor.js';
import { assertOwnedBy } from '../auth/managed.js';
import { isLettingGo, type TenancyBoundary } from '../auth/boundary.js';
import { creatorOf } from '../audit/actor.js';
import type { AuditStore } from '../audit/store.js';
import type { FeatureFlag } from '../flags/schema.js';
import { projectOrgId } from '../projects/store.js';
import type { ExperimentFields, ExperimentStore } from './store.js';
import type { CreateExperimentInput, Experiment, UpdateExperimentInput } from './schema.js';

/** The project's flag of a key (archived ones included), or undefined. */
export type FlagByKey = (projectId: number, key: string) => Promise<FeatureFlag | undefined>;

/** 400 naming the field, in the form the route's own validation answers. */
const invalid = (field: string, message: string) => badRequest(`${field}: ${message}`, { code: 'validation_failed', message: `${field}: ${message}` });
const keyTaken = (key: string) => conflict('experiment key taken', { message: `an experiment with key "${key}" exists in this project` });

/**
 * The checks that need more than one field or the flag: the flag exists and has variants, the
 * control is one of them, metric ids are unique, a sum names its property, the primary metric is
 * one of the metrics, the dates are in order. Throws the first problem as a 400 naming its field.
 */
export function checkExperiment(e: ExperimentFields, flag: FeatureFlag | undefined): void {
  if (!flag) throw invalid('flagKey', `no flag "${e.flagKey}" in this project`);
  if (flag.variants.length === 0) throw invalid('flagKey', `the flag "${e.flagKey}" has no variants to compare`);
  const variants = flag.variants.map((v) => v.key);
  if (!variants.includes(e.control)) throw invalid('control', `"${e.control}" is not a variant of the flag "${e.flagKey}" (${variants.join(', ')})`);
  const ids = new Set<string>();
  e.metrics.forEach((m, i) => {
    if (ids.has(m.id)) throw invalid(`metrics.${i}.id`, `duplicate metric id "${m.id}"`);
    ids.add(m.id);
    if (m.kind === 'sum' && m.property === undefined) throw invalid(`metrics.${i}.property`, 'required for a sum metric');
  });
  if (!ids.has(e.primaryMetricId)) throw invalid('primaryMetricId', `"${e.primaryMetricId}" is not the id of one of the metrics`);
  if (e.startAt !== null && e.endAt !== null && e.endAt <= e.startAt) throw invalid('endAt', 'must be after startAt');
}

/**
 * Experiments' writes: the body is checked against the project's flag before anything is
 * written, then the change and its audit row (`experiment.created|updated|stopped|deleted`)
 * commit in one transaction.
 */
export class ExperimentService {
  constructor(
    private readonly db: Db, private readonly store: ExperimentStore, private readonly audit: AuditStore, private readonly flagByKey: FlagByKey,
    private readonly boundary: TenancyBoundary,
  ) {}

  /**
   * A write through a Kubernetes resource acts only inside the boundary between teams (403,
   * auth/boundary.ts); a managed experiment takes writes only from its resource (409).
   */
  private async checkWriter(trx: Db, actor: Actor, e: Experiment): Promise<void> {
    await this.boundary.check(trx, actor, await projectOrgId(trx, e.projectId));
    assertOwnedBy(e.managedBy, actor.resource);
  }

  get(id: number): Promise<Experiment | undefined> {
    return this.store.get(id);
  }

  list(projectId: number): Promise<Experiment[]> {
    return this.store.list(projectId);
  }

  /** The experiment's flag as it is now (its variants and split are read at every run). */
  flagOf(e: Pick<Experiment, 'projectId' | 'flagKey'>): Promise<FeatureFlag | undefined> {
    return this.flagByKey(e.projectId, e.flagKey);
  }

  async create(actor: Actor, projectId: number, body: Omit<CreateExperimentInput, 'projectId'>): Promise<Experiment> {
    const fields: ExperimentFields = {
      projectId,
      key: body.key,
      name: body.name ?? body.key,
      flagKey: body.flagKey,
      control: body.control ?? 'control',
      metrics: body.metrics,
      primaryMetricId: body.primaryMetricId ?? body.metrics[0].id,
      engine: body.engine ?? 'bayesian',
      confidenceLevel: body.confidenceLevel ?? 0.95,
      sequential: body.sequential ?? false,
      correction: body.correction ?? 'none',
      startAt: body.startAt ?? null,
      endAt: body.endAt ?? null,
      status: 'running',
      stoppedAt: null,
      createdBy: creatorOf(actor),
      managedBy: actor.resource,
    };
    checkExperiment(fields, await this.flagByKey(projectId, fields.flagKey));
    try {
      return await this.db.transaction(async (trx) => {
        await this.boundary.check(trx, actor, await projectOrgId(trx, projectId));
        if (await this.store.keyTaken(trx, projectId, fields.key)) throw keyTaken(fields.key);
        const created = await this.store.create(trx, fields);
        await this.audit.recordInProject(trx, actor, projectId, { action: 'experiment.created', target: { kind: 'experiment', id: created.id }, after: created });
        return created;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw keyTaken(fields.key);
      throw err;
    }
  }

  /** The patch laid over the stored experiment, checked as a whole (a new flag with the old control is refused). */
  async update(actor: Actor, experiment: Experiment, patch: UpdateExperimentInput): Promise<Experiment> {
    const { id, createdAt: _c, updatedAt: _u, ...stored } = experiment;
    // The boundary (403) and the owner (409) before the body's checks, then again under the transaction.
    await this.db.transaction((trx) => this.checkWriter(trx, actor, experiment));
    const fields: ExperimentFields = { ...stored };
    for (const [k, v] of Object.entries(patch)) if (v !== undefined) (fields as Record<string, unknown>)[k] = v;
    // A primary metric that is no longer among the metrics follows to the first one, unless named.
    if (patch.metrics && patch.primaryMetricId === undefined && !patch.metrics.some((m) => m.id === fields.primaryMetricId)) {
      fields.primaryMetricId = patch.metrics[0].id;
    }
    checkExperiment(fields, await this.flagByKey(fields.projectId, fields.flagKey));
    try {
      return await this.db.transaction(async (trx) => {
        const before = await this.store.get(id, trx);
        if (!before) throw notFound('experiment');
        await this.checkWriter(trx, actor, before);
        fields.managedBy = before.managedBy;
        if (fields.key !== before.key && (await this.store.keyTaken(trx, fields.projectId, fields.key, id))) throw keyTaken(fields.key);
        const after = await this.store.save(trx, id, fields);
        await this.audit.recordInProject(trx, actor, after.projectId, { action: 'experiment.updated', target: { kind: 'experiment', id }, before, after });
        return after;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw keyTaken(fields.key);
      throw err;
    }
  }

  /**
   * Stops counting: status `stopped`, and the end moved to now unless it is earlier, so the
   * results stop changing. Stopping a stopped experiment changes nothing and writes no audit row.
   */
  async stop(actor: Actor, id: number): Promise<Experiment> {
    return this.db.transaction(async (trx) => {
      const before = await this.store.get(id, trx);
      if (!before) throw notFound('experiment');
      await this.checkWriter(trx, actor, before);
      if (before.status === 'stopped') return before;
      const at = nowMs();
      const { id: _i, createdAt: _c, updatedAt: _u, ...fields } = before;
      // The end stays after the start (an experiment stopped before it started ends just after it).
      const endAt = Math.max(Math.min(before.endAt ?? at, at), (before.startAt ?? -1) + 1);
      const after = await this.store.save(trx, id, { ...fields, status: 'stopped', stoppedAt: at, endAt });
      await this.audit.recordInProject(trx, actor, after.projectId, { action: 'experiment.stopped', target: { kind: 'experiment', id }, before, after });
      return after;
    });
  }

  /**
   * The managing resource lets go of its experiment (an Experiment deleted with deletionPolicy
   * Retain): managed_by becomes null. Always allowed to that resource, even outside the boundary
   * (letting go only takes access away); an unmanaged experiment is returned as is.
   */
  async release(actor: Actor, id: number): Promise<Experiment> {
    return this.db.transaction(async (trx) => {
      const before = await this.store.get(id, trx);
      if (!before) throw notFound('experiment');
      if (before.managedBy === null) return before;
      if (!isLettingGo(actor, before.managedBy)) await this.checkWriter(trx, actor, before);
      const { id: _i, createdAt: _c, updatedAt: _u, ...fields } = before;
      const after = await this.store.save(trx, id, { ...fields, managedBy: null });
      await this.audit.recordInProject(trx, actor, after.projectId, { action: 'experiment.updated', target: { kind: 'experiment', id }, before, after });
      return after;
    });
  }

  async delete(actor: Actor, id: number): Promise<void> {
    await this.db.transaction(async (trx) => {
      const before = await this.store.get(id, trx);
      if (!before) throw notFound('experiment');
      await this.checkWriter(trx, actor, before);
      await this.store.delete(trx, id);
      await this.audit.recordInProject(trx, actor, before.projectId, { action: 'experiment.deleted', target: { kind: 'experiment', id }, before });
    });
  }
}
