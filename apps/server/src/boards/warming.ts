import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import client from 'prom-client';
import type { Deps } from '../deps.js';
import type { Services } from '../services.js';
import { pollingLoop, type BackgroundLoop } from '../background/loop.js';
import { registry } from '../metrics/registry.js';
import { analysisMetadata } from '../query/analyses.js';
import { DataVersions, sha, stable } from '../results-cache/index.js';
import { dayOf, LAST_DAY } from '../results-cache/versions.js';
import { runReport } from '../reports/run.js';
import { reportPropertyKeys } from '../reports/property-keys.js';
import { cardViews, type CardView } from './cards.js';
import type { ViewedBoard } from './views.js';

const DAY_MS = 86_400_000;
/** Boards viewed within this long are warmed. */
export const WARM_VIEWED_WITHIN_MS = 7 * DAY_MS;
/**
 * How long a worker's claim on a project lasts (board_warm_state): a project's warming is bounded
 * (BOARD_WARM_MAX_CARDS_PER_PASS cards, each under the query timeout), so a claim still held after
 * this long is a dead worker's, and another takes the project over.
 */
export const WARM_CLAIM_MS = 10 * 60_000;

export const boardWarmMetrics = {
  cards: new client.Counter({
    name: 'tally_board_warm_cards_total',
    help: 'Board cards the worker ran to warm the results cache, by outcome: computed (the engine ran), cached (already warm), error',
    labelNames: ['outcome'] as const, registers: [registry],
  }),
  duration: new client.Histogram({
    name: 'tally_board_warm_pass_duration_seconds',
    help: 'Time one warming pass took, projects without changes included',
    registers: [registry],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
  }),
  engineSeconds: new client.Counter({
    name: 'tally_board_warm_engine_seconds_total',
    help: 'Seconds warming spent computing cards (the engine share warming takes)',
    registers: [registry],
  }),
};

/** What one pass did. */
export interface WarmPass {
  /** Projects with boards viewed in the last 7 days. */
  projects: number;
  /** Of those, the ones whose data, definitions, boards and day were as at their last complete warming (by any worker). */
  unchanged: number;
  /** Of those, the ones another worker was warming (its claim held): left to it. */
  claimed: number;
  computed: number;
  cached: number;
  failed: number;
  /** Milliseconds spent on the computed cards. */
  engineMs: number;
}

type ReportCard = Extract<CardView, { card_type: 'report' }>;

/**
 * Warms the results cache with the cards of the boards people viewed in the last 7 days
 * (views.ts), so a board opened on any API process answers from the cache. A project is
 * skipped when nothing its answers depend on changed since its last complete warming by any
 * worker: its data versions (results-cache/versions.ts), its derived events, calculated metrics
 * and annotations, its viewed boards' versions, and the day (relative ranges move at midnight).
 *
 * That state lives in the metadata store (`board_warm_state`), shared by every worker process
 * and kept across restarts; a worker warms a project only under its claim there (one conditional
 * update: no claim held, or an expired one, and the state not already current), so two workers
 * never warm one project at once but do share out different projects; a pass releases each claim
 * when done with its project, and a dead worker's claim expires after WARM_CLAIM_MS.
 *
 * Projects go in the order of their latest view, boards most recently viewed first, and cards
 * one at a time, through the query executor like a person's run (slot of the organisation, cost
 * guard, results cache: a card still warm costs no engine statement); at most
 * `maxCardsPerProject` cards are computed per project and pass (the rest next pass). A card that
 * fails is counted and logged; the others still run, and the project is tried again next pass.
 */
