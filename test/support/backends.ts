import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createClient } from '@clickhouse/client';

/**
 * The backends the suite runs on. `embedded` (SQLite + DuckDB) always; `production`
 * (PostgreSQL + ClickHouse) when TEST_DATABASE_URL and TEST_CLICKHOUSE_URL are set. With
 * REQUIRE_ALL_BACKENDS=1 (CI) a production backend that is not configured fails the run
 * instead of being skipped.
 */
export interface Backend {
  name: 'embedded' | 'production';
  /** Makes fresh, isolated stores and returns the env that points the service at them. */
  provision(): Promise<{ env: Record<string, string>; overrides: { sqliteFile?: string; duckdbFile?: string }; drop(): Promise<void> }>;
}

const suffix = () => randomBytes(5).toString('hex');

const embedded: Backend = {
  name: 'embedded',
  async provision() {
    return { env: {}, overrides: { sqliteFile: ':memory:', duckdbFile: ':memory:' }, drop: async () => {} };
  },
};

/** A fresh PostgreSQL database and ClickHouse database per service, dropped afterwards. */
function production(databaseUrl: string, clickhouseUrl: string): Backend {
  return {
    name: 'production',
    async provision() {
      const name = `t_${suffix()}`;
      const admin = new pg.Client({ connectionString: databaseUrl });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      const url = new URL(databaseUrl);
      url.pathname = `/${name}`;
      return {
        env: { DATABASE_URL: url.toString(), CLICKHOUSE_URL: clickhouseUrl, CLICKHOUSE_DATABASE: name },
        overrides: {},
        async drop() {
          const c = new pg.Client({ connectionString: databaseUrl });
          await c.connect();
          await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
          await c.end();
          const ch = createClient({ url: clickhouseUrl });
          await ch.command({ query: `DROP DATABASE IF EXISTS ${name}` }).catch(() => undefined);
          await ch.close();
        },
      };
    },
  };
}

export function configuredBackends(): Backend[] {
  const list: Backend[] = [embedded];
  const { TEST_DATABASE_URL, TEST_CLICKHOUSE_URL, REQUIRE_ALL_BACKENDS } = process.env;
  if (TEST_DATABASE_URL && TEST_CLICKHOUSE_URL) list.push(production(TEST_DATABASE_URL, TEST_CLICKHOUSE_URL));
  else if (REQUIRE_ALL_BACKENDS === '1') {
    throw new Error('REQUIRE_ALL_BACKENDS=1 but TEST_DATABASE_URL / TEST_CLICKHOUSE_URL are not set: run `eval "$(bash scripts/services.sh --env)"`');
  }
  return list;
}

/**
 * For suites that need the production services themselves (NATS, PostgreSQL, ClickHouse
 * processes): skips with the reason when `vars` are unset, unless REQUIRE_ALL_BACKENDS=1 (CI),
 * where it fails. Call from a `before` hook: `requireServices(this, 'TEST_NATS_URL')`.
 */
export function requireServices(ctx: Mocha.Context, ...vars: string[]): void {
  const missing = vars.filter((v) => !process.env[v]);
  if (missing.length === 0) return;
  const why = `${missing.join(', ')} not set: run eval "$(bash scripts/services.sh --env)"`;
  if (process.env.REQUIRE_ALL_BACKENDS === '1') throw new Error(`REQUIRE_ALL_BACKENDS=1 but ${why}`);
  console.log(`    (skipped: ${why})`);
  ctx.skip();
}

/** `describe` once per configured backend: `forEachBackend('projects', (b) => { ... })`. */
export function forEachBackend(title: string, body: (backend: Backend) => void) {
  for (const backend of configuredBackends()) {
    describe(`${title} [${backend.name}]`, function () {
      body(backend);
    });
  }
}
