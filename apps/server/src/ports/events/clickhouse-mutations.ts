/** ClickHouse mutations of the event store: their SQL (cluster mode: the shards' local tables), waiting for them, the fold's chunks. */
import { SHARDED_TABLES, quoteIdent, type ClickHouseCluster } from './schema.js';
import { sqlInt, sqlString } from './port.js';

/** Where the store's tables live: its database and, in cluster mode, the cluster (and the credentials remote() needs). */
export interface ClickHouseTarget {
  database: string;
  cluster?: ClickHouseCluster;
  username?: string;
  password?: string;
  /** How long a write, merge or mutation may take (default: the request 120 s, the mutations' wait 10 min). */
  writeTimeoutMs?: number;
}
/** A read under the store's bounds (ClickHouseEventStore.query). */
export type Read = <T>(sql: string) => Promise<T[]>;

/** Longest wait for a person's delete mutations (they rewrite every part holding the person). */
const MUTATION_TIMEOUT_MS = 10 * 60_000;
/** Largest fold mutation's text: the links travel as literal arrays (18.16 has no joinGet). */
export const FOLD_SQL_BYTES = 4 * 1024 * 1024;

/** Until system.mutations shows none of this database's mutations on `tables` unfinished (18.16 has `is_done`). */
export async function waitForMutations(target: ClickHouseTarget, read: Read, tables: readonly string[]): Promise<void> {
  const deadline = Date.now() + (target.writeTimeoutMs ?? MUTATION_TIMEOUT_MS);
  const mutations = target.cluster ? `cluster(${sqlString('clickhouse', target.cluster.name)}, system.mutations)` : 'system.mutations';
  for (;;) {
    const rows = await read<{ n: number }>(
      `SELECT count() AS n FROM ${mutations} WHERE database = ${sqlString('clickhouse', target.database)} AND table IN (${tables.map((t) => `'${storedTable(target, t)}'`).join(', ')}) AND is_done = 0`,
    );
    if (Number(rows[0]?.n ?? 0) === 0) return;
    if (Date.now() > deadline) throw new Error(`ClickHouse mutations on ${tables.join(', ')} did not finish in time`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The table holding the rows: in cluster mode the shards' local table (a Distributed table has no mutations). */
export function storedTable(target: ClickHouseTarget, table: string): string {
  return target.cluster && (SHARDED_TABLES as readonly string[]).includes(table) ? `${table}_local` : table;
}

/** `ALTER TABLE … DELETE WHERE …` (see mutationSql). */
export function deleteSql(target: ClickHouseTarget, table: string, condition: string): string {
  return mutationSql(target, table, 'DELETE', condition);
}

/** `ALTER TABLE … <action> WHERE …`; cluster mode: ON CLUSTER on every shard's local table. */
export function mutationSql(target: ClickHouseTarget, table: string, action: string, condition: string): string {
  if (!target.cluster) return `ALTER TABLE ${table} ${action} WHERE ${condition}`;
  return `ALTER TABLE ${quoteIdent(target.database)}.${storedTable(target, table)} ON CLUSTER ${quoteIdent(target.cluster.name)} ${action} WHERE ${condition}`;
}

/** Unfolded links per project, in chunks whose literal arrays stay under FOLD_SQL_BYTES. */
export interface FoldChunk { projectId: number; ids: string[]; canonicals: string[]; froms: string[] }
export function foldChunks(links: Array<{ project_id: number; distinct_id: string; canonical_id: string; from_time: number }>): FoldChunk[] {
  const out: FoldChunk[] = [];
  let size = 0;
  for (const l of links) {
    let c = out[out.length - 1];
    const id = sqlString('clickhouse', l.distinct_id);
    const canonical = sqlString('clickhouse', l.canonical_id);
    if (!c || c.projectId !== Number(l.project_id) || size > FOLD_SQL_BYTES) {
      out.push((c = { projectId: Number(l.project_id), ids: [], canonicals: [], froms: [] }));
      size = 0;
    }
    c.ids.push(id);
    c.canonicals.push(canonical);
    c.froms.push(sqlInt(Number(l.from_time)));
    size += 4 * id.length + canonical.length + 24;
  }
  return out;
}
