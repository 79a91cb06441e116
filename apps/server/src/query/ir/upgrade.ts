import '../../http/route.js'; // registers `.openapi()` before ../schema.js declares its schemas
import type { z } from 'zod';
import { analysisNamed, guessAnalysis, irKindOf, IR_KINDS, type AnalysisName } from '../registry.js';
import { IR_VERSION, METRIC_IDS, type IrDocument, type IrIssue, type Metric } from './schema.js';
import { QueryV2Schema, type QueryV2 } from './document.js';
import { QueryV1Schema, V1AnalysisSchema, V1CalculatedMetricSchema, V1MetricSchema, type QueryV1 } from './versions.js';

/** The v0 types: the analyses of the registry, named by their endpoints. */
export type V0Type = AnalysisName;

export type UpgradeResult = { ok: true; query: QueryV2; warnings: string[] } | { ok: false; errors: IrIssue[] };

/**
 * Any stored or sent query document → the current IR (v2). v1 and v2 documents carry `v`; a
 * document without `v` is a v0 body of `/api/query/<type>` (`opts.type`, else guessed from its
 * members). A document valid in its own version always upgrades: pairings a later version made
 * illegal are repaired and each repair is reported in `warnings`. Errors come with dotted paths;
 * resolve-time errors (references, positions, versions) carry a `code`. Pure: no I/O.
 */
export function upgradeQuery(doc: unknown, opts: { type?: V0Type } = {}): UpgradeResult {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return fail([{ path: '', message: 'the query must be a JSON object' }]);
  const d = doc as Record<string, unknown>;
  const warnings: string[] = [];
  let v2: unknown;
  if (!('v' in d) || d.v === undefined) {
    const r = fromV0(d, opts.type ?? guessAnalysis(d));
    if (!r.ok) return r;
    v2 = r.doc;
  } else if (d.v === 1) {
    const r = readV1(d, warnings);
    if (!r.ok) return fail(r.errors);
    const up = fromV1(r.query, r.extras, warnings);
    // A carried-over member that v2 reads but that does not resolve (a letter naming no metric)
    // is dropped again, with a warning, instead of failing a document valid in its version.
    const firstTry = checkV2(up.doc);
    if (firstTry.ok || up.carried.length === 0) return firstTry.ok ? { ...firstTry, warnings } : firstTry;
    const bad = up.carried.filter((k) => firstTry.errors.some((e) => e.path === `analysis.${k}` || e.path.startsWith(`analysis.${k}.`)));
    if (bad.length === 0) return firstTry;
    const analysis = { ...(up.doc.analysis as Record<string, unknown>) };
    for (const k of bad) {
      warnings.push(`analysis.${k}: ${firstTry.errors.find((e) => e.path.startsWith(`analysis.${k}`))!.message}; dropped`);
      if (k in up.base) analysis[k] = up.base[k];
      else delete analysis[k];
    }
    const second = checkV2({ ...up.doc, analysis });
    return second.ok ? { ...second, warnings } : second;
  } else if (d.v === IR_VERSION) {
    v2 = d;
  } else {
    return fail([{ path: 'v', message: `unsupported version ${JSON.stringify(d.v)}: this server reads versions 0 (no v), 1 and ${IR_VERSION}`, code: 'unsupported_version' }]);
  }
  const r = checkV2(v2);
  return r.ok ? { ...r, warnings } : r;
}

/** A v2 document as the schema and the references check it. */
function checkV2(doc: unknown): UpgradeResult {
  const parsed = QueryV2Schema.safeParse(doc);
  if (!parsed.success) return fail(zodIssues(parsed.error));
  const resolveErrors = resolveIssues(parsed.data);
  if (resolveErrors.length) return fail(resolveErrors);
  return { ok: true, query: parsed.data, warnings: [] };
}

