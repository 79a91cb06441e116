/**
 * Reference evaluator: plain TypeScript, slow and obviously right. Used only by tests, to check
 * the SQL compiled for DuckDB and ClickHouse on generated and hand-written datasets.
 * Semantics are documented in docs/analyses.md and in the compilers' comments.
 */
export interface RefEvent { event: string; distinct_id: string; time: number; insert_id: string; props: Record<string, string> }
export interface RefLink { distinct_id: string; canonical_id: string; from_time: number }
export interface RefProfile { distinct_id: string; props: Record<string, string>; deleted?: boolean }
export interface RefFilter { key: string; op: 'eq' | 'neq' | 'contains' | 'set' | 'not_set'; value?: string }
export type RefUnit = 'hour' | 'day' | 'week' | 'month';
export interface RefData { events: RefEvent[]; links: RefLink[]; profiles?: RefProfile[]; derived?: Record<string, Array<{ event: string; filters?: RefFilter[] }>> }
export interface RefRange { fromMs: number; toEndMs: number }

const DAY = 86_400_000;
const HOUR = 3_600_000;
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export function dedup(events: RefEvent[]): RefEvent[] {
  const seen = new Map<string, RefEvent>();
  for (const e of events) seen.set(JSON.stringify([e.event, e.time, e.distinct_id, e.insert_id]), e);
  return [...seen.values()];
}

export function cidOf(data: RefData, e: { distinct_id: string; time: number }): string {
  const l = data.links.find((x) => x.distinct_id === e.distinct_id);
  return l && e.time >= l.from_time ? l.canonical_id : e.distinct_id;
}

export function matchFilter(props: Record<string, string>, f: RefFilter): boolean {
  const has = Object.prototype.hasOwnProperty.call(props, f.key);
  switch (f.op) {
    case 'set': return has;
    case 'not_set': return !has;
    case 'eq': return has && props[f.key] === f.value;
    case 'neq': return !(has && props[f.key] === f.value);
    case 'contains': return has && props[f.key].includes(f.value ?? '');
  }
}
const matchAll = (props: Record<string, string>, fs?: RefFilter[]) => (fs ?? []).every((f) => matchFilter(props, f));

export function matchEvent(data: RefData, name: string, e: RefEvent): boolean {
  if (name === '$all_events') return true;
  const d = data.derived?.[name];
  if (d) return d.some((s) => (s.event === '$all_events' || s.event === e.event) && matchAll(e.props, s.filters));
  return e.event === name;
}

export function bucketStart(unit: RefUnit, ms: number): number {
  if (unit === 'hour') return Math.floor(ms / HOUR) * HOUR;
  if (unit === 'day') return Math.floor(ms / DAY) * DAY;
  if (unit === 'week') {
    let day = Math.floor(ms / DAY);
    while (new Date(day * DAY).getUTCDay() !== 1) day--;
    return day * DAY;
  }
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}
function buckets(unit: RefUnit, r: RefRange): number[] {
  const out: number[] = [];
  for (let t = r.fromMs; t < r.toEndMs; t += HOUR) {
    const b = bucketStart(unit, t);
    if (out[out.length - 1] !== b) out.push(b);
  }
  return out;
}
export function label(unit: RefUnit, b: number): string {
  const iso = new Date(b).toISOString();
  return unit === 'hour' ? `${iso.slice(0, 13)}:00:00Z` : iso.slice(0, 10);
}

interface CEvent extends RefEvent { cid: string }
function inRange(data: RefData, r: RefRange, end = r.toEndMs): CEvent[] {
  return dedup(data.events).filter((e) => e.time >= r.fromMs && e.time < end).map((e) => ({ ...e, cid: cidOf(data, e) }));
}

/**
 * An event's breakdown segment: one property's value (undefined when the event lacks it), or,
 * with several properties, each value (`(none)` where missing) joined with " / ": every event has one.
 */
export function segmentOf(props: Record<string, string>, breakdown: string | readonly string[]): string | undefined {
  if (typeof breakdown === 'string') return breakdown in props ? props[breakdown] : undefined;
  if (breakdown.length === 1) return segmentOf(props, breakdown[0]);
  return breakdown.map((p) => (p in props ? props[p] : '(none)')).join(' / ');
}

export function segmentation(data: RefData, q: { event: string; unit: RefUnit; type: 'total' | 'unique'; breakdown?: string | readonly string[]; filters?: RefFilter[] }, r: RefRange) {
  const evs = inRange(data, r).filter((e) => matchEvent(data, q.event, e) && matchAll(e.props, q.filters));
  const bs = buckets(q.unit, r);
  const series = new Map<string, { name: string; per: Map<number, CEvent[]> }>();
  if (!q.breakdown) series.set('all', { name: q.event, per: new Map() });
  for (const e of evs) {
    const value = q.breakdown === undefined ? undefined : segmentOf(e.props, q.breakdown);
    const key = !q.breakdown ? 'all' : value !== undefined ? `v:${value}` : 'missing';
    const s = series.get(key) ?? { name: !q.breakdown ? q.event : value !== undefined ? value : '(none)', per: new Map() };
    const b = bucketStart(q.unit, e.time);
    s.per.set(b, [...(s.per.get(b) ?? []), e]);
    series.set(key, s);
  }
  const value = (list: CEvent[] = []) => (q.type === 'total' ? list.length : new Set(list.map((e) => e.cid)).size);
  // `total`: the series over the whole range (unique identities counted once, not per bucket).
  const out = [...series.values()].map((s) => ({ name: s.name, data: bs.map((b) => ({ bucket: label(q.unit, b), value: value(s.per.get(b)) })), total: value([...s.per.values()].flat()) }));
  const sum = (s: (typeof out)[number]) => s.data.reduce((a, x) => a + x.value, 0);
  out.sort((a, b) => sum(b) - sum(a) || cmp(a.name, b.name));
  return { buckets: bs.map((b) => label(q.unit, b)), series: out };
}

