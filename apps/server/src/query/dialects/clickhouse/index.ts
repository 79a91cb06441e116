import { sqlInt, sqlString } from '../../../ports/events/index.js';
import { NO_MATERIALIZED, PERSON_KEY_SQL } from '../../../ports/events/schema.js';
import { materializedColumn, type Dedup, type Dialect, type Unit } from '../dialect.js';
import { sessions } from './sessions.js';
import { funnelPaths } from './funnel.js';
import { flowNames, flowPaths } from './flows.js';
import { data } from './data.js';

/**
 * The links not yet folded into the events' person_id (identity/fold.ts): the only ones a read
 * joins. A row whose distinct_id has none answers with its person_id (or its distinct_id when
 * written without one); an unfolded link is the whole truth for its distinct_id.
 */
const unfoldedLinks = (projectId: number) =>
  `(SELECT distinct_id, canonical_id, from_time FROM identity_links FINAL WHERE project_id = ${sqlInt(projectId)} AND folded = 0)`;

/**
 * `SELECT … FROM events WHERE …`, deduplicated as `dedup` asks. FINAL merges copies of a dedup key
 * on every read (5-6× a plain scan of merged data on 18.16): with ranges, only the rows inside
 * them (the months not merged yet, EventStore.unmergedRanges) are read FINAL, the rest as stored.
 */
function eventsScan(columns: string[], exprs: Array<[string, string]>, conds: string[], dedup: Dedup): string {
  const where = conds.map((c) => `(${c})`).join(' AND ');
  const items = (wrap: (e: string) => string) => [...columns, ...exprs.map(([a, e]) => `${wrap(e)} AS ${a}`)].join(', ');
  if (dedup === true) return `SELECT ${items((e) => e)} FROM events FINAL WHERE ${where}`;
  if (dedup === false || dedup.length === 0) return `SELECT ${items((e) => e)} FROM events WHERE ${where}`;
  const unmerged = dedup.map(([a, b]) => `(time >= ${sqlInt(a)} AND time < ${sqlInt(b)})`).join(' OR ');
  // Computed columns are materialize()d: over a Distributed table (cluster mode) 18.16 refuses a
  // UNION ALL whose column is constant in one stream and not in another ("Cannot convert column
  // … non constant in source stream but must be constant in result"), e.g. `0 AS bh`.
  const select = items((e) => `materialize(${e})`);
  return `SELECT ${select} FROM events WHERE ${where} AND NOT (${unmerged})
    UNION ALL SELECT ${select} FROM events FINAL WHERE ${where} AND (${unmerged})`;
}

