import type { Config } from '../config.js';
import type { AuthContext } from '../auth/context.js';
import { notFound } from '../http/errors.js';
import type { RateLimits } from '../http/rate-limit.js';
import type { EventStore } from '../ports/events/index.js';
import type { ProjectStore } from '../projects/store.js';
import type { CacheRunOptions, Cached, ResultsCachePort } from '../results-cache/index.js';
import type { Analyses } from './analyses.js';
import { OrgSlots } from './engine/concurrency.js';
import { boundedEvents, taggedEvents } from './engine/guard.js';
import type { DateRange } from './engine/range.js';
import { irKindOf, runAnalysis } from './registry.js';
import type { AnalysisDef, IrDeps } from './kinds/define.js';
import type { IrDocument } from './ir/schema.js';
import type { IrResult } from './ir/results.js';
import { irContext } from './engine/ir-context.js';
import { runDrilldown, type DrilldownPage, type DrilldownSelection } from './ir/drilldown.js';
import { irRanges, notImplemented } from './ir/run.js';
import type { QueryV2 } from './ir/document.js';

/** The project an analysis runs in, and the organisation whose slots it takes. */
export interface ProjectScope {
  id: number;
  org_id: number | null;
}

/**
 * Reads of one project's events under its organisation's share of the engine: a slot, the
 * organisation and project named in each statement, the slot's rank (data browsing uses it).
 */
export interface ProjectReads {
  read<T>(projectId: number, work: (events: EventStore) => Promise<T>): Promise<T>;
}

export interface ExecutorDeps {
  config: Config;
  events: EventStore;
  analyses: Analyses;
  rateLimits: RateLimits;
  projects: ProjectStore;
  cache: ResultsCachePort;
}

/**
 * The one place every analysis run passes, whoever asks (the v0 query routes, POST /api/query and
 * its drilldown, saved reports, board cards): in order,
 *
 * 1. `admit`: the caller's token bucket for the project (QUERY_RATE_*), once per request;
 * 2. the cost guard's estimate before anything runs (400 `query too large`);
 * 3. `cached`: the results cache, for the runs that use it (reports and cards);
 * 4. a slot of the project's organisation (QUERY_CONCURRENCY_PER_ORG, waiting up to QUERY_QUEUE_MS,
 *    else 429 `too many concurrent queries`), held while the engine runs;
 * 5. the event store as the run sees it: every read capped at the guard's `maxRows` and tagged
 *    with a leading comment naming the organisation and project (what an operator sees in
 *    ClickHouse's system.processes and query_log); the engines enforce the statement timeout
 *    and memory cap themselves (ports/events).
 *
 * Built once per process (app.ts buildDeps) and handed to the routes through `deps.executor`.
 */
export class QueryExecutor implements ProjectReads {
  readonly slots: OrgSlots;

  constructor(private deps: ExecutorDeps) {
    this.slots = new OrgSlots(deps.config.queryConcurrency.perOrg, deps.config.queryConcurrency.queueMs);
  }

  get cache(): ResultsCachePort {
    return this.deps.cache;
  }

  /**
   * The query rate limit, per credential and project (docs/decisions.md, "Limits"): 429 `rate
   * limited` in the `{status: 0}` envelope with Retry-After. Taken once the project is resolved
   * and the caller authorised for it, so a refused credential costs no token.
   */
  async admit(auth: AuthContext, projectId: number): Promise<void> {
    const credential = auth.kind === 'superadmin' || auth.kind === 'operator' ? 'admin' : auth.kind === 'token' ? `t${auth.tokenId}` : `u${auth.userId}`;
    await this.deps.rateLimits.query(credential, projectId);
  }

  /** The scope of a project an authorised row (a report, a board) belongs to; 404 if it is gone meanwhile. */
  async scopeOf(projectId: number): Promise<ProjectScope> {
    const project = await this.deps.projects.get(projectId);
    if (!project) throw notFound('project');
    return project;
  }

  /** A v0 analysis, its body parsed and range resolved: `via: report` adds what report runs carry (annotations where declared). */
  async analysis(project: ProjectScope, def: AnalysisDef, body: unknown, range: DateRange, via: 'endpoint' | 'report'): Promise<unknown> {
    const { config, analyses } = this.deps;
    const guard = config.queryGuard;
    def.estimate(guard, body, range);
    const q = await analyses.contexts.forProject(project.id);
    return this.engine(project, true, (events) =>
      runAnalysis(def, { events, guard, annotations: analyses.annotations, metrics: analyses.definitions.metrics }, q, body, range, via));
  }

