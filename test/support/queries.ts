import type { Knex } from 'knex';

export interface Statement { sql: string; bindings: unknown[] }

/** Metadata statements sent while `fn` runs (knex's query event: every statement sent to PostgreSQL/SQLite). */
export async function statementsDuring(db: Knex, fn: () => Promise<unknown>): Promise<Statement[]> {
  const seen: Statement[] = [];
  const listener = (q: { sql: string; bindings?: unknown[] }) => seen.push({ sql: q.sql, bindings: q.bindings ?? [] });
  db.on('query', listener);
  try {
    await fn();
  } finally {
    db.removeListener('query', listener);
  }
  return seen;
}