/** ClickHouse spelling (kept inside what 18.16 supports: arrays, lambdas, ANY LEFT JOIN, FINAL). */
export const clickhouse: Dialect = {
  name: 'clickhouse',
  materialized: NO_MATERIALIZED,
  str: (v) => sqlString('clickhouse', v),
  // A materialised column is NULL without the key: '' as the lists answer then.
  propValue(key, keys = 'prop_keys', values = 'prop_values') {
    const column = materializedColumn(this, key, keys);
    return column ? `ifNull(${column}, '')` : `${values}[indexOf(${keys}, ${sqlString('clickhouse', key)})]`;
  },
  propHas(key, keys = 'prop_keys') {
    const column = materializedColumn(this, key, keys);
    return column ? `isNotNull(${column})` : `has(${keys}, ${sqlString('clickhouse', key)})`;
  },
  propValueOr(key, missing) {
    return `if(${this.propHas(key)}, ${this.propValue(key)}, ${missing})`;
  },
  propIsNumber(key) {
    return `(${this.propHas(key)} AND match(${this.propValue(key)}, '^-?[0-9]+([.][0-9]+)?$'))`;
  },
  propNumber(key) {
    return `toFloat64OrZero(${this.propValue(key)})`;
  },
  contains: (h, n) => `(position(${h}, ${n}) > 0)`,
  canonicalEvents({ projectId, where, props, identity = true, overrides = true, key = false, dedup = true, cols: extra = [], exprs = [] }) {
    const pass = [...(props ? ['prop_keys', 'prop_values', ...this.materialized.values()] : []), ...extra.filter((c) => c !== 'distinct_id'), ...exprs.map(([a]) => a)];
    const cols = ['event', 'time', 'distinct_id', ...pass.slice(0, pass.length - exprs.length)];
    const conds = [`project_id = ${sqlInt(projectId)}`, ...where];
    const scan = (columns: string[]) => eventsScan(columns, exprs, conds, dedup);
    const tail = [...pass, ...(extra.includes('distinct_id') ? ['distinct_id'] : [])].map((c) => `, ${c}`).join('');
    if (!identity) return `(SELECT event, time, distinct_id AS cid${tail} FROM (${scan(cols)}))`;
    const person = key ? 'person_key' : 'person_id';
    // No override: person_id alone answers (distinct_id is not read unless asked for).
    if (!overrides) return `(SELECT event, time, ${person} AS cid${tail} FROM (${scan([...cols.filter((c) => c !== 'distinct_id' || extra.includes(c)), person])}))`;
    const linked = 'if(time >= from_time, canonical_id, distinct_id)';
    return `(SELECT event, time, if(canonical_id != '', ${key ? PERSON_KEY_SQL.clickhouse(linked) : linked}, ${person}) AS cid${tail}
      FROM (${scan([...cols, person])})
      ANY LEFT JOIN ${unfoldedLinks(projectId)} USING (distinct_id))`;
  },
  canonicalIds(projectId, where, overrides = true) {
    const conds = [`project_id = ${sqlInt(projectId)}`, ...where].map((c) => `(${c})`).join(' AND ');
    if (!overrides) return `(SELECT DISTINCT person_id AS cid FROM events WHERE ${conds})`;
    return `(SELECT arrayJoin(if(canonical_id != '', arrayConcat(if(mx >= from_time, [canonical_id], emptyArrayString()), if(mn < from_time, [distinct_id], emptyArrayString())),
        [person_id])) AS cid
      FROM (SELECT distinct_id, person_id, min(time) AS mn, max(time) AS mx FROM events WHERE ${conds} GROUP BY distinct_id, person_id)
      ANY LEFT JOIN ${unfoldedLinks(projectId)} USING (distinct_id))`;
  },
  canonicalProfiles(projectId, where = []) {
    const conds = [`project_id = ${sqlInt(projectId)}`, ...where];
    return `(SELECT if(canonical_id != '', canonical_id, distinct_id) AS cid, prop_keys AS profile_keys, prop_values AS profile_values
      FROM (SELECT distinct_id, prop_keys, prop_values FROM profiles FINAL WHERE ${conds.map((c) => `(${c})`).join(' AND ')} AND deleted = 0)
      ANY LEFT JOIN (SELECT distinct_id, canonical_id FROM identity_links FINAL WHERE project_id = ${sqlInt(projectId)}) USING (distinct_id))`;
  },
  bucket(unit: Unit, e: string) {
    switch (unit) {
      case 'hour': return `(intDiv(${e}, 3600000) * 3600000)`;
      case 'day': return `(intDiv(${e}, 86400000) * 86400000)`;
      // 1970-01-01 was a Thursday: day number + 3 counts days since a Monday.
      case 'week': return `((intDiv(${e}, 86400000) - ((intDiv(${e}, 86400000) + 3) % 7)) * 86400000)`;
      case 'month': return `(toInt64(toUInt16(toStartOfMonth(toDateTime(intDiv(${e}, 1000), 'UTC')))) * 86400000)`;
    }
  },
  uniq: (e) => `uniqExact(${e})`,
  countIf: (c) => `countIf(${c})`,
  sumIf: (e, c) => `sumIf(${e}, ${c})`,
  minIf: (e, c) => `minIf(${e}, ${c})`,
  groupArraySorted(value, orderBy) {
    const ks = orderBy.map((_, i) => `k${i}`);
    return `arraySort((v, ${ks.join(', ')}) -> (${ks.join(', ')}), groupArray(${value}), ${orderBy.map((o) => `groupArray(${o})`).join(', ')})`;
  },
  groupArray: (v) => `groupArray(${v})`,
  mapIdx: (arr, i, body) => `arrayMap(${i} -> ${body}, arrayEnumerate(${arr}))`,
  filterIdx: (arr, i, cond) => `arrayFilter(${i} -> ${cond}, arrayEnumerate(${arr}))`,
  map: (arr, x, body) => `arrayMap(${x} -> ${body}, ${arr})`,
  filter: (arr, x, cond) => `arrayFilter(${x} -> ${cond}, ${arr})`,
  minOr0: (arr) => `arrayReduce('min', ${arr})`,
  length: (arr) => `length(${arr})`,
  distinct: (arr) => `arrayDistinct(${arr})`,
  explode: (arr) => `arrayJoin(${arr})`,
  slice: (arr, o, l) => `arraySlice(${arr}, ${o}, ${l})`,
  join: (arr, sep) => `arrayStringConcat(${arr}, ${sep})`,
  intDiv: (a, b) => `intDiv(${a}, ${b})`,
  toFloat: (e) => `toFloat64(${e})`,
  maxOr0: (arr) => `arrayReduce('max', ${arr})`,
  sumOr0: (arr) => `arraySum(${arr})`,
  concat: (a, b) => `arrayConcat(${a}, ${b})`,
  groupArrayIf: (v, c) => `groupArrayIf(${v}, ${c})`,
  smallestIf: (v, c, n) => `arraySlice(arraySort(groupArrayIf(${v}, ${c})), 1, ${n})`,
  uniqIf: (e, c) => `uniqExactIf(${e}, ${c})`,
  // The right side is the hash table: the units. Rows of the right without a match come after the
  // matched ones, with the left's columns at their defaults.
  unitsJoin: (units, events, key) => `${events} ALL RIGHT JOIN ${units} USING (${key})`,
  keep: (cols) => `ignore(${cols.join(', ')}) = 0`,
  sortStrings: (arr) => `arraySort(${arr})`,
  // materialize: a flag that folds to a constant (`1 = 0`) in one branch of a UNION ALL and not in
  // another is refused by 18.16 ("non constant in source stream but must be constant in result").
  flag: (c) => `materialize(toUInt8(${c} ? 1 : 0))`,
  countZero: () => 'toUInt64(0)',
  int64: (e) => `toInt64(${e})`,
  int64s: (arr) => `arrayMap(o -> toInt64(o), ${arr})`,
  emptyStrings: () => 'emptyArrayString()',
  range0: (n) => `range(${n})`,
  linkedIds: (projectId, id) => `SELECT distinct_id FROM identity_links FINAL WHERE project_id = ${sqlInt(projectId)} AND canonical_id = ${id}`,
  sessions(events, unit, gapMs) {
    return sessions(this, events, unit, gapMs);
  },
  funnelPaths(perEvent, steps, windowMs) {
    return funnelPaths(this, perEvent, steps, windowMs);
  },
  data,
  flowPaths(spec) {
    return flowPaths(this, spec);
  },
  flowNames,
  // Exact uniq states per (segment, bucket), merged again for the segment's range total: half the
  // time of grouping per (identity, segment) at 10M, same answers.
  uniqueBuckets: (events) => `SELECT b, seg, v FROM (
      SELECT seg, arrayConcat(bks, [toInt64(-1)]) AS bs, arrayConcat(vs, [total]) AS ns FROM (
        SELECT seg, groupArray(toInt64(bk)) AS bks, groupArray(finalizeAggregation(st)) AS vs, uniqExactMerge(st) AS total FROM (
          SELECT seg, bk, uniqExactState(cid) AS st FROM ${events} ev GROUP BY seg, bk
        ) GROUP BY seg)
    ) ARRAY JOIN bs AS b, ns AS v`,
};
