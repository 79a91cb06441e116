import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import Koa from 'koa';
import Router from '@koa/router';
import type { Config } from './config.js';
import type { Deps } from './deps.js';
import { errorHandler } from './http/errors.js';
import { answerClientError } from './http/client-error.js';
import { readBody } from './http/body.js';
import { envelopeByPath, mountRoutes, openApiDocument, type RouteSpec } from './http/route.js';
import { edgeMiddleware } from './http/cors.js';
import { createLogger } from './http/logger.js';
import { isPostgres, openMetadataStore, migrateMetadataStore, type Db } from './ports/metadata/knex.js';
import { retryStartup } from './ports/startup.js';
import { openEventStore } from './ports/events/index.js';
import { MemoryBuffer } from './ports/buffer/memory.js';
import type { IngestionBuffer } from './ports/buffer/port.js';
import { JetStreamBuffer } from './ports/buffer/jetstream.js';
import { instrumentBuffer } from './metrics/instrument.js';
import { Authenticator } from './auth/authenticate.js';
import { IdTokenVerifier } from './auth/oidc.js';
import { ProjectCredentials } from './auth/credentials.js';
import { TenantConfigWatcher } from './tenants/watcher.js';
import { OrgStore } from './orgs/store.js';
import { MachineTokenStore } from './orgs/tokens.js';
import { ProjectStore } from './projects/store.js';
import { UsageStore } from './usage/store.js';
import { AuditStore } from './audit/store.js';
import { MemoryCounter, RateLimits } from './http/rate-limit.js';
import { SharedCounter, staleAfterMs } from './http/rate-limit-shared.js';
import { allRoutes } from './routes.js';
import { createServices, type Services } from './services.js';
import { consoleMiddleware } from './console/static.js';
import { LinkIndex } from './identity/link-index.js';
import { startWorkerRole, type BackgroundLoop } from './background/worker-role.js';
import { startMetricsServer } from './metrics/server.js';
import { instrumentHttpServer } from './metrics/http.js';
import { DataVersions, withDataVersions } from './results-cache/index.js';

const require = createRequire(import.meta.url);
export const VERSION: string = require('../package.json').version;

/** Test and embedding overrides: where the embedded stores live, a ready buffer. */
export interface DepsOverrides {
  sqliteFile?: string;
  duckdbFile?: string;
  buffer?: IngestionBuffer;
}

/** Opens the three ports (migrating both stores) and the shared stores. */
export async function buildDeps(config: Config, overrides: DepsOverrides = {}): Promise<Deps> {
  if (!config.superadminKey) throw new Error('superadminKey must be resolved before building the service');
  const log = createLogger(config.logLevel);
  const db = openMetadataStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, sqliteFile: overrides.sqliteFile });
  // Processes may start together and before the servers are ready: each step waits and retries.
  const startup = { timeoutMs: config.startupTimeoutMs, log };
  await retryStartup('metadata store migration', () => migrateMetadataStore(db), startup);
  // Writes that may change an analysis' answer invalidate the cached answers (results-cache/).
  const events = withDataVersions(openEventStore({
    clickhouse: config.clickhouse, dataDir: config.dataDir, duckdbFile: overrides.duckdbFile,
    limits: { timeoutMs: config.queryGuard.timeoutMs, maxMemoryBytes: config.queryGuard.maxMemoryBytes },
    materialized: config.materializedProperties,
  }), new DataVersions(db));
  await retryStartup('event store migration', () => events.migrate(), startup);
  const buffer = instrumentBuffer(overrides.buffer ?? (await openBuffer(config)));
  const orgs = new OrgStore(db);
  const verifier = config.oidc ? new IdTokenVerifier(config.oidc) : undefined;
  const projects = new ProjectStore(db);
  const credentials = new ProjectCredentials(projects);
  const tenants = config.tenantConfigPath ? await new TenantConfigWatcher(config.tenantConfigPath, log, config.tenantConfigPollMs).start() : undefined;
  credentials.use(tenants);
  // A listed organisation's quota comes from the tenant config's memory, not a read per request.
  const usage = new UsageStore(db);
  usage.useQuotas(tenants && ((orgId) => tenants.quotaOf(orgId)));
  return {
    config, version: VERSION, log, db, events, buffer, orgs, projects, tenants,
    usage,
    audit: new AuditStore(db),
    links: new LinkIndex(db),
    rateLimits: new RateLimits(config.rateLimits, rateCounter(config, db)),
    auth: new Authenticator(config.superadminKey, verifier, orgs, credentials, new MachineTokenStore(db), config.operatorKey),
  };
}