export class BoardWarmer {
  /** This warmer's name in its claims: the host, the process and an id of its own. */
  readonly id = `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private versions: DataVersions;
  private metadataOf: (projectId: number) => Promise<unknown>;

  constructor(private deps: Pick<Deps, 'db' | 'log' | 'config'>, private services: Pick<Services, 'executor' | 'boards' | 'boardViews' | 'analyses' | 'properties'>) {
    this.versions = new DataVersions(deps.db);
    this.metadataOf = analysisMetadata(services.analyses);
  }

  async pass(now = Date.now(), stopping: () => boolean = () => false): Promise<WarmPass> {
    const started = performance.now();
    const out: WarmPass = { projects: 0, unchanged: 0, claimed: 0, computed: 0, cached: 0, failed: 0, engineMs: 0 };
    await this.services.boardViews.prune(now - WARM_VIEWED_WITHIN_MS);
    const byProject = new Map<number, ViewedBoard[]>();
    for (const v of await this.services.boardViews.since(now - WARM_VIEWED_WITHIN_MS)) {
      byProject.set(v.projectId, [...(byProject.get(v.projectId) ?? []), v]);
    }
    out.projects = byProject.size;
    // States of projects no longer viewed go (unless claimed now: a worker with a newer view list).
    await this.deps.db('board_warm_state').whereNotIn('project_id', [...byProject.keys()])
      .andWhere((w) => w.whereNull('claim_until').orWhere('claim_until', '<', Date.now())).delete();
    for (const [projectId, viewed] of byProject) {
      if (stopping()) break;
      try {
        await this.warmProject(projectId, viewed, now, out, stopping);
      } catch (err) {
        // The project went meanwhile, or the metadata store failed: the others still run.
        out.failed++;
        this.deps.log.error('board warming: project failed', { projectId, err: String(err) });
      }
    }
    boardWarmMetrics.duration.observe((performance.now() - started) / 1000);
    return out;
  }

  private async warmProject(projectId: number, viewed: ViewedBoard[], now: number, out: WarmPass, stopping: () => boolean): Promise<void> {
    const boards = (await Promise.all(viewed.map((v) => this.services.boards.get(v.boardId)))).filter((b) => b !== undefined);
    const [data, meta] = await Promise.all([this.versions.signature(projectId, 0, LAST_DAY), this.metadataOf(projectId)]);
    const state = sha(stable({ data, meta, boards: boards.map((b) => [b.id, b.version]), day: dayOf(now) }));
    const claim = await this.claim(projectId, state);
    if (claim !== 'mine') {
      out[claim]++;
      return;
    }
    let complete = true;
    try {
      complete = await this.warmCards(projectId, boards, now, out, stopping);
    } catch (err) {
      complete = false;
      throw err;
    } finally {
      // Released with the state reached (null when some card is not warm: tried again next pass).
      await this.deps.db('board_warm_state').where({ project_id: projectId, claimed_by: this.id })
        .update({ state: complete ? state : null, warmed_at: Date.now(), claimed_by: null, claim_until: null });
    }
  }

  /**
   * Takes the project for this pass: one conditional update (no claim held, or an expired one,
   * and the stored state not `state` already), so of two workers at once one gets it. Answers
   * `unchanged` (warm as it is) or `claimed` (another worker is warming it) otherwise.
   */
  private async claim(projectId: number, state: string): Promise<'mine' | 'unchanged' | 'claimed'> {
    const db = this.deps.db;
    await db('board_warm_state').insert({ project_id: projectId }).onConflict('project_id').ignore();
    const nowMs = Date.now();
    const n = await db('board_warm_state').where({ project_id: projectId })
      .andWhere((w) => w.whereNull('claim_until').orWhere('claim_until', '<', nowMs))
      .andWhere((w) => w.whereNull('state').orWhereNot('state', state))
      .update({ claimed_by: this.id, claim_until: nowMs + WARM_CLAIM_MS });
    if (n > 0) return 'mine';
    const row = await db('board_warm_state').where({ project_id: projectId }).first();
    return row?.state === state ? 'unchanged' : 'claimed';
  }

  /** The cards of the project's viewed boards, at most maxCardsPerProject computed; answers whether every card is warm. */
  private async warmCards(projectId: number, boards: Array<NonNullable<Awaited<ReturnType<Services['boards']['get']>>>>, now: number, out: WarmPass, stopping: () => boolean): Promise<boolean> {
    const scope = await this.services.executor.scopeOf(projectId);
    const runner = { executor: this.services.executor, config: this.deps.config };
    const max = this.deps.config.boardWarm.maxCardsPerProject;
    let computed = 0;
    let complete = true;
    for (const board of boards) {
      const cards = (await cardViews(this.deps.db, await this.services.boards.cards([board.id]))).filter((c): c is ReportCard => c.card_type === 'report');
      // The event properties the board's cards filter on and break down by, materialised (DuckDB)
      // before they run, so this pass and the views after it read columns, not the key/value lists.
      const override = { dateRange: board.date_range, filters: board.filters };
      if (!stopping()) await this.services.properties.request(scope.org_id, cards.flatMap((c) => reportPropertyKeys(runner, c.report, override, now)), 'board');
      for (const card of cards) {
        if (computed >= max || stopping()) {
          complete = false;
          break;
        }
        const t0 = performance.now();
        try {
          // As the board's run route runs it (board range and filters over the report's), so a view finds this entry.
          const r = await runReport(runner, scope, card.report, override, now);
          if (r.cached_at !== undefined) {
            out.cached++;
            boardWarmMetrics.cards.inc({ outcome: 'cached' });
          } else {
            const ms = performance.now() - t0;
            computed++;
            out.computed++;
            out.engineMs += ms;
            boardWarmMetrics.cards.inc({ outcome: 'computed' });
            boardWarmMetrics.engineSeconds.inc(ms / 1000);
          }
        } catch (err) {
          complete = false;
          out.failed++;
          boardWarmMetrics.cards.inc({ outcome: 'error' });
          this.deps.log.info('board warming: card failed', { projectId, boardId: board.id, cardId: card.id, err: err instanceof Error ? err.message : String(err) });
        }
      }
      if (!complete && (computed >= max || stopping())) break;
    }
    return complete;
  }
}

/**
 * The worker's warming loop: a pass every BOARD_WARM_INTERVAL_MS (0: off); processes sharing the
 * metadata store share out its projects (a claim per project and pass, board_warm_state). Useful only where the cache it fills is the one the API reads:
 * the shared table (RESULTS_CACHE=shared), or this process's memory when API and worker are one
 * process (the embedded mode).
 */
export function boardWarmingLoop(deps: Deps, services: Services): BackgroundLoop[] {
  const { intervalMs } = deps.config.boardWarm;
  if (!intervalMs) return [];
  const warmer = new BoardWarmer(deps, services);
  return [pollingLoop('board-warming', { firstDelayMs: Math.min(intervalMs, 60_000), intervalMs }, async (stopping) => {
    const pass = await warmer.pass(Date.now(), stopping);
    if (pass.computed || pass.failed) deps.log.info('board warming: pass done', { ...pass, engineMs: Math.round(pass.engineMs) });
  }, (err) => deps.log.error('board warming: pass failed', { err: String(err) }))];
}
