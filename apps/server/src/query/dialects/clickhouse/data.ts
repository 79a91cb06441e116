import { sqlInt } from '../../../ports/events/index.js';
import { SESSION_GAP_MS, type DataSql } from '../dialect.js';

const GAP = sqlInt(SESSION_GAP_MS);
/** ClickHouse's "no event" sentinels in the users union (it has no NULL-friendly UNION in 18.16). */
const CH_NO_TIME_MAX = '9007199254740991';

/** Data browsing on ClickHouse: events read FINAL, links by ANY LEFT JOIN, sessions by array passes. */
export const data: DataSql = {
  resolvedEvents: (p, where, columns) => {
    const cols = columns.join(', ');
    // person_id unless the distinct_id has an unfolded link (identity/fold.ts), whose rule decides.
    return `(SELECT ${cols}, if(l_canonical != '', if(time >= l_from, l_canonical, distinct_id), person_id) AS person
    FROM (SELECT ${cols}, person_id FROM events FINAL WHERE project_id = ${p} AND (${where}))
    ANY LEFT JOIN (SELECT distinct_id, canonical_id AS l_canonical, from_time AS l_from FROM identity_links FINAL WHERE project_id = ${p} AND folded = 0)
    USING (distinct_id))`;
  },
  resolvedProfiles: (p) => `(SELECT person, argMax(p_json, p_version) AS properties, max(p_version) AS updated_at FROM (
      SELECT if(l_canonical != '', l_canonical, distinct_id) AS person, properties AS p_json, updated_at AS p_version FROM
        (SELECT distinct_id, properties, updated_at, deleted FROM profiles FINAL WHERE project_id = ${p})
        ANY LEFT JOIN (SELECT distinct_id, canonical_id AS l_canonical FROM identity_links FINAL WHERE project_id = ${p}) USING (distinct_id)
      WHERE deleted = 0)
    GROUP BY person)`,
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
};