const ownMembers = (o: Record<string, unknown>, known: Record<string, unknown>, path: string, warnings: string[]) => {
  const kept: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (Object.prototype.hasOwnProperty.call(known, k)) kept[k] = v;
    else warnings.push(`${path}${k}: not a member of a query document; dropped`);
  }
  return kept;
};
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A v1 document read leniently: members neither v1 nor v2 has are dropped with a warning (v1's
 * grammar was never fixed, so a saved document may hold anything); members of a v1 analysis that
 * only v2 has (`window`, `born`, `anchor`, a compare object, flows' numeric `steps`) are set
 * aside as `extras` for fromV1 to carry over. Errors are those of members v1 itself has.
 */
function readV1(d: Record<string, unknown>, warnings: string[]): { ok: true; query: QueryV1; extras: Record<string, unknown> } | { ok: false; errors: IrIssue[] } {
  const doc = ownMembers(d, QueryV1Schema.shape, '', warnings);
  const errors: IrIssue[] = [];
  const metrics: unknown[] = [];
  if (Array.isArray(doc.metrics)) {
    doc.metrics.forEach((m, i) => {
      if (!isObject(m)) { errors.push({ path: `metrics.${i}`, message: 'a metric is an object' }); return; }
      const schema = m.kind === 'calculated' ? V1CalculatedMetricSchema : V1MetricSchema;
      const p = schema.safeParse(ownMembers(m, schema.shape, `metrics.${i}.`, warnings));
      if (p.success) metrics.push(p.data);
      else errors.push(...zodIssues(p.error, ['metrics', i]));
    });
  }
  const extras: Record<string, unknown> = {};
  let analysis = doc.analysis;
  if (isObject(analysis)) {
    const own: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(analysis)) {
      const v1Form = Object.prototype.hasOwnProperty.call(V1AnalysisSchema.shape, k) && !(k === 'steps' && !Array.isArray(v)) && !(k === 'compare' && typeof v !== 'boolean');
      if (v1Form) own[k] = v;
      else extras[k] = v;
    }
    analysis = own;
  }
  const p = QueryV1Schema.safeParse({ ...doc, ...(analysis === undefined ? {} : { analysis }) });
  if (!p.success) errors.push(...zodIssues(p.error));
  else if (!IR_KINDS.some((k) => k.kind === p.data.analysis.kind)) {
    errors.push({ path: 'analysis.kind', message: `unknown analysis kind: one of ${IR_KINDS.map((k) => k.kind).join(', ')}` });
  }
  if (errors.length || !p.success) return { ok: false, errors: errors.length ? errors : [{ path: '', message: 'invalid version 1 document' }] };
  return { ok: true, query: { ...p.data, metrics: metrics as QueryV1['metrics'] }, extras };
}

const fail = (errors: IrIssue[]): UpgradeResult => ({ ok: false, errors });

/** One entry per problem, dotted paths; unknown members get one entry each, named by their path. */
export function zodIssues(error: z.ZodError, prefix: Array<string | number> = []): IrIssue[] {
  const out: IrIssue[] = [];
  for (const i of error.issues) {
    const path = [...prefix, ...i.path.map((p) => (typeof p === 'symbol' ? String(p) : p))];
    if (i.code === 'unrecognized_keys') {
      for (const k of i.keys) out.push({ path: [...path, k].join('.'), message: 'unknown member' });
    } else if (fittingOption(i)) {
      out.push(...zodIssues({ issues: fittingOption(i)! } as z.ZodError, path));
    } else {
      out.push({ path: path.join('.'), message: i.message });
    }
  }
  return out;
}

type Issue = z.ZodError['issues'][number];

/**
 * The issues of the option of a failed union the value was meant for: an
 * option refusing the value's type, or missing one of its own members, is not it (a breakdown with
 * `cohorts` and no `property` is a cohort breakdown), so that option's own problems are reported
 * instead of "Invalid input". Paths are relative to the union's value.
 */
function fittingOption(i: Issue): Issue[] | undefined {
  const options = (i as { errors?: Issue[][] }).errors;
  if (i.code !== 'invalid_union' || !options) return undefined;
  const fits = options.filter((issues) => !issues.some((x) => x.code === 'invalid_type' && (x.path.length === 0 || (x.path.length === 1 && /received undefined$/.test(x.message)))));
  if (fits.length === 0) return undefined;
  // Several could be meant (`{property, cohorts}`): the fewest problems, all of those options' (each names the other's member).
  const fewest = Math.min(...fits.map((f) => f.length));
  return fits.filter((f) => f.length === fewest).flat();
}

/** Checks a schema-valid v2 document's references: what zod alone cannot see (the kind's own checks in its declaration). */
export function resolveIssues(q: QueryV2): IrIssue[] {
  const out: IrIssue[] = [];
  const ids = new Map<string, Metric>();
  q.metrics.forEach((m, i) => {
    if (ids.has(m.id)) out.push({ path: `metrics.${i}.id`, message: `metric id ${m.id} is used twice`, code: 'duplicate_id' });
    ids.set(m.id, m);
  });
  const ref = (id: string, path: string, needEvent: boolean) => {
    const m = ids.get(id);
    if (!m) out.push({ path, message: `no metric with id ${id}`, code: 'unknown_reference' });
    else if (needEvent && m.kind !== 'event') out.push({ path, message: `metric ${id} is a ${m.kind} metric; only event metrics can be used here`, code: 'illegal_position' });
  };
  irKindOf(q.analysis.kind).resolve(q as IrDocument<never>, ref, out);
  return out;
}

const absolute = (from: unknown, to: unknown) => ({ kind: 'absolute' as const, from: typeof from === 'string' ? from : JSON.stringify(from ?? null), to: typeof to === 'string' ? to : JSON.stringify(to ?? null) });

