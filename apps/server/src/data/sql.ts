import type { EventDialect } from '../ports/events/index.js';
import { sqlInt } from '../ports/events/index.js';
import { SESSION_GAP_MS } from '../identity/sql.js';

/**
 * The engine-specific pieces of the data-browsing queries (data/store.ts), one spelling per
 * engine. Arguments are SQL fragments the store built (subqueries, quoted literals).
 */
export interface DataSql {
  /** After `FROM events`: reads each dedup key once (ClickHouse FINAL; DuckDB dedups at write). */
  final: string;
  /** Property keys with counts and up to 5 sample values; `ev` is '' or ` AND event = ...`. */
  properties(p: string, ev: string): string;
  /** People (persons' events unioned with live profiles): person, first_seen, last_seen, event_count, properties. */
  persons(events: string, profiles: string, only: string): string;
  /** WHERE clause finding `s` (a quoted literal) in the person or their properties, case-insensitively. */
  userSearch(s: string): string;
  /** ORDER BY of the users list (people without events last). */
  usersOrder: string;
  /** Sessions of one person over `src` (rows of `who`). */
  sessionsOf(src: string, who: string): string;
  /** Sessions starting since `weekAgo` over `recent` (events from a gap before it). */
  recentSessions(recent: string, weekAgo: number): string;
  /** Exact count of distinct values. */
  distinct(x: string): string;
}

const GAP = sqlInt(SESSION_GAP_MS);
/** ClickHouse's "no event" sentinels in the users union (it has no NULL-friendly UNION in 18.16). */
const CH_NO_TIME_MAX = '9007199254740991';

export const DATA_SQL: Record<EventDialect, DataSql> = {
  clickhouse: {
    final: 'FINAL',
    properties: (p, ev) => `SELECT k AS key, count() AS count, arraySlice(groupUniqArray(v), 1, 5) AS sampleValues
         FROM (SELECT prop_keys, prop_values FROM events FINAL WHERE project_id = ${p}${ev})
         ARRAY JOIN prop_keys AS k, prop_values AS v GROUP BY k ORDER BY count DESC, key LIMIT 1000`,
    persons: (events, profiles, only) => `(SELECT person, min(fs) AS first_seen, max(ls) AS last_seen, sum(n) AS event_count, max(props) AS properties FROM (
          SELECT person, toInt64(min(time)) AS fs, toInt64(max(time)) AS ls, toUInt64(count()) AS n, toString('') AS props FROM ${events} ${only} GROUP BY person
          UNION ALL
          SELECT person, toInt64(${CH_NO_TIME_MAX}) AS fs, toInt64(-1) AS ls, toUInt64(0) AS n, toString(properties) AS props FROM ${profiles} ${only}
        ) GROUP BY person)`,
    userSearch: (s) => `WHERE positionCaseInsensitiveUTF8(person, ${s}) > 0 OR positionCaseInsensitiveUTF8(properties, ${s}) > 0`,
    usersOrder: 'last_seen DESC, person',
    sessionsOf: (src, who) => `SELECT arrayCount((t, p) -> t - p >= ${GAP}, ts, arrayPushFront(arrayPopBack(ts), toInt64(-${GAP} - 1))) AS n
         FROM (SELECT person, arraySort(groupArray(time)) AS ts FROM ${src} WHERE ${who} GROUP BY person)`,
    recentSessions: (recent, weekAgo) => `SELECT sum(arrayCount((t, p) -> t >= ${sqlInt(weekAgo)} AND t - p >= ${GAP}, ts, arrayPushFront(arrayPopBack(ts), toInt64(-${GAP} - 1)))) AS n
         FROM (SELECT person, arraySort(groupArray(time)) AS ts FROM ${recent} GROUP BY person)`,
    distinct: (x) => `uniqExact(${x})`,
  },
  duckdb: {
    final: '',
    properties: (p, ev) => `SELECT k AS key, count(*) AS count, list(DISTINCT v)[1:5] AS sampleValues
         FROM (SELECT unnest(prop_keys) AS k, unnest(prop_values) AS v FROM events WHERE project_id = ${p}${ev})
         GROUP BY k ORDER BY count DESC, key LIMIT 1000`,
    persons: (events, profiles, only) => `(SELECT person, min(fs) AS first_seen, max(ls) AS last_seen, sum(n) AS event_count, max(props) AS properties FROM (
        SELECT person, min(time) AS fs, max(time) AS ls, count(*) AS n, CAST(NULL AS VARCHAR) AS props FROM ${events} ${only} GROUP BY person
        UNION ALL
        SELECT person, CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), 0, properties FROM ${profiles} ${only}
      ) GROUP BY person)`,
    userSearch: (s) => `WHERE strpos(lower(person), lower(${s})) > 0 OR strpos(lower(coalesce(properties, '')), lower(${s})) > 0`,
    usersOrder: 'last_seen DESC NULLS LAST, person',
    sessionsOf: (src, who) => `SELECT count(*) AS n FROM (SELECT time - lag(time) OVER (ORDER BY time) AS gap FROM ${src} WHERE ${who})
         WHERE gap IS NULL OR gap >= ${GAP}`,
    recentSessions: (recent, weekAgo) => `SELECT count(*) AS n FROM (SELECT time, time - lag(time) OVER (PARTITION BY person ORDER BY time) AS gap FROM ${recent})
         WHERE time >= ${sqlInt(weekAgo)} AND (gap IS NULL OR gap >= ${GAP})`,
    distinct: (x) => `count(DISTINCT ${x})`,
  },
};
