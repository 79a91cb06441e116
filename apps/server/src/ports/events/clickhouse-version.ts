/**
 * The oldest ClickHouse the adapter is tested on (Debian's 18.16, the suite's server) and the check
 * run before migrating: an older server is refused at start with a message naming both versions,
 * instead of failing later on SQL it does not know. docs/deploy.md "Store versions" lists what
 * the adapter relies on and its status on 18.16 and on the bundled release.
 */
import type { ClickHouseClient } from '@clickhouse/client';

export const OLDEST_CLICKHOUSE = [18, 16] as const;

/** `18.16.1`, `25.8.20.4`, `24.3.5.46-lts`, `v23.8.1.2992`: the leading numbers; undefined when there are none. */
export function parseClickHouseVersion(version: string): number[] | undefined {
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(version.trim());
  if (!m) return undefined;
  return m.slice(1).filter((x) => x !== undefined).map(Number);
}

/** Why a server of `version` is refused, or undefined when it is supported. */
export function clickHouseVersionProblem(version: string): string | undefined {
  const parts = parseClickHouseVersion(version);
  const oldest = OLDEST_CLICKHOUSE.join('.');
  if (!parts) return `ClickHouse answered SELECT version() with ${JSON.stringify(version)}, not a version number; Tally needs ClickHouse ${oldest} or newer`;
  const [major, minor] = parts;
  if (major < OLDEST_CLICKHOUSE[0] || (major === OLDEST_CLICKHOUSE[0] && minor < OLDEST_CLICKHOUSE[1])) {
    return `ClickHouse ${version} is older than ${oldest}, the oldest release Tally is tested on: upgrade the server (docs/deploy.md "Store versions")`;
  }
  return undefined;
}

/** Reads the server's version and throws when it is refused; returns the version. */
export async function checkClickHouseVersion(read: () => Promise<string>): Promise<string> {
  const version = await read();
  const problem = clickHouseVersionProblem(version);
  if (problem) throw new Error(problem);
  return version;
}

/** SELECT version() on `client` (one on the default database: the target may not exist yet), then closes it. */
export async function readClickHouseVersion(client: ClickHouseClient): Promise<string> {
  try {
    const rows = await (await client.query({ query: 'SELECT version() AS v', format: 'JSONEachRow' })).json<{ v: string }>();
    return String(rows[0]?.v ?? '');
  } finally {
    await client.close();
  }
}
