import { sqlInt } from '../../../ports/events/index.js';
import type { EventStore } from '../../../ports/events/index.js';
import { dedupOf, type QueryContext } from '../../engine/context.js';
import type { DateRange } from '../../engine/range.js';
import type { FlowsResult } from '../../schema.js';

/** Joins path names for grouping inside the engine (split again in Node). */
const SEP = '\u001f';

export interface FlowsSpec {
  event: string;
  direction: 'after' | 'before';
  steps: number;
  limit: number;
}

/**
 * Flows semantics (mirrored by the reference evaluator):
 * - each identity with the anchor event in range contributes one path, from its first anchor;
 * - `after`: the anchor then the next `steps` events strictly later in time; `before`: the
 *   `steps` events strictly earlier, then the anchor; events ordered by (time, name), in range;
 * - paths are ranked by identities, then by path (joined names, ascending); `total` counts every
 *   identity with the anchor.
 */
export function flowsSql(q: QueryContext, f: FlowsSpec, range: DateRange, names?: string[]): string {
  const { d } = q;
  const anchor = q.events.condition(f.event);
  const where = [`time >= ${sqlInt(range.fromMs)}`, `time < ${sqlInt(range.toEndMs)}`];
  const props = q.events.needsProps(f.event);
  const ev = d.canonicalEvents({ projectId: q.projectId, overrides: q.overrides, key: true, where, props, dedup: dedupOf(q) });
  return d.flowPaths({
    projectId: q.projectId, fromMs: range.fromMs, toEndMs: range.toEndMs, events: ev, anchor, anchorName: f.event,
    direction: f.direction, steps: f.steps, limit: f.limit, sep: SEP, names,
  });
}

/** Identities with the anchor in range (reads the anchor's events only). */
export function flowsTotalSql(q: QueryContext, f: FlowsSpec, range: DateRange): string {
  const where = [`time >= ${sqlInt(range.fromMs)}`, `time < ${sqlInt(range.toEndMs)}`, q.events.condition(f.event)];
  return `SELECT ${q.d.uniq('cid')} AS total FROM ${q.d.canonicalEvents({ projectId: q.projectId, overrides: q.overrides, key: true, where, props: q.events.needsProps(f.event), dedup: false })} ev`;
}

export async function runFlows(events: EventStore, q: QueryContext, f: FlowsSpec, range: DateRange): Promise<FlowsResult> {
  const [rows, total] = await Promise.all([
    flowNamesOf(events, q, range).then((names) => events.query<{ p: string; n: number }>(flowsSql(q, f, range, names))),
    events.query<{ total: number }>(flowsTotalSql(q, f, range)),
  ]);
  return { paths: pathsOf(rows), total: Number(total[0]?.total ?? 0) };
}

/** The rows of flowsSql as paths: each path's names joined by SEP in `p`, its identities in `n`. */
export function pathsOf(rows: Array<{ p: string; n: number }>): FlowsResult['paths'] {
  return rows.map((r) => ({ path: String(r.p).split(SEP), count: Number(r.n) }));
}

/** The range's event names when the dialect wants them before the paths (Dialect.flowNames), unless too long to inline. */
export async function flowNamesOf(events: EventStore, q: QueryContext, range: DateRange): Promise<string[] | undefined> {
  const spec = q.d.flowNames;
  if (!spec) return undefined;
  const [row] = await events.query<{ a: string[] }>(spec.sql(q.projectId, range.fromMs, range.toEndMs));
  const names = row?.a ?? [];
  // Each name quoted, escaped and separated: at most twice its UTF-8 length plus 4.
  const bytes = names.reduce((n, name) => n + 2 * Buffer.byteLength(name) + 4, 0);
  return bytes <= spec.maxBytes ? names : undefined;
}
