import os from 'node:os';
import { DEFAULT_QUERY_LIMITS, type QueryLimits } from './port.js';

/**
 * Instance settings. `threads`: DuckDB counts the machine's cores and ignores the process's CPU
 * affinity / cpuset, so a service pinned to one core ran two DuckDB threads fighting Node for it;
 * `os.availableParallelism()` honours the affinity mask, and one core of it is left to Node's
 * event loop (a heavy analysis on every core held `/health` past a second). `memory_limit`: the
 * query memory cap (QUERY_MAX_MEMORY_MB; DuckDB's own default is 80 % of RAM).
 *
 * Rows appended since the last checkpoint live uncompressed in memory (about 1 KB per ingested
 * event), so `checkpoint_threshold` (WAL size) bounds that memory: 32 MB. What made small
 * thresholds slow was vacuuming, not checkpointing: each checkpoint merged the small row groups the
 * previous ones had written, reading the table's last row groups back uncompressed (up to 260 MB
 * and 0.5–1.8 s a checkpoint under bench:ingest, growing with the table). `max_vacuum_tasks = 0`
 * turns that off; a delete runs a vacuuming checkpoint of its own (vacuumAfterDelete). Row groups
 * are then as large as the rows between two checkpoints (25,000 events of 13 properties), which
 * cost a 5M-row scan 9 % (measured; docs/performance.md). Threads, checkpoint threshold and memory
 * limit can be overridden: DUCKDB_THREADS, DUCKDB_CHECKPOINT_THRESHOLD, DUCKDB_MEMORY_LIMIT.
 */
export function duckDbSettings(limits: QueryLimits = DEFAULT_QUERY_LIMITS): Record<string, string> {
  const cores = os.availableParallelism();
  return {
    threads: process.env.DUCKDB_THREADS || String(Math.max(1, cores - 1)),
    checkpoint_threshold: process.env.DUCKDB_CHECKPOINT_THRESHOLD || '32MB',
    memory_limit: process.env.DUCKDB_MEMORY_LIMIT || `${Math.max(1, Math.floor(limits.maxMemoryBytes / 1024 / 1024))}MB`,
    max_vacuum_tasks: '0',
  };
}
