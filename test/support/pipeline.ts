import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** Helpers of the pipeline tests that run the service's roles as processes (reliability, cluster). */

/** A fresh PostgreSQL database on TEST_DATABASE_URL's server: its URL, and how to drop it. */
export async function freshPgDatabase(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const serverUrl = process.env.TEST_DATABASE_URL!;
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const run = async (sql: string) => {
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    try { await admin.query(sql); } finally { await admin.end(); }
  };
  await run(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined) };
}

/** The sum of a Prometheus metric's samples on `<url>/metrics`. */
export async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(name)) sum += Number(line.split(' ').pop());
  return sum;
}

/** POSTs an admin route with the superadmin key; asserts 201 and returns the body. */
export async function adminCreate<T>(apiUrl: string, key: string, path: string, body: unknown): Promise<T> {
  const res = await fetch(`${apiUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 201, await res.clone().text());
  return (await res.json()) as T;
}