  /**
   * An upgraded (v2) document by its kind's declaration. Throws 400 `invalid date range`, 400
   * `query too large: …` (the kind's estimate, before the engine runs), 400 `invalid query` for
   * references only the project can resolve, and 501 for kinds without a runner.
   */
  async ir(project: ProjectScope, query: QueryV2): Promise<IrResult> {
    const kind = irKindOf(query.analysis.kind);
    if (!kind.run) throw notImplemented(kind.kind);
    const { range, cmp } = irRanges(this.deps, query);
    const doc = query as IrDocument<never>;
    kind.estimate?.(this.deps.config.queryGuard, doc, range, cmp);
    const q = await irContext(this.deps, project.id, query);
    return this.engine(project, true, (events) => kind.run!({ ...this.irDeps, events }, q, doc, range, cmp));
  }

  /** The canonical ids behind one number of a trend or funnel (one row from the engine: not capped). */
  drilldown(project: ProjectScope, query: QueryV2, sel: DrilldownSelection, page: { limit: number; offset: number }): Promise<DrilldownPage> {
    return this.engine(project, false, (events) => runDrilldown({ ...this.irDeps, events }, project.id, query, sel, page));
  }

  /**
   * A domain's own compiled analysis (an experiment's per-unit aggregation): `work` reads the
   * engine inside a slot of the project's organisation, capped and tagged like every run.
   */
  compiled<T>(project: ProjectScope, work: (events: EventStore) => Promise<T>): Promise<T> {
    return this.engine(project, true, work);
  }

  /**
   * Reads that are not analyses of the query routes but scan a project's events all the same (data
   * browsing): a slot and the tagged, ranked store, without the rate limit (those routes never
   * spent it) or the row cap (each read has its own LIMIT).
   */
  async read<T>(projectId: number, work: (events: EventStore) => Promise<T>): Promise<T> {
    return this.engine(await this.scopeOf(projectId), false, work);
  }

  /**
   * `compute` through the results cache: `parts` name the answer within the project (the engine
   * is added here), `span` is the event times it reads (undefined: not cacheable), `at` the run's clock.
   */
  cached<V extends object>(project: ProjectScope, at: number, parts: unknown, span: DateRange | undefined, compute: () => Promise<V>, opts?: CacheRunOptions<V>): Promise<Cached<V>> {
    const e = this.deps.events.dialect;
    const partial = opts?.partial && { ...opts.partial, parts: { e, q: opts.partial.parts } };
    return this.deps.cache.run({ projectId: project.id, at, parts: { e, q: parts } }, span, compute, { ...opts, partial });
  }

  /**
   * The checks `analysis` makes before its engine runs, over the whole range (a run computing only
   * some buckets of it answers the same 400s as the whole run): the kind's estimate.
   */
  checkAnalysis(def: AnalysisDef, body: unknown, range: DateRange): void {
    def.estimate(this.deps.config.queryGuard, body, range);
  }

  /** The checks `ir` makes before its engine runs, over the document's whole range: 400 `invalid date range`, the kind's estimate. */
  checkIr(query: QueryV2, now?: number): void {
    const kind = irKindOf(query.analysis.kind);
    const { range, cmp } = irRanges(this.deps, query, now);
    kind.estimate?.(this.deps.config.queryGuard, query as IrDocument<never>, range, cmp);
  }

  /** The query guard's limits (a stitched answer checks its breakdown's cells as the whole run would). */
  get guard(): Config['queryGuard'] {
    return this.deps.config.queryGuard;
  }

  /** The project's annotations on days of `range` (what answers carry beside their series). */
  annotations(projectId: number, range: DateRange) {
    return this.deps.analyses.annotations.inRange(projectId, range);
  }

  private get irDeps(): IrDeps {
    return { config: this.deps.config, analyses: this.deps.analyses, events: this.deps.events };
  }

  /**
   * Holds a slot of the project's organisation while `work` reads the engine through the run's view
   * of the store. Each statement's rank is the number of analyses its organisation runs or waits
   * to run at that moment (and whether another organisation is active: ReadOptions.contended), so the engine favours organisations asking for fewer (ports/events
   * ReadOptions): a flooding organisation's statements all yield to a quiet one's, its oldest
   * included (ranked by slot order, the flood's first slot kept rank 1 and shared the engine evenly
   * with the quiet organisation: B's p95 2.4-2.5x idle instead of the 2x aimed at,
   * docs/performance.md), and so do they while the slots' share holds the flood to one running
   * analysis (counting only the running ones, it would rank 1 like the quiet organisation's).
   */
  private engine<T>(project: ProjectScope, capped: boolean, work: (events: EventStore) => Promise<T>): Promise<T> {
    const org = project.org_id ?? 0;
    return this.slots.hold(org, () => {
      const tagged = taggedEvents(this.deps.events, `org=${org} project=${project.id}`, () => {
        const { running, waiting } = this.slots.load(org);
        return { rank: running + waiting, contended: this.slots.othersActive(org) };
      });
      return work(capped ? boundedEvents(tagged, this.deps.config.queryGuard) : tagged);
    });
  }
}
