import type { Db } from '../ports/metadata/knex.js';
import { isUniqueViolation } from '../ports/metadata/knex.js';
import { badRequest, conflict, notFound } from '../http/errors.js';
import { formulaRefs, parseFormula } from '../query/engine/formula.js';
import { ALL_EVENTS } from '../query/engine/filters.js';
import type { CohortDefinition } from '../cohorts/schema.js';
import type { CalculatedMetricDefinition, DerivedEventDefinition } from './schema.js';
import type { Actor } from '../audit/actor.js';
import { creatorOf } from '../audit/actor.js';
import type { AuditStore } from '../audit/store.js';
import type { TargetKind } from '../audit/schema.js';
import type { DefinitionPatch, DefinitionRow, DefinitionStore, DefinitionStores } from './store.js';

/**
 * A write that lost a race for a name the check had found free (two requests checked before
 * either wrote): the unique index refuses the second, which is the check's 409, not a 5xx.
 */
const nameRace = (err: unknown): never => {
  if (isUniqueViolation(err)) throw conflict('name taken');
  throw err;
};

/** Refuses a definition (400/409) before it is written; `id` on updates. The check reads inside the write's transaction. */
export type DefinitionCheck<T> = (trx: Db, projectId: number, definition: T, name: string, id?: number) => Promise<void>;

/**
 * Writes of one kind of named definition (derived events, calculated metrics, cohorts): the kind's
 * check, then the change and its audit row (`<kind>.created|updated|deleted`) in one transaction.
 */
export class DefinitionService<T extends object> {
  constructor(
    private readonly db: Db,
    readonly store: DefinitionStore<T>,
    private readonly audit: AuditStore,
    private readonly kind: Extract<TargetKind, 'derived_event' | 'calculated_metric' | 'cohort'>,
    private readonly what: string,
    private readonly check: DefinitionCheck<T> = async () => undefined,
  ) {}

  create(actor: Actor, input: { projectId: number; name: string; description: string | null; definition: T }): Promise<DefinitionRow<T>> {
    return this.db.transaction(async (trx) => {
      await this.check(trx, input.projectId, input.definition, input.name);
      const created = await this.store.create({ ...input, createdBy: creatorOf(actor) }, trx);
      await this.audit.recordInProject(trx, actor, input.projectId, { action: `${this.kind}.created`, target: { kind: this.kind, id: created.id }, after: created });
      return created;
    }).catch(nameRace);
  }

  /** `patch.definition` is merged over the stored one. */
  update(actor: Actor, id: number, patch: DefinitionPatch<Partial<T>>): Promise<DefinitionRow<T>> {
    return this.db.transaction(async (trx) => {
      const before = await this.store.get(id, trx);
      if (!before) throw notFound(this.what);
      const definition = { ...before.definition, ...(patch.definition ?? {}) } as T;
      await this.check(trx, before.project_id, definition, patch.name ?? before.name, id);
      await this.store.update(id, { name: patch.name, description: patch.description, definition }, trx);
      const after = (await this.store.get(id, trx))!;
      await this.audit.recordInProject(trx, actor, before.project_id, { action: `${this.kind}.updated`, target: { kind: this.kind, id }, before, after });
      return after;
    }).catch(nameRace);
  }

  async delete(actor: Actor, id: number): Promise<void> {
    await this.db.transaction(async (trx) => {
      const before = await this.store.get(id, trx);
      if (!before) throw notFound(this.what);
      await this.store.delete(id, trx);
      await this.audit.recordInProject(trx, actor, before.project_id, { action: `${this.kind}.deleted`, target: { kind: this.kind, id }, before });
    });
  }
}

/** 400 unless the formula parses and references only defined, distinct letters. */
export function checkMetric(def: CalculatedMetricDefinition) {
  const ids = def.metrics.map((m) => m.id);
  if (new Set(ids).size !== ids.length) throw badRequest('metrics: letters must be distinct');
  let refs: Set<string>;
  try {
    refs = formulaRefs(parseFormula(def.formula));
  } catch (e) {
    throw badRequest(`formula: ${(e as Error).message.replace(/^formula: /, '')}`);
  }
  for (const r of refs) if (!ids.includes(r as never)) throw badRequest(`formula: ${r} is not defined in metrics`);
}

/** The services of the three kinds of definition, built once (services.ts). */
export interface DefinitionServices {
  derivedEvents: DefinitionService<DerivedEventDefinition>;
  metrics: DefinitionService<CalculatedMetricDefinition>;
  cohorts: DefinitionService<CohortDefinition>;
}

export function definitionServices(db: Db, stores: DefinitionStores, audit: AuditStore): DefinitionServices {
  const events = stores.derivedEvents;
  /** A derived event's name is free in its project and not the reserved `$all_events`. */
  const nameFree: DefinitionCheck<DerivedEventDefinition> = async (trx, projectId, _def, name, exceptId) => {
    if (name === ALL_EVENTS) throw badRequest('name: $all_events is reserved');
    const other = await events.byName(projectId, name, trx);
    if (other && other.id !== exceptId) throw conflict('name taken');
  };
  return {
    derivedEvents: new DefinitionService(db, events, audit, 'derived_event', 'definition', nameFree),
    metrics: new DefinitionService(db, stores.metrics, audit, 'calculated_metric', 'definition', async (_trx, _p, def) => checkMetric(def)),
    cohorts: new DefinitionService(db, stores.cohorts, audit, 'cohort', 'cohort'),
  };
}