/**
 * On PostgreSQL the request counts are shared by every API process (replicas behind one load
 * balancer refuse at the same total); on SQLite, one process, they stay in memory.
 */
function rateCounter(config: Config, db: Db) {
  if (!isPostgres(db)) return new MemoryCounter();
  const r = config.rateLimits;
  return new SharedCounter(db, staleAfterMs([r.perIp, r.perProject], [r.query, r.flagsLocal]));
}

async function openBuffer(config: Config): Promise<IngestionBuffer> {
  if (config.natsUrl) return JetStreamBuffer.open(config.natsUrl, config.nats, { log: createLogger(config.logLevel), startupTimeoutMs: config.startupTimeoutMs });
  return new MemoryBuffer();
}

export function buildKoa(deps: Deps, routes: RouteSpec[] = allRoutes(deps)): Koa {
  const app = new Koa({ proxy: false });
  const router = new Router();
  const exactRoutes = mountRoutes(router, routes, (ctx, kind, r) => deps.auth.authenticate(ctx, kind, r));
  const openapi = openApiDocument(routes, deps.version);
  router.get('/openapi.json', (ctx) => { ctx.body = openapi; });
  app.use(errorHandler(deps.log, envelopeByPath(routes)));
  app.use(edgeMiddleware(routes, deps.config.corsOrigins));
  app.use(readBody());
  app.use(exactRoutes);
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: true }));
  app.use(consoleMiddleware(deps.config));
  return app;
}

export interface RunningService {
  url: string;
  server: http.Server;
  deps: Deps;
  /** Built once for this process (services.ts): the routes' services, the query executor among them. */
  services: Services;
  workers: BackgroundLoop[];
  close(): Promise<void>;
}

/** Starts the API (and, with `roles` including `worker`, the ingestion workers) on the given deps. */
export async function startService(
  deps: Deps,
  opts: { port?: number; host?: string; roles?: Array<'api' | 'worker'> } = {},
): Promise<RunningService> {
  const roles = opts.roles ?? ['api', 'worker'];
  // The api role alone still serves METRICS_PORT (when set): its metrics leave the API port.
  const services = createServices(deps);
  const workers = roles.includes('worker') ? await startWorkerRole(deps, services) : await startMetricsServer(deps);
  let server: http.Server | undefined;
  if (roles.includes('api')) {
    server = http.createServer(buildKoa(deps, allRoutes(deps, services)).callback());
    instrumentHttpServer(server);
    server.keepAliveTimeout = 65_000;
    server.on('clientError', answerClientError);
    await new Promise<void>((resolve) => server!.listen(opts.port ?? deps.config.port, opts.host ?? deps.config.host, resolve));
  }
  const addr = server?.address() as AddressInfo | undefined;
  const host = !addr ? '' : addr.address === '0.0.0.0' || addr.address === '::' ? '127.0.0.1' : addr.address;
  return {
    url: addr ? `http://${host}:${addr.port}` : '',
    server: server!,
    deps,
    services,
    workers,
    async close() {
      if (server) {
        server.closeAllConnections?.();
        await new Promise<void>((resolve) => server!.close(() => resolve()));
      }
      deps.tenants?.stop();
      for (const w of workers) await w.stop();
      await deps.buffer.close();
      await deps.events.close();
      deps.links.stop();
      await deps.db.destroy();
    },
  };
}