/** v0 bodies → v2, by the analysis's declaration. Invalid v0 bodies fail with their own schema's paths. Dates are kept as sent. */
function fromV0(body: Record<string, unknown>, type: V0Type): { ok: true; doc: unknown } | { ok: false; errors: IrIssue[] } {
  const { projectId: _projectId, ...doc } = body;
  const def = analysisNamed(type);
  const p = def.body.safeParse(doc);
  if (!p.success) return { ok: false, errors: zodIssues(p.error) };
  const { from, to, dateRange } = p.data as { from: unknown; to: unknown; dateRange?: unknown };
  return { ok: true, doc: { v: IR_VERSION, dateRange: dateRange ?? absolute(from, to), ...def.toIr(p.data) } };
}

const V1_OPS: Record<string, string> = { total: 'count', unique: 'unique', median: 'p50' };

/** The v1 member a carried-over v2 member takes the place of. */
const SUPERSEDES: Record<string, string> = { window: 'windowDays', steps: 'depth' };

/**
 * v1 → v2, repairing what v2 refuses and saying so. `extras` (v2 members of the analysis) are
 * carried over when the kind's v2 analysis has them and their value is valid there, else dropped
 * with a warning. `base`: the analysis as v1's own members make it (what a carried member replaced).
 */
function fromV1(q: QueryV1, extras: Record<string, unknown>, warnings: string[]): { doc: Record<string, unknown>; base: Record<string, unknown>; carried: string[] } {
  const a = q.analysis;
  const ids = q.metrics.map((m, i) => m.id ?? METRIC_IDS[i]);
  const metrics = q.metrics.map((m, i) => {
    if (m.kind === 'calculated') return { ...m, id: ids[i] };
    if (m.aggregation) {
      // A v2 aggregation wins over v1's math and property.
      if (m.math !== undefined) warnings.push(`metrics.${i}.math: superseded by metrics.${i}.aggregation; dropped`);
      if (m.property !== undefined) warnings.push(`metrics.${i}.property: superseded by metrics.${i}.aggregation; dropped`);
      return {
        id: ids[i], kind: 'event', event: m.event, ...(m.filters?.length ? { filters: m.filters } : {}), aggregation: m.aggregation, ...(m.name ? { name: m.name } : {}),
      };
    }
    const math = m.math ?? 'total';
    let op = V1_OPS[math] ?? math;
    if (op !== 'count' && op !== 'unique' && !m.property) {
      warnings.push(`metrics.${i}: math ${math} without a property counted events in v1; now aggregation count`);
      op = 'count';
    } else if ((op === 'count' || op === 'unique') && m.property) {
      warnings.push(`metrics.${i}.property: ignored by math ${math} in v1; dropped`);
    }
    return {
      id: ids[i], kind: 'event', event: m.event, ...(m.filters?.length ? { filters: m.filters } : {}),
      aggregation: op === 'count' || op === 'unique' ? { op } : { op, property: m.property }, ...(m.name ? { name: m.name } : {}),
    };
  });
  const dateRange = typeof q.dateRange === 'string' ? { kind: 'preset', preset: q.dateRange } : 'kind' in q.dateRange ? q.dateRange : { kind: 'absolute', ...q.dateRange };
  const dropped = (member: string, why: string) => warnings.push(`analysis.${member}: ${why}; dropped`);
  const kind = irKindOf(a.kind);
  const analysis = kind.fromV1(a, {
    ids, warnings, dropped, extras,
    compare: a.compare ? { compare: { kind: 'previous_period' } } : {},
    chart: (allowed) => {
      if (a.chart === undefined) return {};
      if (allowed.includes(a.chart)) return { chart: a.chart };
      warnings.push(`analysis.chart: ${JSON.stringify(a.chart)} is not a ${a.kind} chart; the default is used`);
      return {};
    },
  });
  const base = { ...analysis };
  const carried: string[] = [];
  const shape = kind.analysis.shape as Record<string, z.ZodType>;
  for (const [k, v] of Object.entries(extras)) {
    const member = k === 'kind' ? undefined : shape[k];
    if (!member) { dropped(k, `a ${a.kind} analysis has no such member`); continue; }
    const p = member.safeParse(v);
    if (!p.success) { dropped(k, `not valid in version ${IR_VERSION} (${p.error.issues[0]?.message ?? 'invalid'})`); continue; }
    const replaced = SUPERSEDES[k];
    if (replaced && replaced in a) dropped(replaced, `superseded by analysis.${k}`);
    analysis[k] = v;
    carried.push(k);
  }
  const breakdown = q.breakdown ? { breakdown: typeof q.breakdown === 'string' ? { property: q.breakdown } : q.breakdown } : {};
  return { doc: { v: IR_VERSION, dateRange, ...(q.filters?.length ? { filters: q.filters } : {}), metrics, ...breakdown, analysis }, base, carried };
}