export function funnel(data: RefData, q: { steps: string[]; windowDays: number; breakdown?: string; filters?: RefFilter[] }, r: RefRange) {
  const W = q.windowDays * DAY;
  const evs = inRange(data, r).filter((e) => matchAll(e.props, q.filters) && q.steps.some((s) => matchEvent(data, s, e)));
  const byId = new Map<string, CEvent[]>();
  for (const e of evs) byId.set(e.cid, [...(byId.get(e.cid) ?? []), e]);
  const ids: Array<{ cid: string; level: number; seg: string; times: number[] }> = [];
  for (const [cid, list] of byId) {
    let best: { level: number; t0: number; seg: string; times: number[] } | undefined;
    for (const s of list.filter((e) => matchEvent(data, q.steps[0], e))) {
      const times = [s.time];
      for (let k = 1; k < q.steps.length; k++) {
        const prev = times[k - 1];
        const cands = list.filter((e) => matchEvent(data, q.steps[k], e) && e.time > prev && e.time <= s.time + W).map((e) => e.time);
        if (cands.length === 0) break;
        times.push(Math.min(...cands));
      }
      const seg = q.breakdown && q.breakdown in s.props ? '1' + s.props[q.breakdown] : '0';
      const cand = { level: times.length, t0: s.time, seg, times };
      if (!best || cand.level > best.level || (cand.level === best.level && (cand.t0 < best.t0 || (cand.t0 === best.t0 && cmp(cand.seg, best.seg) < 0)))) best = cand;
    }
    if (best) ids.push({ cid, ...best });
  }
  const count = (k: number, seg?: string) => ids.filter((i) => i.level > k && (seg === undefined || i.seg === seg)).length;
  const segs = [...new Set(q.breakdown ? ids.map((i) => i.seg) : [])].sort((a, b) => count(0, b) - count(0, a) || cmp(a, b));
  const ratio = (a: number, b: number) => (b > 0 ? a / b : 0);
  const round3 = (x: number) => Math.round(x * 1000) / 1000;
  return q.steps.map((event, k) => {
    const c = count(k);
    const prev = k === 0 ? c : count(k - 1);
    const durs = ids.filter((i) => i.level > k).map((i) => i.times[k] - i.times[0]).sort((a, b) => a - b);
    const median = durs.length ? (durs[Math.floor((durs.length - 1) / 2)] + durs[Math.floor(durs.length / 2)]) / 2 : null;
    return {
      event, count: c,
      conversionFromPrevious: k === 0 ? (c > 0 ? 1 : 0) : ratio(c, prev),
      conversionFromStart: ratio(c, count(0)),
      droppedCount: k === 0 ? 0 : prev - c,
      dropoffRate: k === 0 ? 0 : ratio(prev - c, prev),
      convertedUserIds: ids.filter((i) => i.level > k).map((i) => i.cid).sort(cmp).slice(0, 1000),
      droppedUserIds: k === 0 ? [] : ids.filter((i) => i.level === k).map((i) => i.cid).sort(cmp).slice(0, 1000),
      segments: segs.map((sg) => ({ name: sg === '0' ? '(none)' : sg.slice(1), count: count(k, sg), conversionFromStart: ratio(count(k, sg), count(0, sg)) })),
      meanSecondsToConvert: k === 0 || c === 0 ? null : round3(durs.reduce((a, b) => a + b, 0) / durs.length / 1000),
      medianSecondsToConvert: k === 0 || median === null ? null : round3(median / 1000),
    };
  });
}

export function retention(data: RefData, q: { bornEvent: string; returnEvent: string; unit: 'day' | 'week'; buckets: number }, r: RefRange) {
  const unitMs = q.unit === 'day' ? DAY : 7 * DAY;
  const bs = buckets(q.unit, r);
  const evs = inRange(data, r, bs[bs.length - 1] + q.buckets * unitMs);
  const born = new Map<string, number>();
  for (const e of evs) if (e.time < r.toEndMs && matchEvent(data, q.bornEvent, e)) born.set(e.cid, Math.min(born.get(e.cid) ?? Infinity, e.time));
  return bs.map((b) => {
    const members = [...born].filter(([, t]) => bucketStart(q.unit, t) === b);
    const counts = Array.from({ length: q.buckets }, (_, i) =>
      members.filter(([cid, bt]) => evs.some((e) => e.cid === cid && matchEvent(data, q.returnEvent, e) && e.time > bt && (bucketStart(q.unit, e.time) - b) / unitMs === i)).length);
    return { cohort: label(q.unit, b), size: members.length, counts };
  });
}

