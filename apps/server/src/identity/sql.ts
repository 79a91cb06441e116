import type { EventDialect } from '../ports/events/index.js';
import { sqlInt } from '../ports/events/index.js';

/**
 * SQL building blocks that apply identity links when reading (both engines, ClickHouse 18.16
 * included). An event's identity is the link's `canonical_id` when a link exists for its
 * distinct_id and `time >= from_time`, else its own distinct_id. Events are deduplicated here
 * (ClickHouse `FINAL`; DuckDB dedups at write). One spelling per engine, chosen by table.
 */

interface IdentitySql {
  resolvedEvents(p: string, where: string, columns: string[]): string;
  resolvedProfiles(p: string): string;
}

const SQL: Record<EventDialect, IdentitySql> = {
  clickhouse: {
    resolvedEvents: (p, where, columns) => {
      const cols = columns.join(', ');
      return `(SELECT ${cols}, if(l_canonical != '' AND time >= l_from, l_canonical, distinct_id) AS person
      FROM (SELECT ${cols} FROM events FINAL WHERE project_id = ${p} AND (${where}))
      ANY LEFT JOIN (SELECT distinct_id, canonical_id AS l_canonical, from_time AS l_from FROM identity_links FINAL WHERE project_id = ${p})
      USING (distinct_id))`;
    },
    resolvedProfiles: (p) => `(SELECT person, argMax(p_json, p_version) AS properties, max(p_version) AS updated_at FROM (
        SELECT if(l_canonical != '', l_canonical, distinct_id) AS person, properties AS p_json, updated_at AS p_version FROM
          (SELECT distinct_id, properties, updated_at, deleted FROM profiles FINAL WHERE project_id = ${p})
          ANY LEFT JOIN (SELECT distinct_id, canonical_id AS l_canonical FROM identity_links FINAL WHERE project_id = ${p}) USING (distinct_id)
        WHERE deleted = 0)
      GROUP BY person)`,
  },
  duckdb: {
    resolvedEvents: (p, where, columns) => {
      const cols = columns.join(', ');
      const ecols = columns.map((c) => `e.${c}`).join(', ');
      return `(SELECT ${ecols}, CASE WHEN l.canonical_id IS NOT NULL AND e.time >= l.from_time THEN l.canonical_id ELSE e.distinct_id END AS person
    FROM (SELECT ${cols} FROM events WHERE project_id = ${p} AND (${where})) e
    LEFT JOIN identity_links l ON l.project_id = ${p} AND l.distinct_id = e.distinct_id)`;
    },
    resolvedProfiles: (p) => `(SELECT person, arg_max(p_json, p_version) AS properties, max(p_version) AS updated_at FROM (
      SELECT coalesce(l.canonical_id, pr.distinct_id) AS person, pr.properties AS p_json, pr.updated_at AS p_version
      FROM profiles pr LEFT JOIN identity_links l ON l.project_id = pr.project_id AND l.distinct_id = pr.distinct_id
      WHERE pr.project_id = ${p} AND pr.deleted = 0)
    GROUP BY person)`,
  },
};

/**
 * A subquery (parenthesised, usable after FROM) of the project's deduplicated events with every
 * `events` column plus `person` (the identity-resolved id). `where` filters raw events (columns
 * of `events`, unqualified) before the join.
 */
export function resolvedEvents(dialect: EventDialect, projectId: number, where = '1 = 1', columns = EVENT_COLUMNS): string {
  return SQL[dialect].resolvedEvents(sqlInt(projectId), where, columns);
}

export const EVENT_COLUMNS = ['id', 'event', 'distinct_id', 'time', 'insert_id', 'properties', 'prop_keys', 'prop_values', 'received_at'];

/**
 * A subquery of the project's current profiles, resolved to their cluster (ignoring from_time):
 * `person`, `properties`, `updated_at`, one row per person (the latest version wins), deleted
 * profiles excluded.
 */
export function resolvedProfiles(dialect: EventDialect, projectId: number): string {
  return SQL[dialect].resolvedProfiles(sqlInt(projectId));
}

/** Gap that ends a session (product.md: 30 minutes without events). */
export const SESSION_GAP_MS = 30 * 60_000;
