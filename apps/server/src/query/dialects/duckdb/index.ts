import { sqlInt, sqlString } from '../../../ports/events/index.js';
import { NO_MATERIALIZED, PERSON_KEY_SQL } from '../../../ports/events/schema.js';
import { materializedColumn, type Dialect, type Unit } from '../dialect.js';
import { sessions } from './sessions.js';
import { funnelPaths } from './funnel.js';
import { flowPaths } from './flows.js';
import { data } from './data.js';

/** The links not yet folded into the events' person_id: the only ones a read joins (see the ClickHouse dialect). */
const unfoldedLinks = (projectId: number) =>
  `(SELECT distinct_id, canonical_id, from_time FROM identity_links WHERE project_id = ${sqlInt(projectId)} AND folded = 0)`;

/** DuckDB spelling of the same shapes (list functions, arrow lambdas, ordered aggregates). */
export const duckdb: Dialect = {
  name: 'duckdb',
  materialized: NO_MATERIALIZED,
  str: (v) => sqlString('duckdb', v),
  // A materialised column is NULL without the key, as list indexing answers then.
  propValue(key, keys = 'prop_keys', values = 'prop_values') {
    const column = materializedColumn(this, key, keys);
    return column ?? `${values}[list_position(${keys}, ${sqlString('duckdb', key)})]`;
  },
  propHas(key, keys = 'prop_keys') {
    const column = materializedColumn(this, key, keys);
    return column ? `(${column} IS NOT NULL)` : `list_contains(${keys}, ${sqlString('duckdb', key)})`;
  },
  propValueOr(key, missing) {
    return `coalesce(${this.propValue(key)}, ${missing})`;
  },
  propIsNumber(key) {
    return `coalesce(${this.propHas(key)} AND regexp_full_match(${this.propValue(key)}, '-?[0-9]+([.][0-9]+)?'), false)`;
  },
  propNumber(key) {
    return `coalesce(TRY_CAST(${this.propValue(key)} AS DOUBLE), 0)`;
  },
  contains: (h, n) => `coalesce(strpos(${h}, ${n}) > 0, false)`,
  canonicalEvents({ projectId, where, props, identity = true, overrides = true, key = false, cols: extra = [], exprs = [] }) {
    // DuckDB deduplicates at write: `dedup` needs nothing here.
    const pass = [...(props ? ['prop_keys', 'prop_values', ...this.materialized.values()] : []), ...extra.filter((c) => c !== 'distinct_id'), ...exprs.map(([a]) => a)];
    const cols = ['event', 'time', 'distinct_id', ...pass.slice(0, pass.length - exprs.length), ...exprs.map(([a, e]) => `${e} AS ${a}`)];
    const conds = [`project_id = ${sqlInt(projectId)}`, ...where];
    const tail = (p: string) => [...pass, ...(extra.includes('distinct_id') ? ['distinct_id'] : [])].map((c) => `, ${p}${c}`).join('');
    if (!identity) return `(SELECT event, time, distinct_id AS cid${tail('')} FROM (SELECT ${cols.join(', ')} FROM events WHERE ${conds.map((c) => `(${c})`).join(' AND ')}) e)`;
    const person = key ? 'person_key' : 'person_id';
    if (!overrides) return `(SELECT event, time, ${person} AS cid${tail('')} FROM (SELECT ${cols.filter((c) => c !== 'distinct_id' || extra.includes(c)).join(', ')}, ${person} FROM events WHERE ${conds.map((c) => `(${c})`).join(' AND ')}) e)`;
    const linked = '(CASE WHEN e.time >= l.from_time THEN l.canonical_id ELSE e.distinct_id END)';
    return `(SELECT e.event, e.time, CASE WHEN l.canonical_id IS NOT NULL THEN ${key ? PERSON_KEY_SQL.duckdb(linked) : linked}
        ELSE e.${person} END AS cid${tail('e.')}
      FROM (SELECT ${cols.join(', ')}, ${person} FROM events WHERE ${conds.map((c) => `(${c})`).join(' AND ')}) e
      LEFT JOIN ${unfoldedLinks(projectId)} l USING (distinct_id))`;
  },
  canonicalIds(projectId, where, overrides = true) {
    const conds = [`project_id = ${sqlInt(projectId)}`, ...where].map((c) => `(${c})`).join(' AND ');
    if (!overrides) return `(SELECT DISTINCT person_id AS cid FROM events WHERE ${conds})`;
    return `(SELECT unnest(CASE WHEN l.canonical_id IS NULL THEN [e.person_id]
        ELSE list_concat(CASE WHEN e.mx >= l.from_time THEN [l.canonical_id] ELSE []::VARCHAR[] END,
          CASE WHEN e.mn < l.from_time THEN [e.distinct_id] ELSE []::VARCHAR[] END) END) AS cid
      FROM (SELECT distinct_id, person_id, min(time) AS mn, max(time) AS mx FROM events WHERE ${conds} GROUP BY distinct_id, person_id) e
      LEFT JOIN ${unfoldedLinks(projectId)} l USING (distinct_id))`;
  },
  canonicalProfiles(projectId, where = []) {
    const conds = [`project_id = ${sqlInt(projectId)}`, ...where];
    return `(SELECT coalesce(l.canonical_id, p.distinct_id) AS cid, p.prop_keys AS profile_keys, p.prop_values AS profile_values
      FROM (SELECT distinct_id, prop_keys, prop_values FROM profiles WHERE ${conds.map((c) => `(${c})`).join(' AND ')} AND deleted = 0) p
      LEFT JOIN (SELECT distinct_id, canonical_id FROM identity_links WHERE project_id = ${sqlInt(projectId)}) l USING (distinct_id))`;
  },
  bucket(unit: Unit, e: string) {
    switch (unit) {
      case 'hour': return `((${e}) // 3600000 * 3600000)`;
      case 'day': return `((${e}) // 86400000 * 86400000)`;
      case 'week': return `(((${e}) // 86400000 - (((${e}) // 86400000 + 3) % 7)) * 86400000)`;
      case 'month': return `epoch_ms(date_trunc('month', epoch_ms((${e})::BIGINT)))`;
    }
  },
  uniq: (e) => `count(DISTINCT ${e})`,
  countIf: (c) => `count(*) FILTER (WHERE ${c})`,
  sumIf: (e, c) => `coalesce(sum(${e}) FILTER (WHERE ${c}), 0)`,
  minIf: (e, c) => `min(${e}) FILTER (WHERE ${c})`,
  groupArraySorted: (value, orderBy) => `list(${value} ORDER BY ${orderBy.join(', ')})`,
  groupArray: (v) => `list(${v})`,
  mapIdx: (arr, i, body) => `list_transform(generate_series(1, len(${arr})), ${i} -> ${body})`,
  filterIdx: (arr, i, cond) => `list_filter(generate_series(1, len(${arr})), ${i} -> ${cond})`,
  map: (arr, x, body) => `list_transform(${arr}, ${x} -> ${body})`,
  filter: (arr, x, cond) => `list_filter(${arr}, ${x} -> ${cond})`,
  minOr0: (arr) => `coalesce(list_min(${arr}), 0)`,
  length: (arr) => `len(${arr})`,
  distinct: (arr) => `list_distinct(${arr})`,
  explode: (arr) => `unnest(${arr})`,
  slice: (arr, o, l) => `(${arr})[${o}:(${o}) + (${l}) - 1]`,
  join: (arr, sep) => `array_to_string(${arr}, ${sep})`,
  intDiv: (a, b) => `((${a}) // (${b}))`,
  toFloat: (e) => `CAST(${e} AS DOUBLE)`,
  maxOr0: (arr) => `coalesce(list_max(${arr}), 0)`,
  sumOr0: (arr) => `coalesce(list_sum(${arr}), 0)`,
  concat: (a, b) => `list_concat(${a}, ${b})`,
  groupArrayIf: (v, c) => `coalesce(list(${v}) FILTER (WHERE ${c}), [])`,
  // min(v, n) keeps the n smallest in a heap: 2-3× faster than sorting every value at 177k ids.
  smallestIf: (v, c, n) => `coalesce(min(${v}, ${n}) FILTER (WHERE ${c}), [])`,
  uniqIf: (e, c) => `count(DISTINCT ${e}) FILTER (WHERE ${c})`,
  // The optimiser builds the hash table on the smaller side (the units).
  unitsJoin: (units, events, key) => `${units} u LEFT JOIN ${events} e USING (${key})`,
  keep: () => '1 = 1',
  sortStrings: (arr) => `list_sort(${arr})`,
  flag: (c) => `CAST(CASE WHEN ${c} THEN 1 ELSE 0 END AS INTEGER)`,
  countZero: () => 'CAST(0 AS BIGINT)',
  int64: (e) => `CAST(${e} AS BIGINT)`,
  // Offsets are BIGINT already.
  int64s: (arr) => arr,
  emptyStrings: () => '[]::VARCHAR[]',
  range0: (n) => `generate_series(0, ${n} - 1)`,
  linkedIds: (projectId, id) => `SELECT distinct_id FROM identity_links WHERE project_id = ${sqlInt(projectId)} AND canonical_id = ${id}`,
  sessions(events, unit, gapMs, fromMs) {
    return sessions(this, events, unit, gapMs, fromMs);
  },
  funnelPaths: (perEvent, steps, windowMs, rangeMs, breakdown) => funnelPaths(perEvent, steps, windowMs, rangeMs, breakdown),
  data,
  flowPaths(spec) {
    return flowPaths(this, spec);
  },
  // One grouping per (identity, segment) whose bucket list gets a -1 appended: the range total costs no second pass.
  uniqueBuckets: (events) => `SELECT b, seg, count(*) AS v FROM (
      SELECT seg, unnest(list_concat(list_distinct(bs), [-1])) AS b FROM (SELECT cid, seg, list(bk) AS bs FROM ${events} ev GROUP BY cid, seg) ub
    ) ue GROUP BY b, seg`,
};
