/** The parts of the events table the compaction reads (ClickHouseEventStore's unmergedRanges and mergeQuietPartitions). */
import { sqlString } from './port.js';
import { storedTable, type ClickHouseTarget, type Read } from './clickhouse-mutations.js';

/** Partitions with more than one active part or a level-0 part on some server (`having`: more conditions). */
export async function unmergedPartitionsSql(target: ClickHouseTarget, read: Read, having = ''): Promise<string> {
  return (await systemTables(target, read, 'parts')).map((src) =>
    `SELECT partition FROM ${src} WHERE ${eventParts(target)} GROUP BY partition HAVING (count() > 1 OR min(level) = 0) ${having}`).join(' UNION ALL ');
}

/** The active parts of the table holding the events, in system.parts / system.parts_columns. */
export function eventParts(target: ClickHouseTarget): string {
  return `database = ${sqlString('clickhouse', target.database)} AND table = ${sqlString('clickhouse', storedTable(target, 'events'))} AND active`;
}

/**
 * `system.<name>` of every server holding events: this one, or in cluster mode each host of the
 * cluster, read through remote() (each has its own parts).
 */
export async function systemTables(target: ClickHouseTarget, read: Read, name: 'parts' | 'parts_columns'): Promise<string[]> {
  const cluster = target.cluster;
  if (!cluster) return [`system.${name}`];
  const hosts = await read<{ host: string; port: number }>(
    `SELECT host_address AS host, port FROM system.clusters WHERE cluster = ${sqlString('clickhouse', cluster.name)}`);
  const auth = target.username ? `, ${sqlString('clickhouse', target.username)}, ${sqlString('clickhouse', target.password ?? '')}` : '';
  return hosts.map((h) => `remote(${sqlString('clickhouse', `${h.host.includes(':') ? `[${h.host}]` : h.host}:${Number(h.port)}`)}, system.${name}${auth})`);
}
