import { sqlInt } from '../../../ports/events/index.js';
import { SESSION_GAP_MS, type DataSql } from '../dialect.js';

const GAP = sqlInt(SESSION_GAP_MS);

/** Data browsing on DuckDB: deduplicated at write, sessions by window functions. */
export const data: DataSql = {
  resolvedEvents: (p, where, columns) => {
    const cols = columns.join(', ');
    const ecols = columns.map((c) => `e.${c}`).join(', ');
    // person_id unless the distinct_id has an unfolded link (identity/fold.ts), whose rule decides.
    return `(SELECT ${ecols}, CASE WHEN l.canonical_id IS NULL THEN e.person_id WHEN e.time >= l.from_time THEN l.canonical_id ELSE e.distinct_id END AS person
  FROM (SELECT ${cols}, person_id FROM events WHERE project_id = ${p} AND (${where})) e
  LEFT JOIN identity_links l ON l.project_id = ${p} AND l.distinct_id = e.distinct_id AND l.folded = 0)`;
  },
  resolvedProfiles: (p) => `(SELECT person, arg_max(p_json, p_version) AS properties, max(p_version) AS updated_at FROM (
    SELECT coalesce(l.canonical_id, pr.distinct_id) AS person, pr.properties AS p_json, pr.updated_at AS p_version
    FROM profiles pr LEFT JOIN identity_links l ON l.project_id = pr.project_id AND l.distinct_id = pr.distinct_id
    WHERE pr.project_id = ${p} AND pr.deleted = 0)
  GROUP BY person)`,
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
};