export function flows(data: RefData, q: { event: string; direction: 'after' | 'before'; steps: number; limit: number }, r: RefRange) {
  const evs = inRange(data, r);
  const byId = new Map<string, CEvent[]>();
  for (const e of evs) byId.set(e.cid, [...(byId.get(e.cid) ?? []), e]);
  const paths = new Map<string, number>();
  let total = 0;
  for (const list of byId.values()) {
    const anchors = list.filter((e) => matchEvent(data, q.event, e));
    if (!anchors.length) continue;
    total++;
    const ta = Math.min(...anchors.map((e) => e.time));
    const sorted = [...list].sort((a, b) => a.time - b.time || cmp(a.event, b.event));
    const path = q.direction === 'after'
      ? [q.event, ...sorted.filter((e) => e.time > ta).slice(0, q.steps).map((e) => e.event)]
      : [...sorted.filter((e) => e.time < ta).slice(-q.steps).map((e) => e.event), q.event];
    const key = path.join('\u001f');
    paths.set(key, (paths.get(key) ?? 0) + 1);
  }
  const ranked = [...paths].sort((a, b) => b[1] - a[1] || cmp(a[0], b[0])).slice(0, q.limit);
  return { paths: ranked.map(([p, n]) => ({ path: p.split('\u001f'), count: n })), total };
}

export function sessions(data: RefData, q: { unit: RefUnit }, r: RefRange) {
  const evs = inRange(data, r);
  const byId = new Map<string, number[]>();
  for (const e of evs) byId.set(e.cid, [...(byId.get(e.cid) ?? []), e.time]);
  const per = new Map<number, number[]>();
  for (const ts of byId.values()) {
    ts.sort((a, b) => a - b);
    let start = ts[0];
    let last = ts[0];
    const close = () => { const b = bucketStart(q.unit, start); per.set(b, [...(per.get(b) ?? []), last - start]); };
    for (const t of ts.slice(1)) {
      if (t - last >= 30 * 60 * 1000) { close(); start = t; }
      last = t;
    }
    close();
  }
  return {
    series: buckets(q.unit, r).map((b) => {
      const d = per.get(b) ?? [];
      return { bucket: label(q.unit, b), sessions: d.length, avgDurationSec: d.length ? Math.round(d.reduce((a, x) => a + x, 0) / d.length) / 1000 : 0 };
    }),
  };
}

export type RefCriterion =
  | { kind: 'property'; filter: RefFilter }
  | { kind: 'behavior'; event: string; op: 'gte' | 'lte' | 'gt' | 'lt' | 'eq'; count: number; windowDays: number };

export function cohortMembers(data: RefData, def: { op: 'and' | 'or'; criteria: RefCriterion[] }, now: number): string[] {
  const evs = dedup(data.events).map((e) => ({ ...e, cid: cidOf(data, e) }));
  const profileCid = (p: RefProfile) => data.links.find((l) => l.distinct_id === p.distinct_id)?.canonical_id ?? p.distinct_id;
  const profiles = (data.profiles ?? []).filter((p) => !p.deleted).map((p) => ({ ...p, cid: profileCid(p) }));
  const universe = new Set([...evs.map((e) => e.cid), ...profiles.map((p) => p.cid)]);
  const holds = (cid: string, c: RefCriterion): boolean => {
    if (c.kind === 'property') {
      const negated = c.filter.op === 'neq' || c.filter.op === 'not_set';
      const pos: RefFilter = c.filter.op === 'neq' ? { ...c.filter, op: 'eq' } : c.filter.op === 'not_set' ? { ...c.filter, op: 'set' } : c.filter;
      const any = profiles.some((p) => p.cid === cid && matchFilter(p.props, pos));
      return negated ? !any : any;
    }
    const n = evs.filter((e) => e.cid === cid && matchEvent(data, c.event, e) && (c.windowDays === 0 || e.time >= now - c.windowDays * DAY)).length;
    return { gte: n >= c.count, lte: n <= c.count, gt: n > c.count, lt: n < c.count, eq: n === c.count }[c.op];
  };
  return [...universe].filter((cid) => (def.op === 'and' ? def.criteria.every((c) => holds(cid, c)) : def.criteria.some((c) => holds(cid, c)))).sort(cmp);
}

/**
 * The dataset an analysis sees under cohort conditions: only the events whose canonical identity
 * is (`in`) or is not (`not_in`) among each condition's members (cohortMembers' answer).
 */
export function cohortScoped(data: RefData, conds: Array<{ members: readonly string[]; op: 'in' | 'not_in' }>): RefData {
  const sets = conds.map((c) => ({ set: new Set(c.members), op: c.op }));
  return { ...data, events: data.events.filter((e) => sets.every((c) => c.set.has(cidOf(data, e)) === (c.op === 'in'))) };
}
