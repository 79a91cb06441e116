import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createClient } from '@clickhouse/client';
import { migrateMetadataStore, openMetadataStore } from '../../apps/server/src/ports/metadata/knex.js';

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

/** An embedded backend whose DuckDB file is `events.duckdb` in `dir`, so a test can open it again after the service. */
export const embeddedIn = (dir: string): Backend => ({
  name: 'embedded',
  provision: async () => ({ env: {}, overrides: { sqliteFile: ':memory:', duckdbFile: path.join(dir, 'events.duckdb') }, drop: async () => {} }),
});

const MIGRATIONS_DIR = fileURLToPath(new URL('../../apps/server/src/ports/metadata/migrations/', import.meta.url));
/** Key of the PostgreSQL advisory lock held while a template is made (any constant of the suite's own). */
const TEMPLATE_LOCK = 0x7461_7470; // 'tatp'
const templates = new Map<string, Promise<string>>();

/**
 * The migrated PostgreSQL database the test databases are cloned from, made on first use (once per
 * server: later processes find it). Its name carries a hash of the migration files, so a changed
 * or added migration makes a new one. Processes racing to make it queue on an advisory lock; it is
 * marked IS_TEMPLATE only once migrated, so one left half-made by a killed process is made again.
 * Old templates stay until dropped by hand (`ALTER DATABASE x IS_TEMPLATE false; DROP DATABASE x`).
 */
export function postgresTemplate(databaseUrl: string): Promise<string> {
  let made = templates.get(databaseUrl);
  if (!made) {
    made = makeTemplate(databaseUrl);
    made.catch(() => templates.delete(databaseUrl));
    templates.set(databaseUrl, made);
  }
  return made;
}

async function makeTemplate(databaseUrl: string): Promise<string> {
  const hash = createHash('sha256');
  for (const file of fs.readdirSync(MIGRATIONS_DIR).sort()) hash.update(`${file}\0`).update(fs.readFileSync(MIGRATIONS_DIR + file)).update('\0');
  const name = `tally_tpl_${hash.digest('hex').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  try {
    // A session lock: released when this connection ends, whatever happens.
    await admin.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
    const found = await admin.query('SELECT datistemplate FROM pg_database WHERE datname = $1', [name]);
    if (found.rows[0]?.datistemplate) return name;
    if (found.rows.length > 0) await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
    const db = openMetadataStore({ databaseUrl: withDatabase(databaseUrl, name), dataDir: '/tmp/analytics-test' });
    try {
      await migrateMetadataStore(db);
    } finally {
      await db.destroy();
    }
    await admin.query(`ALTER DATABASE ${name} WITH IS_TEMPLATE true`);
    return name;
  } finally {
    await admin.end();
  }
}

function withDatabase(databaseUrl: string, name: string): string {
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A fresh PostgreSQL database (a clone of the migrated template: the service's migrator then finds
 * nothing to do) and a fresh ClickHouse database (its tables made at boot) per service, dropped
 * afterwards.
 */
function production(databaseUrl: string, clickhouseUrl: string): Backend {
  return {
    name: 'production',
    async provision() {
      const name = `t_${suffix()}`;
      const template = await postgresTemplate(databaseUrl);
      const admin = new pg.Client({ connectionString: databaseUrl });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
      } finally {
        await admin.end();
      }
      return {
        env: { DATABASE_URL: withDatabase(databaseUrl, name), CLICKHOUSE_URL: clickhouseUrl, CLICKHOUSE_DATABASE: name },
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
